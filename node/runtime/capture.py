"""``--capture FILE.pcapng``: every frame the node sends and receives, written as TCP packets over IPv4
or IPv6 (as the connection is) on Ethernet with the real addresses and ports, so a quorum can be
captured without root.

Each connection becomes a synthetic TCP stream: a three-way handshake when it opens, data segments
whose sequence and acknowledgement numbers follow the bytes each side has sent (so Wireshark and the
decoders reassemble frames across segments), and FIN/ACK when it closes. Checksums are real. The file
is flushed after every packet, so a kill -9 leaves a readable capture up to the last whole packet.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import struct
import time
from typing import BinaryIO

_SHB = 0x0A0D0D0A
_IDB, _EPB = 1, 6
LINKTYPE_ETHERNET = 1
ETHERTYPE_IPV4, ETHERTYPE_IPV6 = 0x0800, 0x86DD
TCP_PROTOCOL = 6
_MAX_SEGMENT = 65535 - 40
SYN, FIN, PSH, ACK = 0x02, 0x01, 0x08, 0x10


def _block(block_type: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    length = len(body) + 12
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    total = sum(memoryview(data).cast("H"))  # native order; folded and swapped below
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    folded = ~total & 0xFFFF
    return int.from_bytes(folded.to_bytes(2, "little"), "big")


class Stream:
    """One captured TCP connection: ``client`` opened it to ``server`` (each an (ip, port) pair)."""

    def __init__(
        self, capture: "Capture", client: tuple[str, int], server: tuple[str, int]
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


class Capture:
    def __init__(self, path: str) -> None:
        self.file: BinaryIO = open(path, "xb")  # never overwrite a file we did not create
        self.file.write(_block(_SHB, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        self.file.write(_block(_IDB, struct.pack("<HHI", LINKTYPE_ETHERNET, 0, 262144)))
        self.file.flush()
        self.packets = 0

    def stream(self, client: tuple[str, int], server: tuple[str, int]) -> Stream:
        return Stream(self, client, server)

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
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
        if source.version != destination.version:  # a v4-mapped end: write both as IPv6
            source, destination = _as_ipv6(source), _as_ipv6(destination)
        length = len(tcp) + len(payload)
        if source.version == 4:
            pseudo = (
                source.packed + destination.packed + struct.pack(">BBH", 0, TCP_PROTOCOL, length)
            )
        else:
            pseudo = source.packed + destination.packed + struct.pack(">I3xB", length, TCP_PROTOCOL)
        tcp = tcp[:16] + struct.pack(">H", _checksum(pseudo + tcp + payload)) + tcp[18:]
        if source.version == 4:
            ip = _ipv4_header(source, destination, length)
            ethertype = ETHERTYPE_IPV4
        else:
            ip = struct.pack(">IHBB", 6 << 28, length, TCP_PROTOCOL, 64)
            ip += source.packed + destination.packed
            ethertype = ETHERTYPE_IPV6
        frame = b"\x00" * 12 + struct.pack(">H", ethertype) + ip + tcp + payload
        micros = int(time.time() * 1_000_000)
        body = (
            struct.pack("<IIIII", 0, micros >> 32, micros & 0xFFFFFFFF, len(frame), len(frame))
            + frame
        )
        self.file.write(_block(_EPB, body))
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


def _ipv4_header(source: IPAddress, destination: IPAddress, length: int) -> bytes:
    ip = struct.pack(
        ">BBHHHBBH4s4s",
        0x45,
        0,
        20 + length,
        0,
        0x4000,
        64,
        TCP_PROTOCOL,
        0,
        source.packed,
        destination.packed,
    )
    return ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]


def addresses(writer: asyncio.StreamWriter) -> tuple[tuple[str, int], tuple[str, int]]:
    """(local, remote) (ip, port) of an asyncio stream writer, IPv4 or IPv6."""
    local = writer.get_extra_info("sockname")
    remote = writer.get_extra_info("peername")
    return (local[0], local[1]), (remote[0], remote[1])
