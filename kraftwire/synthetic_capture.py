"""Writing captures: TCP conversations as IPv4/IPv6 packets, link-layer framing, pcap and pcapng files.

One writer for the two kinds of synthetic capture kraftwire makes:

- captures with a known content built from the codecs (tests, ``bench/decode.py``): a ``Conversation``
  collects its packets with their timestamps, ``pcap_bytes`` / ``pcapng_section`` write them, in any
  link layer, byte order or timestamp resolution, checksums left zero as offloading NICs leave them;
- the node's ``--capture FILE.pcapng``: a ``CaptureFile`` records every frame the node sends and
  receives as it happens, one ``CapturedStream`` per connection (a three-way handshake when it opens,
  data segments whose sequence and acknowledgement numbers follow the bytes each side sent, FIN/ACK
  when it closes), on Ethernet with the real addresses and ports and real checksums, flushed after
  every packet so that a kill -9 leaves a readable capture up to the last whole packet.

It sits at the package's root, below ``kraftwire.node`` and ``kraftwire.spark_decoders``, because both
write captures and neither may import the other; it imports nothing of kraftwire's.
"""

from __future__ import annotations

import ipaddress
import random
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import BinaryIO

# TCP flags and pcap link types (the numbers of tcpdump's LINKTYPE_ list).
FIN, SYN, PSH, ACK = 0x01, 0x02, 0x08, 0x10
LINK_NULL, LINK_ETHERNET, LINK_LOOP, LINK_SLL, LINK_SLL2 = 0, 1, 108, 113, 276
TCP_PROTOCOL = 6
# pcapng block types: section header, interface description, simple and enhanced packet.
SHB, IDB, SPB, EPB = 0x0A0D0D0A, 1, 3, 6
# The Ethernet addresses (destination, source) of the built captures; the node's are zero.
_SYNTHETIC_MACS = b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02"

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
    checksums: bool = False,
    ident: int = 1,
) -> bytes:
    """One TCP segment in an IP packet (IPv6 when ``src`` is an IPv6 address); ``checksums`` fills
    in the TCP and IPv4 header checksums, else they are left zero. ``ident``: the IPv4 identification.
    """
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
        return _ipv6_packet(src, dst, tcp, ipv6_extension, checksums)
    return _ipv4_packet(src, dst, tcp, ip_options, checksums, ident)


def _ipv6_packet(src: str, dst: str, tcp: bytes, extension_header: bool, checksums: bool) -> bytes:
    source = socket.inet_pton(socket.AF_INET6, src)
    destination = socket.inet_pton(socket.AF_INET6, dst)
    if checksums:
        pseudo = source + destination + struct.pack(">I3xB", len(tcp), TCP_PROTOCOL)
        tcp = _with_checksum(tcp, 16, pseudo + tcp)
    next_header, extension = TCP_PROTOCOL, b""
    if extension_header:  # a destination-options header (8 bytes, padding only) before TCP
        next_header, extension = 60, bytes([TCP_PROTOCOL, 0, 1, 4, 0, 0, 0, 0])
    return (
        struct.pack(">IHBB", 6 << 28, len(extension) + len(tcp), next_header, 64)
        + source
        + destination
        + extension
        + tcp
    )


def _ipv4_packet(
    src: str, dst: str, tcp: bytes, ip_options: bytes, checksums: bool, ident: int
) -> bytes:
    source, destination = socket.inet_aton(src), socket.inet_aton(dst)
    if checksums:
        pseudo = source + destination + struct.pack(">BBH", 0, TCP_PROTOCOL, len(tcp))
        tcp = _with_checksum(tcp, 16, pseudo + tcp)
    options = ip_options + b"\0" * (-len(ip_options) % 4)
    header_words = 5 + len(options) // 4
    header = (
        struct.pack(
            ">BBHHHBBH4s4s",
            0x40 | header_words,
            0,
            4 * header_words + len(tcp),
            ident,
            0x4000,
            64,
            TCP_PROTOCOL,
            0,
            source,
            destination,
        )
        + options
    )
    if checksums:
        header = _with_checksum(header, 10, header)
    return header + tcp


def _with_checksum(data: bytes, at: int, covered: bytes) -> bytes:
    """``data`` with the Internet checksum of ``covered`` written at offset ``at``."""
    return data[:at] + struct.pack(">H", _checksum(covered)) + data[at + 2 :]


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    total = sum(memoryview(data).cast("H"))  # native order; folded and swapped below
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    folded = ~total & 0xFFFF
    return int.from_bytes(folded.to_bytes(2, "little"), "big")


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


def link_frame(
    linktype: int, ip: bytes, vlans: tuple[int, ...] = (), macs: bytes = _SYNTHETIC_MACS
) -> bytes:
    """``ip`` in a frame of ``linktype``; on Ethernet with ``vlans`` tags and the 12 bytes of
    destination and source addresses ``macs``."""
    ethertype = 0x86DD if ip[0] >> 4 == 6 else 0x0800
    if linktype == LINK_ETHERNET:
        tags = b"".join(
            struct.pack(">HH", 0x88A8 if i == 0 and len(vlans) > 1 else 0x8100, v)
            for i, v in enumerate(vlans)
        )
        return macs + tags + struct.pack(">H", ethertype) + ip
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


def pcapng_block(kind: int, body: bytes, endian: str = "<") -> bytes:
    """One pcapng block: type, total length, body padded to 32 bits, the length again."""
    body += b"\0" * (-len(body) % 4)
    length = len(body) + 12
    return struct.pack(endian + "II", kind, length) + body + struct.pack(endian + "I", length)


