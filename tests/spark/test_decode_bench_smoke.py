"""Smoke runs of ``bench/decode.py --quick``: it builds its capture, decodes it and prints its lines.

The figures of a --quick run (5,000 packets) mean nothing and are not checked; the shape of the
output is, and that the decode found exchanges in the capture the bench built.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from shared import SHARED_ROOT, shared_path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "decode.py"

pytestmark = pytest.mark.timeout(300)


def _run(*options: str) -> str:
    shared_path("kafka-schemas")
    env = dict(os.environ, KRAFTWIRE_SHARED=str(SHARED_ROOT))
    # A cold run generates the codec package from Kafka's specs first; later runs reuse it.
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", *options],
        capture_output=True,
        text=True,
        timeout=280,
        env=env,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("capture_format", ["pcap", "pcapng"])
def test_decode_bench_quick_decodes_its_capture(capture_format):
    options = ["--pcapng"] if capture_format == "pcapng" else []
    output = _run("--no-spark", "--no-tshark", *options)
    assert re.search(r"^codecs: Kafka's specs from \.\./shared, (pure|native|mixed)", output, re.M)
    assert re.search(r"^decoders: (pure|native)", output, re.M), output
    packets = re.search(r"^capture: ([\d,]+) packets, [\d.]+ MB \((\w+)\)", output, re.M)
    assert packets is not None and int(packets[1].replace(",", "")) >= 5000, output
    assert packets[2] == capture_format, output
    local = re.search(
        r"^kraftwire local \(1 core\):\s+[\d.]+ s wall\s+[\d.]+ s CPU .*\(([\d,]+) exchanges, "
        r"(pure|native) decoders\)",
        output,
        re.M,
    )
    assert local is not None, output
    assert int(local[1].replace(",", "")) > 1000  # about a third of the packets are exchanges
    assert "tshark" not in output and "Spark" not in output


def test_decode_bench_breakdown_prints_every_stage():
    output = _run("--breakdown")
    stages = re.findall(r"^  (.+?)\s+(\d+\.\d\d)$", output, re.M)
    names = [name for name, _ in stages]
    assert names[0] == "capture records -> TCP segments" and names[-2] == "full decode", output
    assert names[-1] == "full decode, rows kept past the next object", output
    assert len(names) == 11, output


@pytest.mark.parametrize("where", ["missing", "folder"])
def test_decode_bench_profile_refuses_a_path_it_cannot_write(tmp_path, where):
    """A --profile in a folder that does not exist, or a folder itself: one usage line, exit 2, before
    any capture is built (not a traceback after the decode)."""
    target = tmp_path / "no-such-folder" / "x.prof" if where == "missing" else tmp_path
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--profile", str(target)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"--profile {target}: " in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_records_capture_cache_leaves_another_runs_partial_file_alone(tmp_path, monkeypatch):
    """Two benches building the same cached capture at once: each writes files of its own, so
    neither overwrites (nor moves into place) the other's half-written capture."""
    monkeypatch.syspath_prepend(str(BENCH.parent))
    import _records_capture

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = tmp_path / "kraftwire-bench-captures"
    folder.mkdir()
    stem = f"records-v{_records_capture.FORMAT_VERSION}-7"
    others = folder / f"{stem}.partial"
    others.write_bytes(b"another run, half way")

    def write_capture(path, packets, pool):
        Path(path).write_bytes(b"capture of this run")
        return packets

    monkeypatch.setattr(_records_capture, "write_capture", write_capture)
    monkeypatch.setattr(_records_capture, "records_pool", lambda package, rng: [])
    path, count = _records_capture.cached_capture(7, package=None)
    assert (path.read_bytes(), count) == (b"capture of this run", 7)
    assert others.read_bytes() == b"another run, half way"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [others.name, f"{stem}.pcap", f"{stem}.count"]
    )


@pytest.mark.parametrize("option", ["--time-local", "--breakdown-of"])
@pytest.mark.parametrize("where", ["missing", "folder"])
def test_decode_bench_child_options_refuse_a_capture_that_is_not_a_file(tmp_path, option, where):
    """The options the bench gives its children, typed by hand with a wrong path: one usage line,
    exit 2 (not a traceback)."""
    target = tmp_path / "missing.pcap" if where == "missing" else tmp_path
    proc = subprocess.run(
        [sys.executable, str(BENCH), option, str(target)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"{option} {target}: no such capture file" in proc.stderr
    assert "Traceback" not in proc.stderr
