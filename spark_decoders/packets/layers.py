"""From a link-layer packet to a TCP segment: link types, IPv4, IPv6, TCP.

``tcp_segment(linktype, data, orig_len)`` returns a ``Segment`` or None (not TCP, or an IP fragment
after the first, which carries no TCP header). A first fragment comes back with ``fragment`` set and
only its own part of the payload: ``fragments`` puts whole datagrams back together. Checksums are not verified: offloaded captures carry
wrong ones. Packets cut by the snaplen keep the bytes that were captured and say how many are missing.
"""

from __future__ import annotations

import socket
import struct
from typing import Final, NamedTuple

LINK_NULL: Final = 0
LINK_ETHERNET: Final = 1
LINK_RAW: Final = 101
LINK_LOOP: Final = 108
LINK_SLL: Final = 113
LINK_SLL2: Final = 276
LINK_IPV4: Final = 228
LINK_IPV6: Final = 229
RAW_ALIASES: Final = (12, 14)  # DLT_RAW on some BSDs
ETH_IPV4: Final = 0x0800
ETH_IPV6: Final = 0x86DD
VLAN_TAGS: Final = (0x8100, 0x88A8, 0x9100)
AF_INET6_VALUES: Final = (10, 24, 28, 30)  # Linux, NetBSD/OpenBSD, FreeBSD, macOS
IPV6_EXTENSIONS: Final = (0, 43, 60, 51, 135, 139, 140)
IPV6_FRAGMENT: Final = 44
PROTO_TCP: Final = 6

FIN: Final = 0x01
SYN: Final = 0x02
RST: Final = 0x04
PSH: Final = 0x08
ACK: Final = 0x10

# Whether this module runs compiled (mypyc's build of it is an extension, not a source or bytecode
# file). Compiled, the packet stage reads header fields from a window's bytes with librt's typed
# readers, C calls that make no objects; interpreted, one ``struct`` unpack per header costs less
# than a call per field, so that is what runs. The choice of build is made once, for the whole
# package (``native.implementation``); each module reading with librt has this flag only to know
# which build it is part of, and imports librt only when compiled: a pure install (no mypy extra)
# has no librt to import. Above the packet stage no module forks: the Kafka stage reads its
# integers through ``typed_reads``.
COMPILED: Final = not __file__.endswith((".py", ".pyc"))
if COMPILED:
    from librt.strings import read_i16_be, read_i32_be

_U16: Final = struct.Struct(">H")
_TCP: Final = struct.Struct(">HHIIBB")


class Segment(NamedTuple):
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int  # payload bytes the snaplen cut off (the stream has a gap there)
    fragment: (
        bool  # the first fragment of a fragmented IP packet: the rest of its payload is absent
    )


_ADDRESS_TEXT: Final[dict[bytes, str]] = {}
# Builds a Segment without the Python-level __new__ that NamedTuple adds (a third of its cost).
_new_segment: Final = tuple.__new__


def _address(raw: bytes) -> str:
    text = _ADDRESS_TEXT.get(raw)
    if text is None:
        family = socket.AF_INET if len(raw) == 4 else socket.AF_INET6
        text = _ADDRESS_TEXT[raw] = socket.inet_ntop(family, raw)
        if len(_ADDRESS_TEXT) > 100_000:
            _ADDRESS_TEXT.clear()
    return text


def network_payload(linktype: int, data: bytes | memoryview) -> tuple[int, int]:
    """``(ethertype-like protocol, offset of the IP header)``; protocol 0 when not IP."""
    if linktype == LINK_ETHERNET:
        if len(data) < 14:
            return 0, 0
        pos = 12
        (proto,) = _U16.unpack_from(data, pos)
        while proto in VLAN_TAGS and pos + 6 <= len(data):
            pos += 4
            (proto,) = _U16.unpack_from(data, pos)
        return proto, pos + 2
    if linktype == LINK_SLL:
        return (_U16.unpack_from(data, 14)[0], 16) if len(data) >= 16 else (0, 0)
    if linktype == LINK_SLL2:
        return (_U16.unpack_from(data, 0)[0], 20) if len(data) >= 20 else (0, 0)
    if linktype in (LINK_RAW, LINK_IPV4, LINK_IPV6) or linktype in RAW_ALIASES:
        if not data:
            return 0, 0
        version = data[0] >> 4
        return (ETH_IPV4 if version == 4 else ETH_IPV6 if version == 6 else 0), 0
    if linktype in (LINK_NULL, LINK_LOOP):
        if len(data) < 4:
            return 0, 0
        raw = bytes(data[:4])
        family = int.from_bytes(raw, "big") if linktype == LINK_LOOP else _host_order_family(raw)
        if family == socket.AF_INET:
            return ETH_IPV4, 4
        return (ETH_IPV6, 4) if family in AF_INET6_VALUES else (0, 0)
    return 0, 0