def _option(endian: str, code: int, value: bytes) -> bytes:
    return struct.pack(endian + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def section_header(options: bytes = b"", endian: str = "<") -> bytes:
    """A section header block (version 1.0, section length unknown)."""
    return pcapng_block(SHB, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1) + options, endian)


def interface_block(linktype: int, snaplen: int, options: bytes = b"", endian: str = "<") -> bytes:
    return pcapng_block(IDB, struct.pack(endian + "HHI", linktype, 0, snaplen) + options, endian)


def packet_block(
    interface: int, ticks: int, frame: bytes, options: bytes = b"", endian: str = "<"
) -> bytes:
    """An enhanced packet block: ``frame`` captured whole at ``ticks`` of its interface's units."""
    head = struct.pack(
        endian + "IIIII", interface, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), len(frame)
    )
    return pcapng_block(EPB, head + frame + b"\0" * (-len(frame) % 4) + options, endian)


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
        section_header(_option(endian, 1, b"synthetic section") + _option(endian, 0, b""), endian)
    )
    for linktype, tsresol in interfaces:
        options = _option(endian, 2, b"eth0")
        if tsresol is not None:
            options += _option(endian, 9, bytes([tsresol]))
        out += interface_block(linktype, 0, options + _option(endian, 0, b""), endian)
    resolutions = [_units(tsresol) for _, tsresol in interfaces]
    for iface, ts_ns, frame in packets:
        if simple:
            out += pcapng_block(SPB, struct.pack(endian + "I", len(frame)) + frame, endian)
            continue
        ticks = ts_ns * resolutions[iface] // 1_000_000_000
        out += packet_block(iface, ticks, frame, _option(endian, 1, b"c"), endian)
    return bytes(out)


def _units(tsresol: int | None) -> int:
    if tsresol is None:
        return 1_000_000
    units: int = 1 << (tsresol & 0x7F) if tsresol & 0x80 else int(10**tsresol)
    return units


# -- a capture recorded as it happens (the node's --capture) ---------------------------------------

_MAX_SEGMENT = 65535 - 40
_ZERO_MACS = b"\x00" * 12
_LIVE_SNAPLEN = 262144


class CapturedStream:
    """One recorded TCP connection: ``client`` opened it to ``server`` (each an (ip, port) pair)."""

    def __init__(
        self, capture: CaptureFile, client: tuple[str, int], server: tuple[str, int]
    ) -> None:
        self.capture = capture
        self.ends = {"client": client, "server": server}
        self.next_seq = {"client": random.getrandbits(32), "server": random.getrandbits(32)}
        self.closed = False
        self._segment("client", SYN, b"")
        self._segment("server", SYN | ACK, b"")
        self._segment("client", ACK, b"")

    def sent_by(self, side: str, data: bytes) -> None:
        """``side`` ("client" or "server") sent ``data`` on this connection."""
        for start in range(0, len(data), _MAX_SEGMENT):
            self._segment(side, PSH | ACK, data[start : start + _MAX_SEGMENT])

    def close(self, side: str = "client") -> None:
        if self.closed:
            return
        self.closed = True
        other = "server" if side == "client" else "client"
        self._segment(side, FIN | ACK, b"")
        self._segment(other, FIN | ACK, b"")
        self._segment(side, ACK, b"")

    def _segment(self, side: str, flags: int, payload: bytes) -> None:
        other = "server" if side == "client" else "client"
        (src, sport), (dst, dport) = self.ends[side], self.ends[other]
        seq = self.next_seq[side]
        ack = self.next_seq[other] if flags & ACK else 0
        self.next_seq[side] = (seq + len(payload) + (1 if flags & (SYN | FIN) else 0)) & 0xFFFFFFFF
        self.capture.packet(src, sport, dst, dport, seq, ack, flags, payload)


class CaptureFile:
    """A pcapng file of one Ethernet interface, written a packet at a time with real checksums."""

    def __init__(self, path: str) -> None:
        self.file: BinaryIO = open(path, "xb")  # never overwrite a file we did not create
        self.file.write(section_header())
        self.file.write(interface_block(LINK_ETHERNET, _LIVE_SNAPLEN))
        self.file.flush()
        self.packets = 0

    def stream(self, client: tuple[str, int], server: tuple[str, int]) -> CapturedStream:
        return CapturedStream(self, client, server)

    def packet(
        self,
        src: str,
        sport: int,
        dst: str,
        dport: int,
        seq: int,
        ack: int,
        flags: int,
        payload: bytes,
    ) -> None:
        source, destination = _ip(src), _ip(dst)
        if source.version != destination.version:  # a v4-mapped end: write both as IPv6
            source, destination = _as_ipv6(source), _as_ipv6(destination)
        ip = tcp_packet(
            str(source),
            sport,
            str(destination),
            dport,
            seq,
            ack,
            flags,
            payload,
            checksums=True,
            ident=0,
        )
        frame = link_frame(LINK_ETHERNET, ip, macs=_ZERO_MACS)
        self.file.write(packet_block(0, int(time.time() * 1_000_000), frame))
        self.file.flush()
        self.packets += 1

    def close(self) -> None:
        self.file.close()


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _ip(text: str) -> IPAddress:
    """The address of ``text``; an IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4
    peer) is the IPv4 address it carries."""
    address = ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%lo)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _as_ipv6(address: IPAddress) -> ipaddress.IPv6Address:
    if isinstance(address, ipaddress.IPv6Address):
        return address
    return ipaddress.IPv6Address(b"\x00" * 10 + b"\xff\xff" + address.packed)
