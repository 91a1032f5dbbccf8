"""Local decoding: capture files -> packets -> TCP segments -> connections -> exchange rows.

``decode_files`` reads a set of captures as one stream of traffic (rotated files continue each other's
connections; files are taken in order of their first timestamp). Spark's second stage feeds the same
``FlowTable`` with the segments of one connection, so both give the same rows.
"""

from __future__ import annotations

import gc
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .bodies import BodyDecoder
from .capture import CaptureStats, PacketFilter, PcapFile, PcapReader, capture_format
from .connection import DEFAULT_SERVER_PORTS, Connection
from .exchanges import packet_ref
from .fragments import FragmentReassembler
from .layers import Segment, tcp_segment
from .pcapng import PcapngReader
from .tables import EXCHANGES, connection_class, sort_key


@dataclass
class DecodeOptions:
    server_ports: frozenset[int] = DEFAULT_SERVER_PORTS
    table: str = EXCHANGES  # or FRAMES, CONNECTIONS (see ``tables``)


def open_reader(buf, stats: CaptureStats) -> tuple[PcapReader | PcapngReader, int]:
    """A packet reader for the capture in ``buf`` (pcap or pcapng); CaptureError if it is neither."""
    if capture_format(buf) == "pcapng":
        return PcapngReader(buf, stats), 0
    return PcapReader(buf, PcapFile.parse(buf), stats), 24


def segments(
    buf,
    start: int | None,
    stop: int,
    stats: CaptureStats,
    first_number: int = 1,
    skips: PacketFilter | None = None,
) -> Iterator[tuple[int, int, Segment]]:
    """``(packet number, ts_ns, segment)`` for each TCP packet whose record starts in the range
    (``start`` None: from the first record; a fragmented datagram at the packet that completes
    it). ``skips`` may pass over packets before they are even built (a shard's packets of other
    shards: ``ownership``)."""
    reader, header_end = open_reader(buf, stats)
    if start is None:
        start = header_end
    fragments = FragmentReassembler(stats)
    for packet in reader.records(start, stop, first_number, skips):
        seg = tcp_segment(packet.linktype, packet.data, packet.orig_len)
        if seg is None or seg.fragment:
            seg = fragments.packet(packet.linktype, packet.data, packet.ts_ns)
        if seg is not None:
            yield packet.number, packet.ts_ns, seg
    fragments.finish()


def flow_key(seg: Segment) -> tuple:
    a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
    return (a, b) if a <= b else (b, a)


@dataclass
class FlowTable:
    """Every connection of a set of captures; emits rows through ``emit``."""

    capture_files: tuple[str, ...]
    bodies: BodyDecoder
    emit: Callable[[dict], None]
    options: DecodeOptions = field(default_factory=DecodeOptions)
    flows: dict[tuple, Connection] = field(default_factory=dict)
    connections: int = 0

    def segment(self, seg: Segment, ref: int, ts_ns: int) -> None:
        key = flow_key(seg)
        conn = self.flows.get(key)
        if conn is not None and conn.is_new_connection(seg):
            conn.finish()
            conn = None
        if conn is None:
            if not seg.payload and not seg.flags & 0x02:
                return  # a bare ACK/FIN of a connection we never saw carry anything
            conn = self.flows[key] = connection_class(self.options.table)(
                seg, ts_ns, self.capture_files, self.bodies, self.options.server_ports, self.emit
            )
            self.connections += 1
        conn.segment(seg, ref, ts_ns)

    def finish(self) -> None:
        for conn in self.flows.values():
            conn.finish()
        self.flows.clear()


class CollectorPaused:
    """``with CollectorPaused():`` runs its block with Python's cyclic garbage collector off.

    A decode keeps every row it makes until the end, and each full collection walks all of them
    again: about a tenth of the decode's time, for nothing, since rows and the decoders' state hold
    no reference cycles (reference counting frees all else as before). A collection runs as usual
    once the block ends. The collector is left as it was found (off stays off).
    """

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self.was_enabled:
            gc.enable()


def first_timestamp(path: str) -> int:
    with open(path, "rb") as handle:
        head = handle.read(1 << 16)
    try:
        reader, start = open_reader(head, CaptureStats())
        for packet in reader.records(start, len(head)):
            return packet.ts_ns
    except ValueError:  # not a capture: ordered first, and reported when it is decoded
        pass
    return 0


def map_file(path: str):
    """The file's bytes, memory-mapped (empty files as b"")."""
    with open(path, "rb") as handle:
        if Path(path).stat().st_size == 0:
            return b""
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def decode_files(
    paths: Iterable[str],
    bodies: BodyDecoder,
    options: DecodeOptions | None = None,
    on_packet: Callable[[int], None] | None = None,
) -> tuple[list[dict], dict[str, CaptureStats]]:
    """Decode captures as one traffic stream into rows of ``options.table`` (sorted by file and
    packet), and stats per file."""
    # Absolute, as Spark's readers see them (their executors run in other directories).
    files = tuple(
        sorted((os.path.abspath(p) for p in paths), key=lambda p: (first_timestamp(p), p))
    )
    rows: list[dict] = []
    table = FlowTable(files, bodies, rows.append, options or DecodeOptions())
    stats: dict[str, CaptureStats] = {}
    with CollectorPaused():
        for index, path in enumerate(files):
            file_stats = stats[path] = CaptureStats()
            buf = map_file(path)
            try:
                for number, ts_ns, seg in segments(buf, None, len(buf), file_stats):
                    table.segment(seg, packet_ref(index, number), ts_ns)
                    if on_packet is not None and not number % 65536:
                        on_packet(number)
            except ValueError as exc:  # not a capture: reported, the other files still decode
                file_stats.note(str(exc))
        table.finish()
        # Sorted with the collector still off: the sort keys are tens of thousands of new
        # tuples, and the collections they would set off walk every row made so far.
        rows.sort(key=sort_key(table.options.table))
    return rows, stats
