"""mypy (strict, see mypy_core.ini) finds nothing in the sans-IO core, its batch adapter, the
simulator that drives it (which hands the core a ``random.Random`` as its ``RandomSource``), and the
runtime and storage that drive it on TCP and disk.

The installed package maps ``kraftwire.node`` to ``node/`` through an editable-install import hook,
which mypy cannot follow; so the test lays out the package as installed (symlinks into the checkout)
in a temporary directory and points mypy at it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).with_name("mypy_core.ini")


def _installed_layout(base: Path) -> Path:
    package = base / "kraftwire"
    package.mkdir()
    for name in ("__init__.py", "records.py", "synthetic_capture.py"):
        (package / name).symlink_to(ROOT / "kraftwire" / name)
    for name in ("node", "generated", "codegen"):
        (package / name).symlink_to(ROOT / name, target_is_directory=True)
    return base


def _mypy(base: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(base)}
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(CONFIG),
        "--cache-dir",
        str(base / ".cache"),
    ]
    return subprocess.run(
        [*command, *targets],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_node_core_is_clean_under_strict_mypy(tmp_path: Path) -> None:
    base = _installed_layout(tmp_path)
    result = _mypy(base, "-p", "kraftwire.node.core", "-m", "kraftwire.node.batches")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout


def test_node_simulation_is_clean_under_strict_mypy(tmp_path: Path) -> None:
    base = _installed_layout(tmp_path)
    result = _mypy(base, "-p", "kraftwire.node.simulation")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout


def test_node_runtime_and_storage_are_clean_under_strict_mypy(tmp_path: Path) -> None:
    base = _installed_layout(tmp_path)
    result = _mypy(base, "-p", "kraftwire.node.runtime", "-p", "kraftwire.node.storage")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout


# A module with one wrong type for each check: the core's, and the runtime's reaching for a core that
# is None until start() (the error node/runtime had before it was typed). -> (source, mypy's error)
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
}


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_the_check_sees_a_type_error(tmp_path: Path, probe: str) -> None:
    """The same command fails on a module with one wrong type (so a clean run above means something)."""
    source, error = PROBES[probe]
    base = _installed_layout(tmp_path)
    (base / "kraftwire" / "probe.py").write_text(source)
    result = _mypy(base, "-m", "kraftwire.probe")
    assert result.returncode == 1, result.stdout + result.stderr
    assert error in result.stdout
