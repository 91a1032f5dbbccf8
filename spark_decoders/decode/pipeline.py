"""Local decoding: capture files -> packets -> TCP segments -> connections -> exchange rows.

``decode_files`` reads a set of captures as one stream of traffic (rotated files continue each other's
connections; files are taken in order of their first timestamp). Spark's second stage feeds the same
``FlowTable`` with the segments of one connection, so both give the same rows.

Each file goes in through ``feed_file``. Most packets of a capture are the same plain case (untagged
Ethernet, IPv4 without options or fragmentation, TCP without SYN or RST) of a connection already
seen; ``FlowTable.common_packet`` hands those from the capture's bytes straight to their connection,
without the ``Segment``, flow key and address text the general path (``segments``, then
``FlowTable.segment``) builds for every other packet. The general path teaches the table each
connection's raw endpoint bytes, and the two give the same rows (``tests/spark/test_fused_path.py``).
"""

from __future__ import annotations

import gc
import mmap
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final, Iterable, Iterator

from ..kafka.bodies import BodyDecoder
from ..packets.capture import (
    CHUNK_BYTES,
    CaptureBuffer,
    CaptureError,
    CaptureStats,
    PacketFilter,
    shown_name,
)
from ..kafka.connection import DEFAULT_SERVER_PORTS, Connection
from ..kafka.exchanges import FILE_SHIFT, packet_ref
from ..packets.fragments import FragmentReassembler
from ..packets.layers import (
    ETH_IPV4,
    ETH_IPV4_ENDPOINTS,
    ETH_IPV4_TCP_MIN,
    LINK_ETHERNET,
    PROTO_TCP,
    RST,
    SYN,
    FlowKey,
    Segment,
    eth_ipv4_tcp_common,
    flow_key,
    tcp_segment,
)
from ..packets.readers import open_reader
from ..kafka.rows import OrderedRows, Row
from ..output.tables import EXCHANGES, connection_class, sort_key


@dataclass
class DecodeOptions:
    server_ports: frozenset[int] = DEFAULT_SERVER_PORTS
    table: str = EXCHANGES  # or FRAMES, CONNECTIONS (see ``tables``)


