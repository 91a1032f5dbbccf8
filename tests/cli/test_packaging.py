"""Installing kraftwire prints nothing alarming, ships its data folders, and knows its version."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import kraftwire

REPO = Path(__file__).resolve().parents[2]


def test_building_the_wheel_prints_no_setuptools_warning(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--wheel-dir",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    warnings = [line for line in output.splitlines() if "Warning" in line or "deprecated" in line]
    assert not warnings, "\n".join(warnings)
    [wheel] = tmp_path.glob("kraftwire-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kraftwire/codegen/templates/module.py.j2" in names
    assert "kraftwire/codegen/runtime/_base.py" in names
    assert "kraftwire/codegen/spec_schema.json" in names
    assert "kraftwire/generated/vote_request.py" in names


def test_version_is_printed_by_the_command():
    result = subprocess.run(
        [sys.executable, "-m", "kraftwire", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"kraftwire {kraftwire.__version__}"
