"""Smoke run of ``bench/decode_floor.py --quick``: it finds the partition rows in the message, its
loops (the generated one and the other element models') rebuild the decoded partitions (it exits
non-zero otherwise), and it prints every part and every model.
The figures of a --quick run mean nothing and are not checked."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared import SHARED_ROOT, shared_path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "decode_floor.py"
PARTS = (
    "decode",
    "kafka-python decode",
    "top level",
    "instances",
    "values",
    "rows",
    "stores",
    "loop",
    "plain loop",
    "named tuple loop",
)
MODELS = ("slotted", "plain", "named tuple", "raw tuples")


def test_decode_floor_quick_runs_and_reports_every_part():
    shared_path("kafka-schemas", "clients", "src", "main", "resources", "common", "message")
    if importlib.util.find_spec("kafka") is None:
        pytest.skip("kafka-python not installed (pip install -e '.[bench]')")
    env = dict(os.environ, KRAFTWIRE_SHARED=str(SHARED_ROOT))
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    for part in PARTS:
        assert any(line.split("  ")[0] == part for line in lines), (part, proc.stdout)
    assert any(line.startswith("kafka-python / floor") for line in lines), proc.stdout
    for model in MODELS:
        assert any(line.split("  ")[0] == model for line in lines), (model, proc.stdout)