def _host_order_family(raw: bytes) -> int:
    """DLT_NULL stores the family in the capturing host's byte order: the small value is the right one."""
    little, big = int.from_bytes(raw, "little"), int.from_bytes(raw, "big")
    return little if little < big else big


# A connection's endpoints in canonical order: the lower (address, port) first.
FlowKey = tuple[tuple[str, int], tuple[str, int]]


def flow_key(seg: Segment) -> FlowKey:
    """The connection ``seg`` belongs to, the same for both of its directions."""
    a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
    return (a, b) if a <= b else (b, a)


# The common case in one unpack: Ethernet without tags, IPv4 without options, TCP. Offsets: the
# ethertype at 12, then IPv4's version/IHL 14, total length 16, flags/fragment offset 20, protocol 23
# (after the TTL), addresses 26 and 30; then TCP's ports 34, sequence 38, ack 42, data offset 46, flags 47.
_ETH_IPV4_TCP: Final = struct.Struct(">12xHBxH2xHxB2x4s4sHHIIBB")
_EthIpv4TcpFields = tuple[int, int, int, int, int, bytes, bytes, int, int, int, int, int, int]
# The same fields with the addresses and ports as one run of raw bytes, for a reader that keys
# connections by them: ``ETH_IPV4_ENDPOINTS`` (source and destination address, source and
# destination port, contiguous from offset 26 to 38), read in the same unpack as the numbers.
ETH_IPV4_TCP_NUMBERS: Final = struct.Struct(">12xHBxH2xHxB2x12sIIBB")
EthIpv4TcpNumbers = tuple[int, int, int, int, int, bytes, int, int, int, int]
ETH_IPV4_ENDPOINTS: Final = (26, 38)
ETH_IPV4_TCP_MIN: Final = 54  # Ethernet, IPv4 and TCP headers without options
# The same fields again with the endpoints as three signed 32-bit numbers (both addresses, then
# both ports): what ``eth_ipv4_tcp_common`` gives the fused path (``pipeline.FlowTable``).
_ETH_IPV4_TCP_COMMON: Final = struct.Struct(">12xHBxH2xHxB2xiiiIIBB")
_unpack_common: Final = _ETH_IPV4_TCP_COMMON.unpack_from
EthIpv4TcpCommon = tuple[int, int, int, int, int, int, int, int, int, int, int, int]


def eth_ipv4_tcp_common(data: bytes, at: int) -> EthIpv4TcpCommon:
    """The Ethernet frame at ``data[at:]`` read as untagged IPv4 without options carrying TCP:
    ethertype, version/IHL, total length, flags/fragment offset, protocol, source and destination
    address and both ports (three signed 32-bit numbers), sequence, ack, data offset and flags.
    The caller checks ``ETH_IPV4_TCP_MIN`` bytes are there. Compiled, each field is read with
    librt (a native call, its tuple never made as an object); interpreted, one ``struct`` unpack
    costs less than a call per field."""
    if COMPILED:
        return (
            int(read_i16_be(data, at + 12)) & 0xFFFF,
            data[at + 14],
            int(read_i16_be(data, at + 16)) & 0xFFFF,
            int(read_i16_be(data, at + 20)) & 0xFFFF,
            data[at + 23],
            int(read_i32_be(data, at + 26)),
            int(read_i32_be(data, at + 30)),
            int(read_i32_be(data, at + 34)),
            int(read_i32_be(data, at + 38)) & 0xFFFFFFFF,
            int(read_i32_be(data, at + 42)) & 0xFFFFFFFF,
            data[at + 46],
            data[at + 47],
        )
    fields: EthIpv4TcpCommon = _unpack_common(data, at)
    return fields


def _eth_ipv4_tcp_fields(data: bytes) -> _EthIpv4TcpFields:
    """``_ETH_IPV4_TCP``'s fields, at its offsets, read with librt: called only when ``COMPILED``
    (a native call, its tuple never made as an object)."""
    return (
        int(read_i16_be(data, 12)) & 0xFFFF,
        data[14],
        int(read_i16_be(data, 16)) & 0xFFFF,
        int(read_i16_be(data, 20)) & 0xFFFF,
        data[23],
        data[26:30],
        data[30:34],
        int(read_i16_be(data, 34)) & 0xFFFF,
        int(read_i16_be(data, 36)) & 0xFFFF,
        int(read_i32_be(data, 38)) & 0xFFFFFFFF,
        int(read_i32_be(data, 42)) & 0xFFFFFFFF,
        data[46],
        data[47],
    )