def segments(
    buf: CaptureBuffer,
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


class Direction:
    """One direction of a connection as ``FlowTable.common_packet`` finds it: its connection (None
    for another shard's), whether the client sends it, its raw endpoints as three signed 32-bit
    numbers (addresses, then both ports), and the key of the direction the other way. It refers
    to no other direction: the decode's objects make no reference cycles (``CollectorPaused``)."""

    __slots__ = ("conn", "from_client", "src", "dst", "ports", "reversed_key")

    def __init__(self, endpoints: bytes, conn: Connection | None, from_client: bool) -> None:
        src, dst, ports = _unpack_endpoints(endpoints)
        self.conn = conn
        self.from_client = from_client
        # Typed, so that the compiled build holds machine integers (``unpack`` says Any).
        self.src: int = src
        self.dst: int = dst
        self.ports: int = ports
        self.reversed_key = reversed_endpoints(endpoints)

    def holds(self, src: int, dst: int, ports: int) -> bool:
        return self.ports == ports and self.src == src and self.dst == dst


def reversed_endpoints(endpoints: bytes) -> bytes:
    """Raw endpoints (``layers.ETH_IPV4_ENDPOINTS``) the other way: addresses and ports swapped."""
    return endpoints[4:8] + endpoints[0:4] + endpoints[10:12] + endpoints[8:10]


_unpack_endpoints: Final = struct.Struct(">iii").unpack


@dataclass
class FlowTable:
    """Every connection of a set of captures; emits rows through ``emit``.

    ``segment`` takes any segment. ``common_packet`` is the fast path for the packets that make up
    nearly all of a capture, read straight from the capture's bytes (see ``feed_file_in_steps``).
    """

    capture_files: tuple[str, ...]  # as rows show them: ``capture.shown_name``
    bodies: BodyDecoder
    emit: Callable[[Row], None]
    options: DecodeOptions = field(default_factory=DecodeOptions)
    flows: dict[FlowKey, Connection] = field(default_factory=dict)
    connections: int = 0
    # Raw endpoint bytes of an Ethernet/IPv4 packet (``layers.ETH_IPV4_ENDPOINTS``) -> its
    # connection, and whether the client sent it: learnt from the segments ``segment`` took. A
    # direction without a connection marks one a shard passes over (``_PacketPaths.route``).
    directions: dict[bytes, Direction] = field(default_factory=dict)
    # The direction ``common_packet`` found last and the one the other way, both None after any
    # change to ``directions``: looked at before the dictionary.
    last_found: Direction | None = None
    last_reverse: Direction | None = None

    def __post_init__(self) -> None:
        self.capture_files = tuple(shown_name(path) for path in self.capture_files)

    def segment(self, seg: Segment, ref: int, ts_ns: int) -> None:
        key = flow_key(seg)
        conn = self.flows.get(key)
        if conn is not None and conn.is_new_connection(seg):
            conn.finish()
            conn = None
        if conn is None:
            if not seg.payload and not seg.flags & SYN:
                return  # a bare ACK/FIN of a connection we never saw carry anything
            conn = self.flows[key] = connection_class(self.options.table)(
                seg, ts_ns, self.capture_files, self.bodies, self.options.server_ports, self.emit
            )
            self.connections += 1
        conn.segment(seg, ref, ts_ns)

    def learn(self, endpoints: bytes, seg: Segment) -> None:
        """Remember the connection ``seg`` went to (``segment`` just took it) under the raw
        endpoint bytes of its packet, so that ``common_packet`` finds it."""
        known = self.directions.get(endpoints)
        conn = self.flows.get(flow_key(seg))
        if conn is not None and (known is None or known.conn is not conn):
            self.set_direction(endpoints, conn, conn.client == (seg.src, seg.sport))

    def set_direction(self, endpoints: bytes, conn: Connection | None, from_client: bool) -> None:
        self.directions[endpoints] = Direction(endpoints, conn, from_client)
        self.last_found = self.last_reverse = None  # either may be the direction replaced

    def common_packet(
        self, data: bytes, at: int, captured: int, orig_len: int, ref: int, ts_ns: int
    ) -> bool:
        """Take the Ethernet frame at ``data[at:at + captured]`` when it is the common case: IPv4
        without options or fragmentation, TCP without SYN or RST, all its bytes captured, of a
        connection ``learn`` knows that has not finished. The connection gets what ``segment``
        would give it, without the ``Segment``; a direction ``pass_over`` marked (another
        shard's) gets nothing. False, having done nothing, for any other packet.
        """
        (
            ethertype,
            version_ihl,
            total,
            frag,
            proto,
            src,
            dst,
            ports,
            seq,
            ack,
            offset,
            flags,
        ) = eth_ipv4_tcp_common(data, at)
        if (
            ethertype != ETH_IPV4
            or version_ihl != 0x45
            or proto != PROTO_TCP
            or frag & 0x3FFF  # a fragment: more follow, or an offset
            or flags & _SYN_RST  # what a connection or the table itself must see in a Segment
        ):
            return False
        start = 34 + (offset >> 4) * 4
        ip_end = 14 + total if total else orig_len  # total 0: TSO, as in ``layers``
        end = ip_end if ip_end < captured else captured
        if start > ip_end or (orig_len > captured and ip_end > captured):
            return False  # no TCP payload where the header says, or the snaplen cut some off
        direction = self._recent(src, dst, ports)
        if direction is None:
            direction = self._look_up(data[at + _ENDPOINTS_START : at + _ENDPOINTS_STOP])
        if direction is None:
            return False
        conn = direction.conn
        if conn is None:
            return True  # another shard's connection: passed over, as its ``skips`` would
        if conn.finished:
            return False
        payload = data[at + start : at + end] if end > start else b""
        conn.carry(direction.from_client, seq, ack, flags, payload, 0, ref, ts_ns)
        return True

    def _recent(self, src: int, dst: int, ports: int) -> Direction | None:
        """The direction of the Ethernet/IPv4 packet with endpoints ``src``, ``dst``, ``ports``
        (``layers.eth_ipv4_tcp_common``'s numbers) when it is the one ``common_packet`` found last
        or the one the other way: an exchange's packets mostly go back and forth on one
        connection, and this spares them the endpoint bytes and the dictionary. None for any
        other packet."""
        last, reverse = self.last_found, self.last_reverse
        if last is not None and last.holds(src, dst, ports):
            return last
        if reverse is not None and reverse.holds(src, dst, ports):
            return reverse
        return None

    def _look_up(self, endpoints: bytes) -> Direction | None:
        """``directions[endpoints]``, remembered with the direction the other way for ``_recent``
        (its key's hash is kept by the bytes object, so that look-up is the cheaper one)."""
        found = self.last_found = self.directions.get(endpoints)
        self.last_reverse = None if found is None else self.directions.get(found.reversed_key)
        return found

    def pass_over(self, data: bytes, at: int) -> None:
        """The Ethernet frame at ``data[at:]`` is another shard's (its ``skips`` said so): when it
        is plain IPv4, mark its direction, so that ``common_packet`` passes over the rest of it
        after one look-up, without asking ``skips`` again."""
        if data[at + 12 : at + 15] == _IPV4_NO_OPTIONS:
            self.set_direction(data[at + _ENDPOINTS_START : at + _ENDPOINTS_STOP], None, False)

    def finish(self) -> None:
        for conn in self.flows.values():
            conn.finish()
        self.flows.clear()
        self.directions.clear()
        self.last_found = self.last_reverse = None


_SYN_RST: Final = SYN | RST
# Final, so the compiled build holds them in C variables (a plain global is a dict look-up).
_ENDPOINTS_START: Final = ETH_IPV4_ENDPOINTS[0]
_ENDPOINTS_STOP: Final = ETH_IPV4_ENDPOINTS[1]
# An Ethernet frame's ethertype and first IP byte when it holds IPv4 without options.
_IPV4_NO_OPTIONS: Final = b"\x08\x00\x45"


# The loops look at ``stop`` and ``on_packet`` once in this many packets: no cost per packet.
STOP_CHECK_PACKETS: Final = 4096
STOP_CHECK_MASK: Final = STOP_CHECK_PACKETS - 1


# A predicate on a segment: does it belong to this reader (a shard's own connections: ``ownership``)?
SegmentFilter = Callable[[Segment], bool]


def feed_file(
    table: FlowTable, buf: CaptureBuffer, file_index: int, stats: CaptureStats, **options: Any
) -> None:
    """``feed_file_in_steps`` without a pause (``options``: its own after ``stop``)."""
    for _ in feed_file_in_steps(table, buf, file_index, stats, None, **options):
        pass


def feed_file_in_steps(
    table: FlowTable,
    buf: CaptureBuffer,
    file_index: int,
    stats: CaptureStats,
    stop: Callable[[], bool] | None,
    on_packet: Callable[[int], None] | None = None,
    skips: PacketFilter | None = None,
    owns: SegmentFilter | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[None]:
    """Every TCP segment of the capture in ``buf`` into ``table`` (CaptureError when it is none),
    as ``segments`` and ``table.segment`` would take them, common packets fused: the one packet
    loop of both capture formats, over their readers' ``packets`` (windows of ``chunk_bytes``, no
    copy per packet). ``skips`` may pass over packets before they are built and ``owns`` over
    segments (a shard's: ``ownership``). Pauses (yields) when ``stop`` says so, looked at every
    ``STOP_CHECK_PACKETS`` packets."""
    reader, start = open_reader(buf, stats)
    paths = _PacketPaths(table, stats, skips, owns)
    route = paths.route
    file_ref = file_index << FILE_SHIFT  # a packet's reference is this | its number
    number = 1
    for linktype, data, at, incl, orig, ts_ns, _, _ in reader.packets(start, len(buf), chunk_bytes):
        route(data, linktype, at, incl, orig, file_ref | number, ts_ns)
        if not number & STOP_CHECK_MASK and _pauses(number, on_packet, stop):
            yield
        number += 1
    paths.fragments.finish()


def _pauses(
    number: int, on_packet: Callable[[int], None] | None, stop: Callable[[], bool] | None
) -> bool:
    """A loop's check after packet ``number``: ``on_packet`` every 65536 packets; True to pause."""
    if on_packet is not None and not number % 65536:
        on_packet(number)
    return stop is not None and stop()


class _PacketPaths:
    """The two ways a packet goes into ``table``: ``route`` takes the common case to
    ``table.common_packet`` and any other packet the general way (``general``), as ``segments``
    and ``FlowTable.segment`` take it. An unfragmented Ethernet/IPv4 packet without options taken
    the general way also teaches the table its raw endpoints, so that the connection's next
    packets take the common way."""

    def __init__(
        self,
        table: FlowTable,
        stats: CaptureStats,
        skips: PacketFilter | None,
        owns: SegmentFilter | None,
    ) -> None:
        self.table = table
        self.fragments = FragmentReassembler(stats)
        self.skips = skips
        self.owns = owns

    def route(
        self,
        data: bytes,
        linktype: int,
        at: int,
        incl: int,
        orig_len: int,
        ref: int,
        ts_ns: int,
    ) -> None:
        """The packet at ``data[at:at + incl]``; ``skips`` may say it is another shard's."""
        common = linktype == LINK_ETHERNET and incl >= ETH_IPV4_TCP_MIN
        if common and self.table.common_packet(data, at, incl, orig_len, ref, ts_ns):
            return
        skips = self.skips
        if skips is None or not skips(linktype, data, at, incl):
            self.general(linktype, data[at : at + incl], orig_len, ts_ns, ref)
        elif common:
            self.table.pass_over(data, at)

    def general(self, linktype: int, data: bytes, orig_len: int, ts_ns: int, ref: int) -> None:
        seg = tcp_segment(linktype, data, orig_len)
        if seg is not None and not seg.fragment:
            if self.owns is None or self.owns(seg):
                self.table.segment(seg, ref, ts_ns)
                if (
                    linktype == LINK_ETHERNET
                    and len(data) >= ETH_IPV4_TCP_MIN
                    and data[12:15] == _IPV4_NO_OPTIONS
                ):
                    self.table.learn(data[_ENDPOINTS_START:_ENDPOINTS_STOP], seg)
            return
        seg = self.fragments.packet(linktype, data, ts_ns)
        if seg is not None and (self.owns is None or self.owns(seg)):
            self.table.segment(seg, ref, ts_ns)


class CollectorPaused:
    """``with CollectorPaused():`` runs its block with Python's cyclic garbage collector off.

    A decode keeps every row it makes until the end, and each full collection walks all of them
    again: about a tenth of the decode's time, for nothing, since rows and the decoders' state hold
    no reference cycles (reference counting frees all else as before). The collector is left as it
    was found (off stays off).

    Turned back on as it was, the collector's next allocation would scan the youngest generation,
    which now holds every object the block made (every row): a twentieth of the decode again. So
    the objects are first moved to the oldest generation, the one that is scanned least often and
    only once enough new objects have been made after it: ``gc.freeze()`` then ``gc.unfreeze()``,
    two list splices that touch no object. Garbage cycles among them (none are expected) are still
    found by the next full collection. When the program has frozen objects of its own, unfreezing
    would thaw them too: then the collector is only turned back on, and its next pass pays the scan.
    """

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if not self.was_enabled:
            return
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def first_timestamp(path: str) -> int:
    with open(path, "rb") as handle:
        head = handle.read(1 << 16)
    try:
        reader, start = open_reader(head, CaptureStats())
        for packet in reader.records(start, len(head)):
            return packet.ts_ns
    except CaptureError:  # not a capture: ordered first, and reported when it is decoded
        pass
    return 0


def capture_order(paths: Iterable[str]) -> tuple[str, ...]:
    """The captures in the order they are read as one traffic stream (by their first packet's
    timestamp, then by name), absolute, as Spark's readers see them (their executors run in other
    directories): every decode, local, parallel or Spark, numbers files and frames in this order."""
    return tuple(sorted((os.path.abspath(p) for p in paths), key=lambda p: (first_timestamp(p), p)))


def map_file(path: str) -> CaptureBuffer:
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
) -> tuple[list[Row], dict[str, CaptureStats]]:
    """Decode captures as one traffic stream into rows of ``options.table`` (sorted by file and
    packet), and stats per file."""
    files = capture_order(paths)
    options = options or DecodeOptions()
    emitted = OrderedRows(sort_key(options.table))
    table = FlowTable(files, bodies, emitted.add, options)
    stats: dict[str, CaptureStats] = {}
    with CollectorPaused():
        for index, path in enumerate(files):
            file_stats = stats[path] = CaptureStats()
            buf = map_file(path)
            try:
                feed_file(table, buf, index, file_stats, on_packet=on_packet)
            except CaptureError as exc:  # not a capture: reported, the other files still decode
                file_stats.note(str(exc))
        table.finish()
        # Ordered with the collector still off: the order is tens of thousands of new ints, and
        # the collections they would set off walk every row made so far.
        rows = emitted.in_order()
    return rows, stats
