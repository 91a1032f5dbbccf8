"""Byte-range splits of a capture: where a split's first record is, and the packets it owns.

A split owns the records whose header starts inside its byte range (as Hadoop's text splits own the
lines that start in them). A pcap has no sync marker, so a split finds its first record with the
reader's resynchronisation (a sane header with a timestamp within a day of the file's first record,
and a sane header after it). A pcapng split walks the block lengths from the start of the file,
reading 8 bytes per block, which also gives it the section's byte order and interfaces. Packet
numbers within a split start at 1; the second stage adds the counts of the splits before it.

A fragmented IP datagram belongs to the split of the packet that completes it. So that its earlier
fragments are there when they lie in the split before, a split first reads the fragments of the
``LOOKBACK_BYTES`` before its first record (their packets are not its own: it neither counts them nor
yields what they complete).
"""

from __future__ import annotations

import struct
from typing import Any, Iterator

from ..packets.capture import CaptureBuffer, CaptureStats, PcapFile, PcapReader, capture_format
from ..packets.fragments import FragmentReassembler
from ..packets.layers import ETH_IPV4, ETH_IPV6, LINK_ETHERNET, PROTO_TCP, Segment, tcp_segment
from ..packets.pcapng import PcapngReader

LOOKBACK_BYTES = 1 << 20
# Ethernet: the ethertype at 12, the IP version at 14, IPv4's flags and fragment offset at 20.
_ETH_IP = struct.Struct(">12xHB5xH")


def plan_splits(size: int, split_bytes: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``[0, size)`` in the fewest pieces of at most
    ``split_bytes``, all of one size (give or take a byte): a remainder left as a last small split
    would cost a whole task's start-up and lookback for a few packets."""
    pieces = max(1, -(-size // max(split_bytes, 1)))
    bounds = [size * k // pieces for k in range(pieces + 1)]
    return list(zip(bounds, bounds[1:]))


# A capture file's bytes: read whole, or mapped.


def split_segments(
    buf: CaptureBuffer, start: int, stop: int, stats: CaptureStats
) -> Iterator[tuple[int, int, Segment]]:
    """``(packet number within the split, ts_ns, segment)`` for the TCP packets the split owns."""
    reader, first = _positioned(buf, start, stop, stats)
    if first is None or first >= stop:
        return
    fragments = FragmentReassembler(stats)
    _prime(fragments, buf, first)
    for packet in reader.records(first, stop):
        seg = tcp_segment(packet.linktype, packet.data, packet.orig_len)
        if seg is None or seg.fragment:
            seg = fragments.packet(packet.linktype, packet.data, packet.ts_ns)
        if seg is not None:
            yield packet.number, packet.ts_ns, seg


# ``buf`` is any buffer a capture reader holds (bytes or an mmap): a ``capture.PacketFilter``.
def _plainly_unfragmented(linktype: int, buf: Any, at: int, length: int) -> bool:
    """An untagged Ethernet packet that is no IP fragment (``fragments.ip_fragment`` would say
    None), told from its raw bytes: the lookback skips it without parsing it."""
    if linktype != LINK_ETHERNET or length < _ETH_IP.size:
        return False
    ethertype: int
    first: int
    fragment: int
    ethertype, first, fragment = _ETH_IP.unpack_from(buf, at)
    if ethertype == ETH_IPV4:
        return first >> 4 == 4 and not fragment & 0x3FFF  # neither more fragments nor an offset
    protocol: int = buf[at + 20]  # within the _ETH_IP bytes checked above
    return ethertype == ETH_IPV6 and first >> 4 == 6 and protocol == PROTO_TCP


def _positioned(
    buf: CaptureBuffer, start: int, stop: int, stats: CaptureStats
) -> tuple[PcapReader | PcapngReader, int | None]:
    """A reader of the capture and the offset of the first record at or after ``start``."""
    if capture_format(buf) == "pcapng":
        blocks = PcapngReader(buf, stats)
        return blocks, _pcapng_first_block(blocks, start)
    records = PcapReader(buf, PcapFile.parse(buf), stats)
    return records, _pcap_first_record(records, start, stop)


def _prime(fragments: FragmentReassembler, buf: CaptureBuffer, first: int) -> None:
    """Give the reassembler the fragments of the records in the lookback window before ``first``."""
    reader, lookback = _positioned(buf, max(0, first - LOOKBACK_BYTES), first, CaptureStats())
    if lookback is None:
        return
    for packet in reader.records(lookback, first, skips=_plainly_unfragmented):
        seg = tcp_segment(packet.linktype, packet.data, packet.orig_len)
        if seg is None or seg.fragment:
            fragments.packet(packet.linktype, packet.data, packet.ts_ns)


def _pcap_first_record(reader: PcapReader, start: int, stop: int) -> int | None:
    if start <= 24:
        return 24
    if len(reader.buf) >= 40:
        (reader.last_sec,) = struct.unpack_from(reader.info.endian + "I", reader.buf, 24)
    return reader.resync(start, stop)


def _pcapng_first_block(reader: PcapngReader, start: int) -> int | None:
    """Walk block lengths from offset 0 to the first block starting at or after ``start``, applying
    the section and interface blocks on the way."""
    buf, pos = reader.buf, 0
    while pos < start:
        found = reader.block_at(pos)
        if found is None:
            resumed = reader.resync(pos + 4, len(buf))
            if resumed is None:
                return None
            pos = resumed
            continue
        kind, length = found
        if kind in (0x0A0D0D0A, 1):
            reader.control_block(kind, memoryview(buf), pos, length)
        pos += length
    return pos