def tcp_segment(linktype: int, data: bytes | memoryview, orig_len: int) -> Segment | None:
    captured = len(data)
    if linktype == LINK_ETHERNET and captured >= ETH_IPV4_TCP_MIN:
        # Typed, so the compiled build compares and computes these on machine integers.
        fields: _EthIpv4TcpFields
        if COMPILED and isinstance(data, bytes):
            fields = _eth_ipv4_tcp_fields(data)
        else:
            fields = _ETH_IPV4_TCP.unpack_from(data, 0)
        (
            ethertype,
            version_ihl,
            total,
            frag,
            proto,
            src,
            dst,
            sport,
            dport,
            seq,
            ack,
            offset,
            flags,
        ) = fields
        if (
            ethertype == ETH_IPV4
            and version_ihl == 0x45
            and proto == PROTO_TCP
            and not frag & 0x1FFF
        ):
            start = 34 + (offset >> 4) * 4
            ip_end = 14 + total if total else orig_len
            if start <= ip_end:
                # What _tcp computes, inlined: this is the per-packet cost of nearly every capture.
                end = ip_end if ip_end < captured else captured
                missing = 0
                if orig_len > captured:
                    missing = ip_end - (end if end > start else start)
                return _new_segment(
                    Segment,
                    (
                        _ADDRESS_TEXT.get(src) or _address(src),
                        sport,
                        _ADDRESS_TEXT.get(dst) or _address(dst),
                        dport,
                        seq,
                        ack,
                        flags,
                        bytes(data[start:end]) if end > start else b"",
                        missing if missing > 0 else 0,
                        frag & 0x2000 != 0,
                    ),
                )
    proto, pos = network_payload(linktype, data)
    if proto == ETH_IPV4:
        return _ipv4(data, pos, orig_len)
    if proto == ETH_IPV6:
        return _ipv6(data, pos, orig_len)
    return None


def _ipv4(data: bytes | memoryview, pos: int, orig_len: int) -> Segment | None:
    if len(data) < pos + 20:
        return None
    first = data[pos]
    header_len = (first & 0x0F) * 4
    if first >> 4 != 4 or header_len < 20 or data[pos + 9] != PROTO_TCP:
        return None
    (total,) = _U16.unpack_from(data, pos + 2)
    (frag,) = _U16.unpack_from(data, pos + 6)
    if frag & 0x1FFF:  # a later fragment: no TCP header in it
        return None
    end = pos + total if total else orig_len  # total 0: TSO, the length is the capture's
    return _tcp(
        data,
        pos + header_len,
        end,
        orig_len,
        bytes(data[pos + 12 : pos + 16]),
        bytes(data[pos + 16 : pos + 20]),
        bool(frag & 0x2000),
    )


def _ipv6(data: bytes | memoryview, pos: int, orig_len: int) -> Segment | None:
    if len(data) < pos + 40 or data[pos] >> 4 != 6:
        return None
    (payload_len,) = _U16.unpack_from(data, pos + 4)
    next_header = data[pos + 6]
    src, dst = bytes(data[pos + 8 : pos + 24]), bytes(data[pos + 24 : pos + 40])
    end = pos + 40 + payload_len if payload_len else orig_len  # 0: a jumbogram or TSO
    pos += 40
    fragment = False
    while next_header != PROTO_TCP:
        if len(data) < pos + 8:
            return None
        if next_header == IPV6_FRAGMENT:
            (offset_flags,) = _U16.unpack_from(data, pos + 2)
            if offset_flags & 0xFFF8:
                return None
            fragment = bool(offset_flags & 1)
            next_header, pos = data[pos], pos + 8
        elif next_header == 51:  # AH counts its length in 4-byte words, minus 2
            next_header, pos = data[pos], pos + (data[pos + 1] + 2) * 4
        elif next_header in IPV6_EXTENSIONS:
            next_header, pos = data[pos], pos + (data[pos + 1] + 1) * 8
        else:
            return None
    return _tcp(data, pos, end, orig_len, src, dst, fragment)


def _tcp(
    data: bytes | memoryview,
    pos: int,
    ip_end: int,
    orig_len: int,
    src: bytes,
    dst: bytes,
    fragment: bool,
) -> Segment | None:
    if len(data) < pos + 20:
        return None
    sport, dport, seq, ack, offset, flags = _TCP.unpack_from(data, pos)
    start = pos + (offset >> 4) * 4
    if start > ip_end:
        return None
    captured_end = min(ip_end, len(data))
    payload = bytes(data[start:captured_end]) if captured_end > start else b""
    # Bytes the IP header promises but the capture lacks; only real when the snaplen cut the packet.
    missing = ip_end - max(captured_end, start) if orig_len > len(data) else 0
    return Segment(
        _address(src),
        sport,
        _address(dst),
        dport,
        seq,
        ack,
        flags,
        payload,
        max(missing, 0),
        fragment,
    )
