"""The Kafka frames of a loopback pcap, read without kraftwire's decoders: the truth the corpus tests
hold the decoders to.

A small reader of its own (classic pcap, Ethernet, IPv4, TCP) puts each direction of each
connection back together by sequence number and cuts it into size-prefixed frames. A frame's
``packet`` is the number (from 1, as tshark counts) of the packet after which all of its bytes had
arrived. The corpus is recorded on loopback, where nothing is lost: a hole in a stream is an error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">"}  # microsecond pcap
NANO_MAGICS = {b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}
ETHERNET, IPV4, TCP = 1, 0x0800, 6
SYN = 0x02


@dataclass
class WireFrame:
    payload: bytes  # without its 4-byte size
    packet: int  # the packet that completed it


@dataclass
class Direction:
    """One direction of a TCP connection: its segments by sequence number, and its frames."""

    start: int | None = None  # the first payload byte's sequence number (after the SYN)
    segments: dict[int, tuple[bytes, int]] = field(default_factory=dict)  # seq -> (payload, packet)

    def add(self, seq: int, payload: bytes, packet: int) -> None:
        kept = self.segments.get(seq)
        if kept is None or len(kept[0]) < len(payload):
            self.segments[seq] = (payload, packet)

    def stream(self) -> tuple[bytes, list[tuple[int, int]]]:
        """The bytes in order, and (end offset, packet) each time the contiguous end grew, in
        packet order (so out-of-order arrivals complete data when the hole is filled)."""
        if not self.segments:
            return b"", []
        start = self.start if self.start is not None else min(self.segments)
        data = bytearray()
        for seq in sorted(self.segments):
            payload, _ = self.segments[seq]
            offset = (seq - start) % (1 << 32)
            if offset > len(data):
                raise ValueError(f"a hole of {offset - len(data)} bytes at offset {len(data)}")
            data[offset : offset + len(payload)] = payload
        growth: list[tuple[int, int]] = []
        arrived: list[tuple[int, int, int]] = sorted(
            (packet, (seq - start) % (1 << 32), len(payload))
            for seq, (payload, packet) in self.segments.items()
        )
        have: list[tuple[int, int]] = []  # ranges received so far
        end = 0
        for packet, offset, length in arrived:
            have.append((offset, offset + length))
            grown = end
            for lo, hi in sorted(have):
                if lo <= grown < hi:
                    grown = hi
            if grown > end:
                end = grown
                growth.append((end, packet))
        return bytes(data), growth

    def frames(self) -> list[WireFrame]:
        data, growth = self.stream()
        frames: list[WireFrame] = []
        pos = 0
        while pos + 4 <= len(data):
            (size,) = struct.unpack_from(">i", data, pos)
            end = pos + 4 + size
            if size < 0 or end > len(data):
                raise ValueError(f"a frame of {size} bytes at offset {pos} runs past the stream")
            packet = next(p for grown, p in growth if grown >= end)
            frames.append(WireFrame(data[pos + 4 : end], packet))
            pos = end
        if pos != len(data):
            raise ValueError(f"{len(data) - pos} bytes after the last whole frame")
        return frames


@dataclass
class Connection:
    client: tuple[str, int]
    server: tuple[str, int]
    requests: Direction = field(default_factory=Direction)
    responses: Direction = field(default_factory=Direction)


def packet_times(path: Path) -> dict[int, int]:
    """packet number -> its timestamp in nanoseconds since the epoch."""
    return {number: ts_ns for number, ts_ns, _ in _packets(path)}


def _packets(path: Path):
    """(packet number, timestamp in ns, Ethernet frame bytes) of a classic pcap."""
    data = path.read_bytes()
    order = PCAP_MAGICS.get(data[:4]) or NANO_MAGICS.get(data[:4])
    if order is None:
        raise ValueError(f"{path}: not a classic pcap")
    (linktype,) = struct.unpack_from(order + "I", data, 20)
    if linktype != ETHERNET:
        raise ValueError(f"{path}: link type {linktype}, not Ethernet")
    fraction = 1 if data[:4] in NANO_MAGICS else 1000  # ns per unit of the second's fraction
    pos, number = 24, 0
    while pos + 16 <= len(data):
        seconds, part, captured, length = struct.unpack_from(order + "IIII", data, pos)
        if captured != length:
            raise ValueError(f"{path}: packet {number + 1} cut by the snap length")
        number += 1
        yield number, seconds * 10**9 + part * fraction, data[pos + 16 : pos + 16 + captured]
        pos += 16 + captured


def _address(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)


def connections(path: Path, server_ports: set[int]) -> list[Connection]:
    """Every TCP connection to one of ``server_ports``, in the order of its first packet."""
    found: dict[tuple, Connection] = {}
    for number, _, frame in _packets(path):
        if struct.unpack_from(">H", frame, 12)[0] != IPV4:
            continue
        ip = frame[14:]
        header, total, protocol = (ip[0] & 0x0F) * 4, struct.unpack_from(">H", ip, 2)[0], ip[9]
        if protocol != TCP:
            continue
        src, dst = (_address(ip[12:16]),), (_address(ip[16:20]),)
        tcp = ip[header:total]
        sport, dport, seq = struct.unpack_from(">HHI", tcp)
        flags, payload = tcp[13], tcp[(tcp[12] >> 4) * 4 :]
        to_server = dport in server_ports
        client = (src[0], sport) if to_server else (dst[0], dport)
        server = (dst[0], dport) if to_server else (src[0], sport)
        conn = found.setdefault((client, server), Connection(client, server))
        side = conn.requests if to_server else conn.responses
        if flags & SYN:
            side.start = (seq + 1) % (1 << 32)
        if payload:
            side.add(seq, bytes(payload), number)
    return list(found.values())
