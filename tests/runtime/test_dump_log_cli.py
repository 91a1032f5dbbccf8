"""``kraftwire dump-log`` on damaged files: a batch that fails its CRC in the middle of a segment is
printed with ``isvalid: false`` (Kafka's DumpLogSegments' word), the batches after it are still printed,
and the exit status says so (it reported "invalid bytes at the end", hid the rest and exited 0); a file
that is not a log at all is one line and a non-zero status (it exited 0)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kraftwire.node.core.api import LogBatch
from kraftwire.node.storage import FileLog

pytestmark = pytest.mark.timeout(120)


def kraftwire(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def segment(tmp_path):
    """A segment of three batches (offsets 0-1, 2, 3-5) and where each batch starts."""
    log = FileLog.open(str(tmp_path))
    log.append([LogBatch(0, 1, (b"a", b"b"))])
    log.append([LogBatch(2, 1, (b"c",))])
    log.append([LogBatch(3, 2, (b"d", b"e", b"f"))])
    log.close()
    path = tmp_path / "00000000000000000000.log"
    data = path.read_bytes()
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    assert len(starts) == 3
    return path, starts


def test_crc_mismatch_in_the_middle_is_marked_and_the_rest_printed(segment):
    path, starts = segment
    data = bytearray(path.read_bytes())
    data[starts[2] - 1] ^= 0xFF  # the last byte of the middle batch: its CRC no longer matches
    path.write_bytes(bytes(data))
    result = kraftwire("dump-log", str(path))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("baseOffset:")]
    assert [line.split()[1] for line in lines] == ["0", "2", "3"]
    assert [line.endswith("isvalid: true") for line in lines] == [True, False, True]
    assert f"position: {starts[1]} " in lines[1]
    assert "payload: f" in result.stdout and "payload: c" not in result.stdout
    assert "invalid bytes" not in result.stdout
    (error,) = result.stderr.splitlines()
    assert error.startswith(f"kraftwire dump-log: {path}: batch at position {starts[1]}: ")
    assert "CRC" in error

    as_json = json.loads(kraftwire("dump-log", "--json", str(path)).stdout)
    batches = as_json[0]["batches"]
    assert [(b["baseOffset"], b["isValid"], len(b["records"])) for b in batches] == [
        (0, True, 2),
        (2, False, 0),
        (3, True, 3),
    ]


def test_a_corrupt_last_batch_is_marked_too(segment):
    path, _ = segment
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    result = kraftwire("dump-log", str(path))
    assert result.returncode == 1
    assert result.stdout.count("isvalid: false") == 1 and "invalid bytes" not in result.stdout


def test_a_torn_tail_is_still_reported_as_trailing_bytes(segment):
    path, _ = segment
    path.write_bytes(path.read_bytes()[:-7])
    result = kraftwire("dump-log", str(path))
    assert result.returncode == 0 and "isvalid: false" not in result.stdout
    assert "invalid bytes at the end of 00000000000000000000.log" in result.stdout


@pytest.mark.parametrize(
    "content", [b"root:x:0:0:root:/root:/bin/bash\n" * 5, b"\0" * 200], ids=["text", "zeros"]
)
def test_a_file_that_is_not_a_log_is_one_line_and_fails(tmp_path, content):
    path = tmp_path / "passwd"
    path.write_bytes(content)
    result = kraftwire("dump-log", str(path))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f"kraftwire dump-log: {path}: not a log segment or snapshot (no record batch at position 0)\n"
    )


def test_an_empty_segment_is_a_log(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"")
    result = kraftwire("dump-log", str(path))
    assert result.returncode == 0 and "Log starting offset: 0" in result.stdout


def test_a_segment_whose_only_batch_is_torn_is_a_log_with_a_torn_tail(segment):
    path, starts = segment
    path.write_bytes(path.read_bytes()[: starts[1] - 5])
    result = kraftwire("dump-log", str(path))
    assert result.returncode == 0 and result.stderr == ""
    assert f"Found {starts[1] - 5} invalid bytes at the end" in result.stdout
