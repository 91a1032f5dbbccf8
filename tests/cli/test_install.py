"""What a user gets from ``pip install kraftwire``: a light core (no Spark, Arrow, pandas or
matplotlib; those are extras), core paths that never import them, a one-line pointer to the extra a
command needs, and packages a type checker reads (py.typed) once installed from the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import venv
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("pyspark", "pyarrow", "pandas", "matplotlib")

# Installed on the path of a child interpreter: any import of a heavy package fails, as it would
# where the package is not installed.
BLOCKER = """
import sys

BLOCKED = {blocked!r}


class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [built] = out.glob("kraftwire-*.whl")
    return built


def requirements(wheel: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The wheel's core Requires-Dist names, and each extra's."""
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(name).decode())
    core, extras = [], {}
    for line in metadata.get_all("Requires-Dist"):
        requirement, _, marker = line.partition(";")
        project = requirement.split("==")[0].strip().lower().replace("_", "-")
        if "extra ==" in marker:
            extras.setdefault(marker.split("==")[1].strip().strip("\"'"), []).append(project)
        else:
            core.append(project)
    return core, extras


def test_the_core_install_needs_no_spark_arrow_pandas_or_matplotlib(wheel):
    core, extras = requirements(wheel)
    assert not set(core) & set(HEAVY), core
    assert {"jinja2", "black", "cramjam", "construct", "orjson"} <= set(core)
    assert {"pyspark", "pyarrow", "pandas"} <= set(extras["spark"])
    assert extras["parquet"] == ["pyarrow"] and "report" not in extras  # the page draws its own SVG
    assert extras["metrics"] == ["prometheus-client"] and "mypy" in extras["native"]
    for extra in ("spark", "parquet", "metrics"):  # the tests use every extra
        assert set(extras[extra]) <= set(extras["dev"]), extra


def blocked_env(tmp_path: Path, blocked=HEAVY) -> dict[str, str]:
    site = tmp_path / "blocker"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=set(blocked)))
    return dict(os.environ, PYTHONPATH=str(site))


def run_blocked(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> str:
    """Five KRaft exchanges on one connection, as a pcap file."""
    from kraftwire.spark_decoders.packets.layers import LINK_RAW
    from kraftwire.synthetic_capture import Conversation, pcap_bytes
    from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

    conversation = Conversation(("10.0.0.1", 40001), ("10.0.0.2", 9093))
    ts = 1_700_000_000_000_000_000
    conversation.handshake(ts)
    for exchange in kraft_exchanges(5, seed=2):
        conversation.send(True, exchange.request, ts := ts + 1_000_000)
        conversation.send(False, exchange.response, ts := ts + 500_000)
    path = tmp_path_factory.mktemp("capture") / "kraft.pcap"
    path.write_bytes(pcap_bytes(conversation.packets, LINK_RAW))
    return str(path)


def test_core_paths_import_none_of_the_extras(tmp_path, capture):
    env = blocked_env(tmp_path)
    assert "No module named 'pyspark'" in run_blocked(env, "-c", "import pyspark").stderr
    imports = run_blocked(
        env,
        "-c",
        "import kraftwire.generated, kraftwire.records, kraftwire.node.runtime, kraftwire.cli\n"
        "import kraftwire.node.storage, kraftwire.codegen.generate, kraftwire.spark_decoders.api\n"
        f"assert not {{m.partition('.')[0] for m in __import__('sys').modules}} & {set(HEAVY)!r}",
    )
    assert imports.returncode == 0, imports.stderr
    table = run_blocked(env, "-m", "kraftwire", "decode", capture)
    assert (table.returncode, table.stderr) == (0, "") and table.stdout.endswith("\n5 exchanges\n")
    jsonl = run_blocked(env, "-m", "kraftwire", "decode", capture, "--format", "jsonl")
    assert (jsonl.returncode, jsonl.stderr) == (0, "") and len(jsonl.stdout.splitlines()) == 5


@pytest.mark.parametrize(
    "command, message",
    [
        (
            ["decode", "--spark"],
            "--spark needs pyspark and pyarrow: pip install 'kraftwire[spark]'",
        ),
        (
            ["decode", "--format", "parquet", "--out", "{out}"],
            "--format parquet needs pyarrow: pip install 'kraftwire[parquet]'",
        ),
    ],
)
def test_a_command_without_its_extra_names_the_extra_in_one_line(
    tmp_path, capture, command, message
):
    env = blocked_env(tmp_path)
    args = [arg.format(out=tmp_path / "out") for arg in command]
    result = run_blocked(env, "-m", "kraftwire", args[0], capture, *args[1:])
    assert (result.returncode, result.stderr) == (2, f"kraftwire decode: {message}\n")
    assert not (tmp_path / "out").exists()


USER_CODE = """\
from typing import assert_type

from kraftwire.node.runtime import KRaftNode, NodeConfig, load_config
from kraftwire.records import RecordBatch, decode_batches

batches, tail = decode_batches(b"")
assert_type(batches, list[RecordBatch])
assert_type(tail, bytes)
assert_type(load_config("node.properties"), NodeConfig)


async def embed(node: KRaftNode) -> None:
    assert_type(await node.append([b"value"]), int)
    await node.append(["text"])  # line 14: records are bytes


decode_batches(b"", max_decompressed_bytes="big")  # line 17: not an int
load_config(3)  # line 18: not a path
"""


def test_a_users_mypy_sees_the_types_of_the_installed_wheel(wheel, tmp_path):
    """The wheel installed (no dependencies) into a fresh virtualenv; mypy, run outside the
    repository with that interpreter's site-packages as the only place kraftwire can come from,
    reports exactly the three wrong calls: kraftwire.records and kraftwire.node are typed."""
    pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -e '.[dev]'")
    target = tmp_path / "venv"
    venv.create(target, with_pip=False)
    python = target / "bin" / "python"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    user = tmp_path / "user"
    user.mkdir()
    (user / "app.py").write_text(USER_CODE)
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", str(python), "--no-color-output"]
        + ["--cache-dir", str(tmp_path / "cache"), "app.py"],
        cwd=user,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})
    assert lines == [14, 17, 18], result.stdout + result.stderr
