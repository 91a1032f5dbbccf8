"""``kraftwire decode -``: a capture read from a stream while it is written, rows as they are made."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import pytest

from captures import conversation, decode, pcap_of, write
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET
from kraftwire.spark_decoders.decode.live import decode_stream
from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.synthetic_capture import link_frame, pcapng_section
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(180)

KRAFTWIRE = os.path.join(os.path.dirname(sys.executable), "kraftwire")
# Writes the file argv[1] to standard output: its first argv[2] bytes, then, after a line on its
# standard input, the rest.
WRITER = """
import sys
data = open(sys.argv[1], "rb").read()
cut = int(sys.argv[2])
sys.stdout.buffer.write(data[:cut])
sys.stdout.buffer.flush()
sys.stdin.readline()
sys.stdout.buffer.write(data[cut:])
"""


def _capture(kind: str, exchanges) -> tuple[bytes, int]:
    """The capture of a conversation, and where its second exchange's first packet starts."""
    packets = conversation(exchanges).packets
    first_exchange = 3 + 2  # the handshake, then a request and its response
    if kind == "pcap":
        return pcap_of(packets), len(pcap_of(packets[:first_exchange]))

    def section(some):
        frames = [(0, ts, link_frame(LINK_ETHERNET, ip)) for ts, ip in some]
        return pcapng_section([(LINK_ETHERNET, None)], frames)

    return section(packets), len(section(packets[:first_exchange]))


class _Trickle:
    """A stream that gives at most ``size`` bytes a read."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.pos, self.size = data, 0, size

    def read1(self, limit: int) -> bytes:
        chunk = self.data[self.pos : self.pos + min(limit, self.size)]
        self.pos += len(chunk)
        return chunk


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
@pytest.mark.parametrize("size", [1, 7, 1000])
def test_a_stream_read_a_few_bytes_at_a_time_gives_the_files_rows(tmp_path, kind, size):
    import kraftwire.generated as package

    exchanges = kraft_exchanges(7)
    data, _ = _capture(kind, exchanges)
    expected, _ = decode(write(tmp_path, f"whole.{kind}", data))
    rows: list[dict] = []
    stats = decode_stream(_Trickle(data, size), BodyDecoder(package), rows.append)
    assert stats.problems == []
    for row in expected:
        row["capture_file"], row["capture_files"] = "-", ["-"]
    assert rows == expected


def _line(stream, deadline: float) -> bytes:
    """One line from ``stream`` (a pipe), waiting until ``deadline`` at most."""
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([stream], [], [], max(left, 0))
        assert ready, f"no line in time (so far {line!r})"
        byte = os.read(stream.fileno(), 1)
        assert byte, f"the stream ended (so far {line!r})"
        line += byte
    return line


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_decode_dash_prints_each_exchange_while_the_capture_is_written(tmp_path, kind):
    """A writer process pipes a capture into ``kraftwire decode -`` and stops, its pipe open,
    after the first exchange and a few bytes of the next packet: that exchange's row is printed
    while the writer still waits; the rest follow once it writes on."""
    exchanges = kraft_exchanges(4)
    data, cut = _capture(kind, exchanges)
    path = write(tmp_path, f"live.{kind}", data)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, path, str(cut + 7)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert writer.stdout is not None and writer.stdin is not None
    decoder = subprocess.Popen(
        [KRAFTWIRE, "decode", "-", "--format", "jsonl"],
        stdin=writer.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    writer.stdout.close()  # the decoder holds the pipe's reading end
    assert decoder.stdout is not None
    try:
        first = _line(decoder.stdout, time.monotonic() + 60)
        assert writer.poll() is None, "the writer must still be waiting"
        assert b'"correlation_id":1,' in first and b'"status":"ok"' in first
        writer.stdin.write(b"go on\n")
        writer.stdin.close()
        rest, errors = decoder.communicate(timeout=60)
        assert writer.wait(timeout=10) == 0
    finally:
        for process in (writer, decoder):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    assert decoder.returncode == 0, errors
    lines = [first] + rest.splitlines(keepends=True)
    assert len(lines) == 4 and all(b'"status":"ok"' in line for line in lines)
    assert all(b'"correlation_id":%d,' % e.correlation_id in l for l, e in zip(lines, exchanges))


def test_decode_dash_table_and_refusals(tmp_path):
    data, _ = _capture("pcap", kraft_exchanges(2))
    done = subprocess.run(
        [KRAFTWIRE, "decode", "-"], input=data, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert lines[0].split()[:3] == ["capture", "request_frame", "response_frame"]
    assert [line.split()[:3] for line in lines[1:]] == [["-", "4", "5"], ["-", "6", "7"]]
    for extra in (["--format", "parquet"], ["--spark"], ["x.pcap"]):
        refused = subprocess.run(
            [KRAFTWIRE, "decode", "-", *extra], input=data, capture_output=True, timeout=60
        )
        assert refused.returncode == 2 and refused.stderr.count(b"\n") == 1, refused.stderr
    empty = subprocess.run([KRAFTWIRE, "decode", "-"], input=b"", capture_output=True, timeout=60)
    assert empty.returncode == 1 and empty.stderr.startswith(
        b"kraftwire decode: standard input: not a"
    )
