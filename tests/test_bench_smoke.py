"""Smoke run of ``bench/codec.py --quick``: it runs, passes its byte-equality gate, prints a table.

The figures of a --quick run mean nothing and are not checked; the gate (kraftwire, kio and
kafka-python produce the same bytes for the same message) is.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

from process_group import run_in_group
from shared import SHARED_ROOT, shared_path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "codec.py"


def _run_ok(args: list[str], env: dict[str, str] | None = None) -> str:
    """Run ``python ARGS`` in a process group of its own (at most 240 s, no process left behind: the
    decode bench starts worker pools); its stdout, once it has exited 0."""
    proc = run_in_group([sys.executable, *args], timeout=240, env=env)
    assert (
        proc.returncode == 0
    ), f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def test_codec_bench_quick_runs_and_passes_the_gate():
    shared_path("kafka-schemas", "clients", "src", "main", "resources", "common", "message")
    missing = [
        dist
        for module, dist in (("kio", "kio"), ("kafka", "kafka-python"))
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed (pip install -e '.[bench]'); bench peers absent"
        )

    env = dict(os.environ, KRAFTWIRE_SHARED=str(SHARED_ROOT))
    # A cold run generates the codec package first (seconds); later runs reuse the cached one.
    output = _run_ok([str(BENCH), "--quick"], env=env)
    assert "byte-equality gate: PASSED" in output, output
    header = next((line for line in output.splitlines() if line.startswith("message ")), None)
    assert header is not None, output
    for column in ("kraftwire", "kio", "kafka-python", "kw/kio", "kw/kafka-py"):
        assert column in header, header
    for message in ("FetchRequest v18", "MetadataResponse v13", "VoteRequest v2"):
        assert f"{message} " in output, output
    assert "targets met" in output, output


CORE_BENCH = Path(__file__).resolve().parents[1] / "bench" / "core.py"


def test_core_bench_quick_runs_and_reports_every_figure():
    """``bench/core.py --quick`` runs one short seeded case; its figures are not checked, its shape is
    (the three rates, the event mix and the verdict line), and the run itself must be violation-free.
    """
    output = _run_ok([str(CORE_BENCH), "--quick"])
    for label in (
        "core:",
        "simulator, codecs on:",
        "simulator, codecs off:",
        "event mix:",
        "target: core >= 100,000",
    ):
        assert label in output, output
    assert "steady:3:0" in output, output


DECODE_BENCH = Path(__file__).resolve().parents[1] / "bench" / "decode.py"


def test_decode_bench_command_mode_times_the_commands(tmp_path):
    """``bench/decode.py --command`` on a tiny records-rich capture (Spark left out: minutes): it
    builds the capture into its own folder under TMPDIR, times each command and prints the ratios;
    the capture holds what the mode promises (gzip batches, transaction markers, KRaft control
    records, metadata records), every exchange decoded."""
    shared_path("kafka-schemas")
    env = dict(os.environ, KRAFTWIRE_SHARED=str(SHARED_ROOT), TMPDIR=str(tmp_path))
    output = _run_ok(
        [str(DECODE_BENCH), "--command", "--packets", "1500", "--rounds", "1", "--no-spark"],
        env=env,
    )
    for label in (
        "kraftwire decode --help",
        "start-up",
        "kraftwire decode --format jsonl --jobs 1 (pure)",
    ):
        assert label in output, output
    if shutil.which("tshark"):
        assert "/ tshark -T json:" in output, output
    captures = sorted((tmp_path / "kraftwire-bench-captures").glob("records-*-1500.pcap"))
    assert len(captures) == 1, captures

    from kraftwire.spark_decoders import decode_local

    rows = decode_local([str(captures[0])])
    assert rows and {row["status"] for row in rows} == {"ok"}
    bodies = "".join(row["request_json"] + row["response_json"] for row in rows)
    for sign in ('"compression":"gzip"', '"typeName":"COMMIT"', '"typeName":"LEADER_CHANGE"'):
        assert sign in bodies, sign
    assert '"topicId":"AAAAAAAAAAAAAAAAAAAAAQ"' in bodies  # the metadata log's Fetch responses
