"""Writing captures: TCP conversations as IPv4/IPv6 packets, link-layer framing, pcap and pcapng files.

For building captures with a known content from the codecs (tests, ``bench/decode.py``, the demo).
Checksums are left zero, as offloading NICs leave them.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

from .layers import ACK, FIN, LINK_ETHERNET, LINK_LOOP, LINK_NULL, LINK_SLL, LINK_SLL2, PSH, SYN

# -- IP and TCP ------------------------------------------------------------------------------------


def tcp_packet(
    src: str,
    sport: int,
    dst: str,
    dport: int,
    seq: int,
    ack: int,
    flags: int,
    payload: bytes = b"",
    ip_options: bytes = b"",
    ipv6_extension: bool = False,
) -> bytes:
    tcp = (
        struct.pack(
            ">HHIIBBHHH",
            sport,
            dport,
            seq & 0xFFFFFFFF,
            ack & 0xFFFFFFFF,
            5 << 4,
            flags,
            65535,
            0,
            0,
        )
        + payload
    )
    if ":" in src:
        next_header, extension = 6, b""
        if ipv6_extension:  # a destination-options header (8 bytes, padding only) before TCP
            next_header, extension = 60, bytes([6, 0, 1, 4, 0, 0, 0, 0])
        return (
            struct.pack(">IHBB", 6 << 28, len(extension) + len(tcp), next_header, 64)
            + socket.inet_pton(socket.AF_INET6, src)
            + socket.inet_pton(socket.AF_INET6, dst)
            + extension
            + tcp
        )
    options = ip_options + b"\0" * (-len(ip_options) % 4)
    header_words = 5 + len(options) // 4
    return (
        struct.pack(
            ">BBHHHBBH4s4s",
            0x40 | header_words,
            0,
            4 * header_words + len(tcp),
            1,
            0x4000,
            64,
            6,
            0,
            socket.inet_aton(src),
            socket.inet_aton(dst),
        )
        + options
        + tcp
    )


def ip_fragments(ip: bytes, size: int, ident: int = 1) -> list[bytes]:
    """``ip`` (an IPv4 packet, or an IPv6 packet whose extension headers may all be fragmented)
    as fragments of at most ``size`` payload bytes each (rounded down to a multiple of 8)."""
    size -= size % 8
    if ip[0] >> 4 == 4:
        header_len = (ip[0] & 0x0F) * 4
        header, payload = ip[:header_len], ip[header_len:]
    else:
        header, payload = ip[:40], ip[40:]
    out = []
    for offset in range(0, len(payload), size):
        piece, more = payload[offset : offset + size], offset + size < len(payload)
        if ip[0] >> 4 == 4:
            fragment = bytearray(header)
            struct.pack_into(
                ">HHH", fragment, 2, header_len + len(piece), ident, (more << 13) | offset // 8
            )
            out.append(bytes(fragment) + piece)
        else:
            extension = struct.pack(">BBHI", header[6], 0, offset | more, ident)
            base = header[:4] + struct.pack(">HBB", 8 + len(piece), 44, header[7]) + header[8:]
            out.append(base + extension + piece)
    return out


@dataclass
class Conversation:
    """Both directions of one TCP connection, as IP packets with timestamps."""

    client: tuple[str, int]
    server: tuple[str, int]
    client_isn: int = 1000
    server_isn: int = 5000
    ip_options: bytes = b""
    ipv6_extension: bool = False
    packets: list[tuple[int, bytes]] = field(default_factory=list)  # (ts_ns, ip packet)

    def __post_init__(self) -> None:
        self.seq = {True: self.client_isn, False: self.server_isn}

    def _packet(
        self,
        from_client: bool,
        ts_ns: int,
        flags: int,
        payload: bytes = b"",
        seq: int | None = None,
        ack: int | None = None,
    ) -> bytes:
        src, dst = (self.client, self.server) if from_client else (self.server, self.client)
        if ack is None:
            ack = self.seq[not from_client] if flags & ACK else 0
        return tcp_packet(
            src[0],
            src[1],
            dst[0],
            dst[1],
            self.seq[from_client] if seq is None else seq,
            ack,
            flags,
            payload,
            self.ip_options,
            self.ipv6_extension,
        )

    def emit(self, ts_ns: int, packet: bytes) -> None:
        self.packets.append((ts_ns, packet))

    def handshake(self, ts_ns: int) -> None:
        self.emit(ts_ns, self._packet(True, ts_ns, SYN))
        self.seq[True] += 1
        self.emit(ts_ns + 1000, self._packet(False, ts_ns, SYN | ACK))
        self.seq[False] += 1
        self.emit(ts_ns + 2000, self._packet(True, ts_ns, ACK))

    def segments(self, from_client: bool, data: bytes, mss: int = 1460) -> list[tuple[int, bytes]]:
        """``data`` cut into ``(seq, payload)`` segments (not yet emitted; advances the sequence)."""
        out = []
        for start in range(0, len(data), mss):
            out.append((self.seq[from_client], data[start : start + mss]))
            self.seq[from_client] += len(data[start : start + mss])
        return out

    def segment_packet(
        self, from_client: bool, seq: int, payload: bytes, ack: int | None = None
    ) -> bytes:
        """A data packet; ``ack`` defaults to all the peer's bytes so far (pass it when segments
        were planned ahead with ``segments``)."""
        return self._packet(from_client, 0, PSH | ACK, payload, seq=seq, ack=ack)

    def send(self, from_client: bool, data: bytes, ts_ns: int, mss: int = 1460) -> None:
        for seq, chunk in self.segments(from_client, data, mss):
            self.emit(ts_ns, self.segment_packet(from_client, seq, chunk))
            ts_ns += 1000

    def send_in_order(
        self, from_client: bool, data: bytes, ts_ns: int, mss: int, order: list[int]
    ) -> None:
        """``data`` cut into segments of ``mss`` bytes and captured in ``order`` (indexes into
        the cut, one packet every microsecond): out of order when the indexes are, and a segment
        whose index is left out is one the capture missed (the peer got it: later packets
        acknowledge it)."""
        planned = self.segments(from_client, data, mss)
        for index in order:
            seq, chunk = planned[index]
            self.emit(ts_ns, self.segment_packet(from_client, seq, chunk))
            ts_ns += 1000

    def close(self, ts_ns: int) -> None:
        self.emit(ts_ns, self._packet(True, ts_ns, FIN | ACK))
        self.seq[True] += 1
        self.emit(ts_ns + 1000, self._packet(False, ts_ns, FIN | ACK))
        self.seq[False] += 1
        self.emit(ts_ns + 2000, self._packet(True, ts_ns, ACK))


# -- link layers -----------------------------------------------------------------------------------


def link_frame(linktype: int, ip: bytes, vlans: tuple[int, ...] = ()) -> bytes:
    ethertype = 0x86DD if ip[0] >> 4 == 6 else 0x0800
    if linktype == LINK_ETHERNET:
        tags = b"".join(
            struct.pack(">HH", 0x88A8 if i == 0 and len(vlans) > 1 else 0x8100, v)
            for i, v in enumerate(vlans)
        )
        return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02" + tags + struct.pack(">H", ethertype) + ip
    if linktype == LINK_SLL:
        return struct.pack(">HHH8sH", 0, 1, 6, b"\x02\0\0\0\0\x01\0\0", ethertype) + ip
    if linktype == LINK_SLL2:
        return struct.pack(">HHIHBB8s", ethertype, 0, 1, 1, 0, 6, b"\x02\0\0\0\0\x01\0\0") + ip
    if linktype == LINK_NULL:
        return struct.pack("<I", 2 if ethertype == 0x0800 else 30) + ip
    if linktype == LINK_LOOP:
        return struct.pack(">I", 2 if ethertype == 0x0800 else 24) + ip
    return ip  # raw IP


# -- files -----------------------------------------------------------------------------------------


def pcap_bytes(
    packets: list[tuple[int, bytes]],
    linktype: int,
    nanosecond: bool = False,
    endian: str = "<",
    snaplen: int = 65535,
) -> bytes:
    """A pcap file of ``(ts_ns, link frame)`` packets; frames longer than ``snaplen`` are cut."""
    magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    out = bytearray(struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
    for ts_ns, frame in packets:
        frac = ts_ns % 1_000_000_000 if nanosecond else (ts_ns % 1_000_000_000) // 1000
        kept = frame[:snaplen]
        out += (
            struct.pack(endian + "IIII", ts_ns // 1_000_000_000, frac, len(kept), len(frame)) + kept
        )
    return bytes(out)


def _block(endian: str, kind: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    length = len(body) + 12
    return struct.pack(endian + "II", kind, length) + body + struct.pack(endian + "I", length)


def _option(endian: str, code: int, value: bytes) -> bytes:
    return struct.pack(endian + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def pcapng_section(
    interfaces: list[tuple[int, int | None]],
    packets: list[tuple[int, int, bytes]],
    endian: str = "<",
    simple: bool = False,
) -> bytes:
    """One pcapng section: interfaces ``(linktype, tsresol byte or None)`` and packets
    ``(interface, ts_ns, frame)`` as EPBs (or SPBs with ``simple``), with a name option and a
    comment to skip."""
    out = bytearray(
        _block(
            endian,
            0x0A0D0D0A,
            struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1)
            + _option(endian, 1, b"synthetic section")
            + _option(endian, 0, b""),
        )
    )
    for linktype, tsresol in interfaces:
        options = _option(endian, 2, b"eth0")
        if tsresol is not None:
            options += _option(endian, 9, bytes([tsresol]))
        out += _block(
            endian,
            1,
            struct.pack(endian + "HHI", linktype, 0, 0) + options + _option(endian, 0, b""),
        )
    resolutions = [_units(tsresol) for _, tsresol in interfaces]
    for iface, ts_ns, frame in packets:
        if simple:
            out += _block(endian, 3, struct.pack(endian + "I", len(frame)) + frame)
            continue
        ticks = ts_ns * resolutions[iface] // 1_000_000_000
        out += _block(
            endian,
            6,
            struct.pack(
                endian + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), len(frame)
            )
            + frame
            + b"\0" * (-len(frame) % 4)
            + _option(endian, 1, b"c"),
        )
    return bytes(out)


def _units(tsresol: int | None) -> int:
    if tsresol is None:
        return 1_000_000
    return 1 << (tsresol & 0x7F) if tsresol & 0x80 else int(10**tsresol)
