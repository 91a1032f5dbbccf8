"""IP fragment reassembly: IPv4 fragments and IPv6 Fragment extension headers put back together.

``FragmentReassembler.packet(linktype, data, ts_ns)`` takes a packet that ``tcp_segment``
could not use whole (a fragment) and returns the TCP ``Segment`` of the datagram once its last
missing fragment arrives, so the segment carries the number and time of the packet that completed
it (as tshark shows a reassembled datagram). Datagrams are keyed by (IP version, source,
destination, identification, protocol) and only TCP datagrams are kept.

Hostile or unlucky input stays bounded and visible:

* overlapping fragments never overwrite: the bytes that arrived first are kept, and an overlap whose
  bytes differ is counted (``conflicts``), so a later fragment cannot rewrite what was checked;
* a fragment reaching past 65,535 bytes drops its datagram (``oversized``);
* a datagram still incomplete ``timeout_ns`` of capture time after its first fragment (30 s, as
  Linux's ``ipfrag_time``), or the oldest when more than ``max_datagrams`` or ``max_bytes`` wait, or
  any left at the end of the capture, is dropped (``expired``, ``evicted``, ``incomplete``);
* a fragment cut by the snaplen makes its datagram unusable: dropped when complete (``cut``);
* a copy of a fragment of a datagram already reassembled (a late duplicate) is ignored rather than
  taken for the start of a new datagram: recently completed datagrams keep their fragments'
  fingerprints (offset, length, CRC-32) for the same timeout and count limit (``duplicates``).

Every drop is also noted in the capture's ``CaptureStats`` (the CLI prints the first few), and the
TCP stream sees the missing bytes as a gap. Checksums are not verified, as elsewhere.
"""

from __future__ import annotations

import socket
import struct
import zlib
from dataclasses import dataclass, field
from typing import NamedTuple

from .capture import CaptureStats
from .layers import (
    ETH_IPV4,
    ETH_IPV6,
    IPV6_EXTENSIONS,
    IPV6_FRAGMENT,
    LINK_RAW,
    PROTO_TCP,
    Segment,
    network_payload,
    tcp_segment,
)

# A datagram: (IP version, source, destination, identification, protocol); IPv6's identification
# is its fragment header's 4 bytes.
FragmentKey = tuple[int, bytes, bytes, int | bytes, int]
# A fragment as seen: (offset, length, CRC-32 of its data).
Fingerprint = tuple[int, int, int]


MAX_DATAGRAM = 65535  # the largest payload a fragment offset and length can describe
FRAGMENT_TIMEOUT_NS = 30 * 10**9
MAX_DATAGRAMS = 1024
MAX_BYTES = 16 * 1024 * 1024

_U16 = struct.Struct(">H")


class Fragment(NamedTuple):
    key: FragmentKey
    offset: int  # where ``data`` goes in the datagram's payload
    more: bool  # more fragments follow (the last one fixes the payload's length)
    data: bytes
    header: bytes  # the IP header to rebuild the datagram with (IPv6: the 40-byte base header)
    cut: bool  # the packet holds fewer bytes than its IP header says (the snaplen cut it)


def ip_fragment(linktype: int, data: bytes | memoryview) -> Fragment | None:
    """The fragment in this packet, or None when it is not a fragment of a TCP datagram."""
    proto, pos = network_payload(linktype, data)
    if proto == ETH_IPV4:
        return _ipv4_fragment(data, pos)
    if proto == ETH_IPV6:
        return _ipv6_fragment(data, pos)
    return None


def _ipv4_fragment(data: bytes | memoryview, pos: int) -> Fragment | None:
    if len(data) < pos + 20 or data[pos] >> 4 != 4 or data[pos + 9] != PROTO_TCP:
        return None
    header_len = (data[pos] & 0x0F) * 4
    (total,) = _U16.unpack_from(data, pos + 2)
    (ident,) = _U16.unpack_from(data, pos + 4)
    (flags_offset,) = _U16.unpack_from(data, pos + 6)
    more, offset = bool(flags_offset & 0x2000), (flags_offset & 0x1FFF) * 8
    if not more and not offset or header_len < 20 or total < header_len:
        return None
    end = pos + total
    key = (4, bytes(data[pos + 12 : pos + 16]), bytes(data[pos + 16 : pos + 20]), ident, PROTO_TCP)
    return Fragment(
        key,
        offset,
        more,
        bytes(data[pos + header_len : end]),
        bytes(data[pos : pos + header_len]),
        end > len(data),
    )


