"""Decoding a capture while it is written: ``tcpdump -w - | kraftwire decode -``.

``decode_stream`` reads a pcap or pcapng byte stream (standard input) as it arrives and hands each
row to its ``emit`` as soon as the row is made: an exchange when its response is read (or when it
needs none), so an operator sees a live controller's traffic as it happens. Rows come in the order
they complete, not sorted as a file's are. Only whole records (pcap) or blocks (pcapng) are read;
a partial one waits for the rest of its bytes. Packets take the general path (``segments``' way,
``FlowTable.segment``), which gives the same rows as the fused path of files.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Callable, Final, Iterator

from ..kafka.bodies import BodyDecoder
from ..packets.capture import (
    MIN_CAPTURE_HEADER,
    PCAPNG_BOM,
    PCAPNG_SHB,
    CaptureError,
    CaptureStats,
    Packet,
    PcapFile,
    PcapReader,
    capture_format,
)
from ..packets.fragments import FragmentReassembler
from ..packets.layers import tcp_segment
from ..packets.pcapng import MAX_BLOCK, PcapngReader
from .pipeline import DecodeOptions, FlowTable
from ..kafka.rows import Row

STDIN_NAME: Final = "-"  # the ``capture_file`` of the rows
READ_BYTES: Final = 1 << 16
# Bytes a stream may hold without one whole record or block before it is called no capture: a
# record or block is at most 16 MiB (``pcapng.MAX_BLOCK``; pcap's limit is lower).
MAX_WAITING: Final = 2 * MAX_BLOCK + 64


def decode_stream(
    stream: BinaryIO,
    bodies: BodyDecoder,
    emit: Callable[[Row], None],
    options: DecodeOptions | None = None,
) -> CaptureStats:
    """Every row of the capture ``stream`` holds, each handed to ``emit`` as it is made; the
    stream's stats. CaptureError when its first bytes are no capture file header."""
    stats = CaptureStats()
    table = FlowTable((STDIN_NAME,), bodies, emit, options or DecodeOptions())
    fragments = FragmentReassembler(stats)
    reader = _Records(stats)
    while True:
        chunk = _read_some(stream)
        if not chunk:
            break
        for packet in reader.feed(chunk):
            seg = tcp_segment(packet.linktype, packet.data, packet.orig_len)
            if seg is None or seg.fragment:
                seg = fragments.packet(packet.linktype, packet.data, packet.ts_ns)
            if seg is not None:
                table.segment(seg, packet.number, packet.ts_ns)
    reader.end()
    fragments.finish()
    table.finish()
    return stats


def _read_some(stream: BinaryIO) -> bytes:
    """What the stream has now (at least one byte, waiting for it), or b"" at its end."""
    read1 = getattr(stream, "read1", None)
    return read1(READ_BYTES) if read1 is not None else stream.read(READ_BYTES)


class _Records:
    """The packets of a capture's bytes as they come: whole records or blocks only."""

    def __init__(self, stats: CaptureStats) -> None:
        self.stats = stats
        self.waiting = bytearray()
        self.kind: str | None = None  # "pcap" or "pcapng", once the file header is there
        self.pcap_header = b""
        self.pcap: PcapFile | None = None
        self.pcapng = PcapngReader(b"", stats)
        self.endian = "<"  # of the pcapng section being read
        self.number = 1  # of the next packet
        self.last_sec = -1  # pcap: the last record's seconds (``PcapReader.last_sec``)

    def feed(self, chunk: bytes) -> Iterator[Packet]:
        self.waiting += chunk
        if self.kind is None:
            if len(self.waiting) < MIN_CAPTURE_HEADER:
                return
            self.kind = capture_format(self.waiting)
            if self.kind == "pcap":
                self.pcap_header = bytes(self.waiting[:24])
                self.pcap = PcapFile.parse(self.pcap_header)
                del self.waiting[:24]
        whole = self._whole_pcap() if self.kind == "pcap" else self._whole_blocks()
        if whole:
            yield from self._packets(bytes(self.waiting[:whole]))
            del self.waiting[:whole]
        elif len(self.waiting) > MAX_WAITING:
            raise CaptureError(f"no whole record in {len(self.waiting)} bytes of the stream")

    def end(self) -> None:
        """The stream ended: a record or block it cut off is noted, as for a file."""
        if self.kind is None:
            capture_format(self.waiting)  # raises: too short for any capture file header
        if self.waiting:
            self.stats.truncated_tail = True
            self.stats.note(f"the stream ends inside a record ({len(self.waiting)} bytes)")

    def _whole_pcap(self) -> int:
        """How many waiting bytes are whole records (all of them past a damaged record header:
        the file reader finds the next record in them)."""
        info = self.pcap
        assert info is not None, "the pcap header was read"
        header = struct.Struct(info.endian + "IIII")
        pos, waiting = 0, self.waiting
        while pos + 16 <= len(waiting):
            _, _, incl, _ = header.unpack_from(waiting, pos)
            if not 0 < incl <= max(info.snaplen, MAX_BLOCK):
                return len(waiting)
            if pos + 16 + incl > len(waiting):
                break
            pos += 16 + incl
        return pos

    def _whole_blocks(self) -> int:
        """``_whole_pcap`` for pcapng blocks (a section header sets the byte order of the rest)."""
        pos, waiting = 0, self.waiting
        while pos + 12 <= len(waiting):
            if struct.unpack_from("<I", waiting, pos)[0] == PCAPNG_SHB:
                (bom,) = struct.unpack_from("<I", waiting, pos + 8)
                self.endian = "<" if bom == PCAPNG_BOM else ">"
            (length,) = struct.unpack_from(self.endian + "I", waiting, pos + 4)
            if length < 12 or length % 4 or length > MAX_BLOCK:
                return len(waiting)
            if pos + length > len(waiting):
                break
            pos += length
        return pos

    def _packets(self, whole: bytes) -> Iterator[Packet]:
        if self.kind == "pcap":
            info = self.pcap
            assert info is not None, "the pcap header was read"
            buf = self.pcap_header + whole
            reader = PcapReader(buf, info, self.stats)
            reader.last_sec = self.last_sec
            packets: Iterator[Packet] = reader.records(24, len(buf), self.number)
        else:
            self.pcapng.buf = whole
            packets = self.pcapng.records(0, len(whole), self.number)
        for packet in packets:
            self.number = packet.number + 1
            yield packet
        if self.kind == "pcap":
            self.last_sec = reader.last_sec
