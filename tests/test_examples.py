"""Every script in examples/ runs and shows what it promises (the Kafka-spec ones need ../shared)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared import SHARED_ROOT, shared_path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
NEEDS_KAFKA_SPECS = {"produce_zstd.py", "metadata_round_trip.py"}


def run_example(name: str) -> str:
    if name in NEEDS_KAFKA_SPECS:
        shared_path("kafka-schemas")  # skips the test when ../shared is absent
    environment = {**os.environ, "KRAFTWIRE_SHARED": str(SHARED_ROOT)}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=240,
        env=environment,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_every_example_is_tested():
    scripts = {path.name for path in EXAMPLES.glob("*.py")} - {"kafka_specs.py"}
    assert scripts == {
        "produce_zstd.py",
        "fetch_records.py",
        "metadata_round_trip.py",
        "vendoring.py",
    }


def test_produce_with_a_zstd_batch():
    out = run_example("produce_zstd.py")
    assert "batch at offset 0: zstd, 2 records" in out
    assert "1: key=b'order-2'" in out


def test_fetch_with_records():
    out = run_example("fetch_records.py")
    assert "batch 40..42 (lz4, transactional=True)" in out
    assert "offset 43: COMMIT marker" in out


def test_metadata_round_trip():
    out = run_example("metadata_round_trip.py")
    assert "decoded back equal" in out and '"clusterId": "example-cluster"' in out


def test_vendoring_a_generated_package():
    out = run_example("vendoring.py")
    assert "round trip through myproject.vendor.kafka" in out


def test_examples_skip_cleanly_without_kafkas_specs(tmp_path):
    environment = {**os.environ, "KRAFTWIRE_SHARED": str(tmp_path / "absent")}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "produce_zstd.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert result.returncode == 0 and result.stdout.startswith("skipped: Kafka's specs are not at")


def test_examples_are_mypy_clean(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -e '.[dev]'")
    # The editable install maps kraftwire.generated and kraftwire.codegen through an import hook mypy
    # cannot follow: lay the packages out as an installed copy has them.
    root = tmp_path / "mypypath"
    (root / "kraftwire").mkdir(parents=True)
    for module in (REPO / "kraftwire").glob("*.py"):
        (root / "kraftwire" / module.name).symlink_to(module)
    for package, folder in (("generated", "generated"), ("codegen", "codegen")):
        (root / "kraftwire" / package).symlink_to(REPO / folder, target_is_directory=True)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            ".",
        ],
        cwd=EXAMPLES,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MYPYPATH": str(root)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
