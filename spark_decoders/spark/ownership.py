"""Which connection shard a packet belongs to, decided before the packet is parsed when possible.

Every shard of the ``kafka-pcap`` data source reads every packet of every file and decodes only its
own connections (``shard_of`` their canonical endpoints). Building a ``Segment`` for a packet only to
drop it would make each shard pay the parsing of the whole capture, so ``ShardOwnership.skips``
looks at the raw bytes first: for untagged Ethernet carrying IPv4 (no options) or IPv6 (TCP right
after the base header), one struct unpack gives the addresses and ports, and the answer is cached per
raw 4-tuple. Anything else (VLAN tags, other link types, IPv4 options, IPv6 extension headers, IP
fragments, damaged headers) is never skipped: it takes the full path and its segment's flow key
decides, exactly as before. Fragments in particular must always reach the reassembler, whose
bounds and timeouts see every fragment in local mode too.

A packet is skipped only when the full path would yield no segment of this shard: the raw bytes
are the very bytes ``layers.tcp_segment`` reads the endpoints from, turned into text the same way.
"""

from __future__ import annotations

import socket
import struct
import zlib
from typing import Any, TypeVar

from ..packets.layers import ETH_IPV4, ETH_IPV6, LINK_ETHERNET, PROTO_TCP, Segment, flow_key

# Ethernet, ethertype at 12; IPv4 version/IHL at 14, flags and fragment offset at 20, protocol at
# 23, then addresses (26, 30) and, with a 20-byte header, the TCP ports (34, 36): 12 bytes from 26.
_ETH_IPV4 = struct.Struct(">12xHB5xHxB2x12s")
# IPv6 after Ethernet: version at 14, next header at 20, addresses 22..54, TCP ports 54..58.
_ETH_IPV6 = struct.Struct(">14xB5xBx36s")
_FRAGMENT_BITS = 0x3FFF  # IPv4 more-fragments flag and fragment offset
_CACHE_LIMIT = 100_000  # raw 4-tuples remembered (both directions count): bounded memory
_Key = TypeVar("_Key")


def shard_of(key: tuple[object, ...], shards: int) -> int:
    """A stable shard for a connection's canonical endpoints (``layers.flow_key``), the same in
    every process."""
    return zlib.crc32(repr(key).encode()) % shards


class ShardOwnership:
    """Shard ``shard`` of ``shards``: which packets and segments are its own."""

    def __init__(self, shard: int, shards: int) -> None:
        if not 0 <= shard < shards:
            raise ValueError(f"shard {shard} is not one of {shards} shards")
        self.shard = shard
        self.shards = shards
        self._by_raw: dict[bytes, bool] = {}
        self._by_key: dict[tuple[object, ...], bool] = {}

    def owns(self, seg: Segment) -> bool:
        """Whether the segment's connection is this shard's."""
        key = flow_key(seg)
        owned = self._by_key.get(key)
        if owned is None:
            owned = self._remember(self._by_key, key, shard_of(key, self.shards) == self.shard)
        return owned

    # ``buf`` is any buffer a capture reader holds (bytes or an mmap): a ``capture.PacketFilter``.
    def skips(self, linktype: int, buf: Any, at: int, length: int) -> bool:
        """True when the packet whose data is ``buf[at:at + length]`` certainly carries no segment
        of this shard (it need not be parsed); False when it must take the full path (it may be
        ours, or it is not a plain case). A ``capture.PacketFilter``."""
        if linktype != LINK_ETHERNET or length < 38:
            return False
        ethertype, first, fragment, protocol, raw = _ETH_IPV4.unpack_from(buf, at)
        if ethertype == ETH_IPV4:
            if first != 0x45 or protocol != PROTO_TCP or fragment & _FRAGMENT_BITS:
                return False
            owned = self._by_raw.get(raw)
            if owned is None:
                owned = self._learn(raw, socket.AF_INET, 4)
            return not owned
        if ethertype != ETH_IPV6 or length < 58:
            return False
        first, next_header, raw = _ETH_IPV6.unpack_from(buf, at)
        if first >> 4 != 6 or next_header != PROTO_TCP:
            return False
        owned = self._by_raw.get(raw)
        if owned is None:
            owned = self._learn(raw, socket.AF_INET6, 16)
        return not owned

    def _learn(self, raw: bytes, family: int, size: int) -> bool:
        src = socket.inet_ntop(family, raw[:size])
        dst = socket.inet_ntop(family, raw[size : 2 * size])
        sport, dport = struct.unpack_from(">HH", raw, 2 * size)
        # The key of the segment the full path would build (only the endpoints matter to it).
        key = flow_key(Segment(src, sport, dst, dport, 0, 0, 0, b"", 0, False))
        return self._remember(self._by_raw, raw, shard_of(key, self.shards) == self.shard)

    @staticmethod
    def _remember(cache: dict[_Key, bool], key: _Key, owned: bool) -> bool:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = owned
        return owned
