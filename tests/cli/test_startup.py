"""What ``kraftwire`` imports to start: ``--version`` and ``--help`` load no command's module, and a
command loads its own module, not the other layers' (they took over a second together: the simulator,
the generator with jinja2 and black, the decoders with pyarrow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

pytestmark = pytest.mark.timeout(120)

# Heavy libraries no listing or help needs; each took tens to hundreds of milliseconds to import.
HEAVY = ("jinja2", "black", "pyspark", "pyarrow", "pandas", "numpy", "matplotlib", "jsonschema")
DISPATCHER = {"kraftwire", "kraftwire.__main__", "kraftwire.cli", "kraftwire.cli_input"}


# ``python -m kraftwire ARGV`` that writes, at exit, the names in sys.modules to the file in argv[1].
# (``-X importtime`` would not do: it does not report a module loaded through importlib.import_module.)
RUN_AND_LIST_MODULES = """
import atexit, json, runpy, sys
listing = sys.argv[1]
atexit.register(lambda: open(listing, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["kraftwire", *sys.argv[2:]]
runpy.run_module("kraftwire", run_name="__main__", alter_sys=True)
"""


def imported(*argv: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``python -m kraftwire ARGV``; its result and the names of every module it imported."""
    with tempfile.TemporaryDirectory() as folder:
        listing = os.path.join(folder, "modules.json")
        done = subprocess.run(
            [sys.executable, "-c", RUN_AND_LIST_MODULES, listing, *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        with open(listing) as f:
            return done, set(json.load(f))


def top_level(names: set[str]) -> set[str]:
    return {name.split(".")[0] for name in names}


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["-h"], [], ["no-such-command"]])
def test_listing_imports_no_command_module(argv):
    done, names = imported(*argv)
    assert done.returncode == (0 if argv and argv[0] in ("--version", "--help", "-h") else 2)
    assert "kraftwire.cli" in names  # the measurement itself works
    assert {n for n in names if n.split(".")[0] == "kraftwire"} <= DISPATCHER
    assert not top_level(names) & set(HEAVY)


def test_help_lists_every_command_from_the_table():
    from kraftwire.cli import COMMANDS

    done, _ = imported("--help")
    for name, (_, help_text) in COMMANDS.items():
        assert name in done.stdout and help_text[:40] in " ".join(done.stdout.split())


@pytest.mark.parametrize(
    "command,module,not_loaded",
    [
        (
            "dump-log",
            "kraftwire.node.runtime.cli_dump_log",
            # The codec cache (codegen.package_cache, standard library only) is loaded for
            # --schemas; the generator behind it only when specs are first generated.
            (
                "kraftwire.spark_decoders",
                "kraftwire.codegen.generate",
                "kraftwire.codegen.model",
                "kraftwire.node.simulation",
            ),
        ),
        (
            "codegen",
            "kraftwire.codegen.cli",
            ("kraftwire.node", "kraftwire.spark_decoders", "kraftwire.node.simulation"),
        ),
        ("consume", "kraftwire.node.runtime.cli_client", ("kraftwire.spark_decoders",)),
    ],
)
def test_a_command_loads_its_own_module_only(command, module, not_loaded):
    done, names = imported(command, "--help")
    assert done.returncode == 0, done.stderr[-500:]
    assert module in names
    assert not [n for n in names if n.startswith(not_loaded)]
    assert not top_level(names) & {"pyspark", "jinja2", "matplotlib"}
