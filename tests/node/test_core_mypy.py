"""mypy (strict, see mypy_core.ini) finds nothing in the sans-IO core, its batch adapter and the
simulator that drives it (which hands the core a ``random.Random`` as its ``RandomSource``).

The installed package maps ``kraftwire.node`` to ``node/`` through an editable-install import hook,
which mypy cannot follow; so the test lays out the package as installed (symlinks into the checkout)
in a temporary directory and points mypy at it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).with_name("mypy_core.ini")


def _installed_layout(base: Path) -> Path:
    package = base / "kraftwire"
    package.mkdir()
    for name in ("__init__.py", "records.py"):
        (package / name).symlink_to(ROOT / "kraftwire" / name)
    for name in ("node", "generated"):
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


def test_the_check_sees_a_type_error(tmp_path: Path) -> None:
    """The same command fails on a module with one wrong type (so a clean run above means something)."""
    base = _installed_layout(tmp_path)
    probe = base / "kraftwire" / "core_probe.py"
    probe.write_text(
        "from kraftwire.node.core import KRaftCore\n\n\n"
        "def epoch_name(core: KRaftCore) -> str:\n"
        "    return core.status().epoch\n"
    )
    result = _mypy(base, "-m", "kraftwire.core_probe")
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Incompatible return value type (got "int", expected "str")' in result.stdout