def _ipv6_fragment(data: bytes | memoryview, pos: int) -> Fragment | None:
    if len(data) < pos + 40 or data[pos] >> 4 != 6:
        return None
    (payload_len,) = _U16.unpack_from(data, pos + 4)
    next_header, at = data[pos + 6], pos + 40
    while next_header != IPV6_FRAGMENT:  # the unfragmentable part's extension headers
        if next_header not in IPV6_EXTENSIONS or len(data) < at + 8:
            return None
        step = (data[at + 1] + 2) * 4 if next_header == 51 else (data[at + 1] + 1) * 8
        next_header, at = data[at], at + step
    if len(data) < at + 8:
        return None
    (offset_flags,) = _U16.unpack_from(data, at + 2)
    more, offset = bool(offset_flags & 1), offset_flags & 0xFFF8
    inner = data[at]
    if not more and not offset or (inner != PROTO_TCP and inner not in IPV6_EXTENSIONS):
        return None
    end = pos + 40 + payload_len
    key = (
        6,
        bytes(data[pos + 8 : pos + 24]),
        bytes(data[pos + 24 : pos + 40]),
        bytes(data[at + 4 : at + 8]),
        inner,
    )
    return Fragment(
        key,
        offset,
        more,
        bytes(data[at + 8 : end]),
        bytes(data[pos : pos + 40]),
        end > len(data),
    )


@dataclass
class _Datagram:
    first_ts: int
    header: bytes
    header_from_first: bool  # ``header`` came from the fragment at offset 0
    payload: bytearray = field(default_factory=bytearray)
    covered: list[tuple[int, int]] = field(default_factory=list)  # sorted, disjoint [start, end)
    length: int | None = None  # known once the last fragment arrived
    cut: bool = False
    fingerprints: set[tuple[int, int, int]] = field(default_factory=set)

    def add(self, offset: int, data: bytes) -> bool:
        """Fill the parts of ``[offset, offset + len(data))`` not yet covered; whether bytes
        already held disagreed with ``data``."""
        end = offset + len(data)
        if end == offset:
            return False
        if len(self.payload) < end:
            self.payload.extend(bytes(end - len(self.payload)))
        conflict, cursor = False, offset
        for start, stop in self.covered:
            if stop <= cursor or start >= end:
                continue
            if start > cursor:
                self.payload[cursor:start] = data[cursor - offset : start - offset]
            low, high = max(start, cursor), min(stop, end)
            conflict |= self.payload[low:high] != data[low - offset : high - offset]
            cursor = high
        if cursor < end:
            self.payload[cursor:end] = data[cursor - offset :]
        self.covered = _merge(self.covered + [(offset, end)])
        return conflict

    def complete(self) -> bool:
        return self.length is not None and self.covered == [(0, self.length)]


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, stop in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


