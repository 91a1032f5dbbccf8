"""``mypy --strict`` (the settings of pyproject.toml's ``[tool.mypy]``) finds nothing in the whole
installed package: the CLI, the generator and its records runtime, the generated codecs, the node
(sans-IO core, simulator, runtime, storage) and the spark decoders.

The editable install maps ``kraftwire.*`` to the repository's folders through an import hook mypy
cannot follow, so the package is laid out as installed (symlinks into the checkout) in a temporary
directory and mypy is pointed at it. Imports are followed everywhere (no ``follow_imports=skip``):
the core's messages are checked against the generated classes they are.

One cache serves the module's runs: the whole-package run first, then the probes, which re-check
only their own module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -e '.[dev]'")

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "pyproject.toml"
# The installed package's sub-packages and the repository folder each is mapped from.
SUBPACKAGES = {
    "codegen": "codegen",
    "generated": "generated",
    "node": "node",
    "spark_decoders": "spark_decoders",
}


@pytest.fixture(scope="module")
def installed_layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<tmp>/kraftwire/``: the files of kraftwire/ and a link per mapped sub-package."""
    base = tmp_path_factory.mktemp("mypy-package")
    package = base / "kraftwire"
    package.mkdir()
    for path in sorted((REPO / "kraftwire").iterdir()):
        if path.is_file() and path.suffix in (".py", ".typed"):
            (package / path.name).symlink_to(path)
    for name, folder in SUBPACKAGES.items():
        (package / name).symlink_to(REPO / folder, target_is_directory=True)
    return base


def run_mypy(base: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(CONFIG),
        "--cache-dir",
        str(base / ".mypy_cache"),
        "--no-color-output",
        *targets,
    ]
    env = {**os.environ, "MYPYPATH": str(base)}
    return subprocess.run(
        command, cwd=base, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_the_whole_package_is_clean_under_strict_mypy(installed_layout: Path) -> None:
    result = run_mypy(installed_layout, "-p", "kraftwire")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout, result.stdout


# A module with one wrong type for each area the run above covers: the core's, the runtime's
# reaching for a core that is None until start(), a generated message's field, the records
# runtime's and the decoders' rows. -> (source, mypy's error)
PROBES = {
    "core": (
        "from kraftwire.node.core import KRaftCore\n\n\n"
        "def epoch_name(core: KRaftCore) -> str:\n"
        "    return core.status().epoch\n",
        'Incompatible return value type (got "int", expected "str")',
    ),
    "runtime": (
        "from kraftwire.node.core.api import QuorumStatus\n"
        "from kraftwire.node.runtime import KRaftNode\n\n\n"
        "def status_of(node: KRaftNode) -> QuorumStatus:\n"
        "    return node.core.status()\n",
        'Item "None" of "KRaftCore | None" has no attribute "status"',
    ),
    "message": (
        "from kraftwire.generated.vote_request import VoteRequest\n\n\n"
        "def voter(request: VoteRequest) -> str:\n"
        "    return request.voter_id\n",
        'Incompatible return value type (got "int", expected "str")',
    ),
    "records": (
        "from kraftwire.generated._batch import Record\n\n\n"
        "def key_text(record: Record) -> str:\n"
        "    return record.key.decode()\n",
        'Item "None" of "bytes | None" has no attribute "decode"',
    ),
    "decoders": (
        "from kraftwire.spark_decoders.packets.layers import tcp_segment\n\n\n"
        "def segment_of(packet: str) -> None:\n"
        "    tcp_segment(1, packet, 0)\n",
        'Argument 2 to "tcp_segment" has incompatible type "str"',
    ),
}


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_the_check_sees_a_type_error(installed_layout: Path, probe: str) -> None:
    """The same command fails on a module with one wrong type (so a clean run means something)."""
    source, error = PROBES[probe]
    module = installed_layout / "kraftwire" / f"probe_{probe}.py"
    module.write_text(source)
    try:
        result = run_mypy(installed_layout, "-m", f"kraftwire.probe_{probe}")
    finally:
        module.unlink()
    assert result.returncode == 1, result.stdout + result.stderr
    assert error in result.stdout, result.stdout