@dataclass
class FragmentReassembler:
    stats: CaptureStats = field(default_factory=CaptureStats)
    timeout_ns: int = FRAGMENT_TIMEOUT_NS
    max_datagrams: int = MAX_DATAGRAMS
    max_bytes: int = MAX_BYTES
    pending: dict[FragmentKey, _Datagram] = field(default_factory=dict)  # oldest first
    # recently reassembled: key -> (time of its first fragment, its fragments' fingerprints)
    recent: dict[FragmentKey, tuple[int, set[Fingerprint]]] = field(default_factory=dict)
    held_bytes: int = 0
    reassembled: int = 0
    conflicts: int = 0
    duplicates: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> datagrams

    def packet(self, linktype: int, data: bytes | memoryview, ts_ns: int) -> Segment | None:
        """The TCP segment of the datagram this packet completes, if it is a fragment that does."""
        fragment = ip_fragment(linktype, data)
        if fragment is None:
            return None
        self._expire(ts_ns)
        fingerprint = (fragment.offset, len(fragment.data), zlib.crc32(fragment.data))
        datagram = self.pending.get(fragment.key)
        if datagram is None and fingerprint in self.recent.get(fragment.key, (0, ()))[1]:
            self.duplicates += 1
            return None
        if datagram is None:
            datagram = self.pending[fragment.key] = _Datagram(
                ts_ns, fragment.header, fragment.offset == 0
            )
        if fragment.offset + len(fragment.data) > MAX_DATAGRAM:
            self._drop(fragment.key, "oversized")
            return None
        if fragment.offset == 0 and not datagram.header_from_first:
            datagram.header, datagram.header_from_first = fragment.header, True
        self.held_bytes -= len(datagram.payload)
        if datagram.add(fragment.offset, fragment.data):
            self.conflicts += 1
            self.stats.note(
                f"overlapping IP fragments with different bytes ({_name(fragment.key)})"
            )
        self.held_bytes += len(datagram.payload)
        datagram.cut |= fragment.cut
        datagram.fingerprints.add(fingerprint)
        if not fragment.more and datagram.length is None:
            datagram.length = fragment.offset + len(fragment.data)
        if datagram.complete():
            return self._finish(fragment.key, datagram)
        self._bound()
        return None

    def finish(self) -> None:
        """The capture ended: what still waits is dropped."""
        for key in list(self.pending):
            self._drop(key, "incomplete")

    def _finish(self, key: FragmentKey, datagram: _Datagram) -> Segment | None:
        del self.pending[key]
        self.held_bytes -= len(datagram.payload)
        self.recent.pop(key, None)  # re-inserted last: the dict stays oldest first
        self.recent[key] = (datagram.first_ts, datagram.fingerprints)
        if len(self.recent) > self.max_datagrams:
            del self.recent[next(iter(self.recent))]
        if datagram.cut:
            self._count("cut", key)
            return None
        self.reassembled += 1
        packet = _rebuild(key, datagram.header, bytes(datagram.payload))
        return tcp_segment(LINK_RAW, packet, len(packet))

    def _expire(self, now_ns: int) -> None:
        for key, datagram in list(self.pending.items()):
            if now_ns - datagram.first_ts <= self.timeout_ns:
                break
            self._drop(key, "expired")
        for key, (first_ts, _) in list(self.recent.items()):
            if now_ns - first_ts <= self.timeout_ns:
                break
            del self.recent[key]

    def _bound(self) -> None:
        while self.pending and (
            len(self.pending) > self.max_datagrams or self.held_bytes > self.max_bytes
        ):
            self._drop(next(iter(self.pending)), "evicted")

    def _drop(self, key: FragmentKey, reason: str) -> None:
        datagram = self.pending.pop(key)
        self.held_bytes -= len(datagram.payload)
        self._count(reason, key)

    def _count(self, reason: str, key: FragmentKey) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        self.stats.note(f"IP fragments dropped ({reason}): {_name(key)}")


def _rebuild(key: FragmentKey, header: bytes, payload: bytes) -> bytes:
    """One unfragmented IP packet of ``payload`` with the datagram's header."""
    if key[0] == 4:
        rebuilt = bytearray(header)
        struct.pack_into(">HHH", rebuilt, 2, len(header) + len(payload), key[3], 0)
        return bytes(rebuilt) + payload
    # IPv6: the base header pointing straight at the fragmentable part (the unfragmentable
    # extension headers only matter to routers).
    return (
        header[:4] + struct.pack(">HBB", len(payload), key[4], header[7]) + header[8:40] + payload
    )


def _name(key: FragmentKey) -> str:
    family = socket.AF_INET if key[0] == 4 else socket.AF_INET6
    ident = key[3] if isinstance(key[3], int) else int.from_bytes(key[3], "big")
    src, dst = socket.inet_ntop(family, key[1]), socket.inet_ntop(family, key[2])
    return f"{src} > {dst} id {ident}"
