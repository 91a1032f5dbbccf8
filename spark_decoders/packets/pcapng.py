"""pcapng: sections, interfaces and packet blocks.

Each section header block (SHB) sets the byte order of its section and starts a new interface list;
each interface description block (IDB) gives an interface's link type and timestamp resolution
(``if_tsresol``, default microseconds) and offset (``if_tsoffset``). Packets come in enhanced (EPB),
simple (SPB, interface 0, no timestamp) and obsolete (PB) packet blocks; every other block is skipped
by its length. The total length is repeated at the end of every block, which is how a damaged block is
recognised and how the reader finds the next block after damage.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, Iterator

import construct as cs

from .capture import (
    CHUNK_BYTES,
    CaptureBuffer,
    PCAPNG_BOM,
    PCAPNG_SHB,
    CaptureStats,
    Packet,
    PacketFilter,
    PacketView,
    Window,
    records_of,
)

# Whether this module runs compiled: then ``plain_packet`` reads a little-endian block's head with
# librt's typed readers (see ``layers.COMPILED``).
COMPILED: Final = not __file__.endswith((".py", ".pyc"))
if COMPILED:
    from librt.strings import read_i32_le

BLOCK_IDB: Final = 1
BLOCK_PB: Final = 2
BLOCK_SPB: Final = 3
BLOCK_EPB: Final = 6
# Block types a resynchronising reader accepts as a block start (SHB, IDB, PB, SPB, NRB, ISB, EPB, DSB,
# and the two custom block types).
KNOWN_BLOCKS: Final = frozenset({PCAPNG_SHB, 1, 2, 3, 4, 5, 6, 0x0A, 0x0BAD, 0x40000BAD})
MAX_BLOCK: Final = 16 * 1024 * 1024
OPT_TSRESOL: Final = 9
OPT_TSOFFSET: Final = 14


def _options(endian: str) -> cs.Construct:
    """The option list at the end of an SHB or IDB: (code, length, value padded to 4)."""
    int16 = cs.Int16ul if endian == "<" else cs.Int16ub
    option = cs.Struct(
        "code" / int16,
        "length" / int16,
        "value" / cs.Bytes(cs.this.length),
        cs.Padding(lambda ctx: -ctx.length % 4),
    )
    return cs.GreedyRange(option)


_IDB_FIXED = {
    e: cs.Struct(
        "linktype" / (cs.Int16ul if e == "<" else cs.Int16ub),
        cs.Padding(2),
        "snaplen" / (cs.Int32ul if e == "<" else cs.Int32ub),
    )
    for e in "<>"
}
_OPTIONS = {e: _options(e) for e in "<>"}
# An enhanced packet block's fixed head (type, total length, interface, timestamp high and low,
# captured and original length), and a block's length field (it opens and closes every block), per
# section byte order: the head and the closing length are all that ``plain_packet`` reads of the
# blocks that make up nearly all of a capture.
_EPB_HEAD: Final = {e: struct.Struct(e + "7I") for e in "<>"}
_BLOCK_LENGTH: Final = {e: struct.Struct(e + "I") for e in "<>"}
EPB_DATA: Final = 28  # where an EPB's packet bytes start
# What ``PcapngReader.plain_packet`` finds: link type, captured and original length, ts_ns and the
# block's length; the length 0 (``NOT_PLAIN``) when the block is not a plain packet block.
PlainPacket = tuple[int, int, int, int, int]
NOT_PLAIN: Final[PlainPacket] = (0, 0, 0, 0, 0)
# Builds a NamedTuple from a tuple of its fields, without the Python-level ``__new__`` its class
# call runs (an interpreted frame per object, also in the compiled build).
_new_tuple: Final = tuple.__new__


@dataclass(frozen=True)
class Interface:
    linktype: int
    # timestamp units per second: 10**n or 2**n
    units_per_second: int
    offset_ns: int

    def to_ns(self, ticks: int) -> int:
        if self.units_per_second == 1_000_000_000:
            return ticks + self.offset_ns
        return ticks * 1_000_000_000 // self.units_per_second + self.offset_ns


def parse_interface(body: bytes, endian: str) -> Interface:
    """An IDB's body (after type and length): link type, then options (tsresol, tsoffset)."""
    fixed = _IDB_FIXED[endian].parse(body[:8])
    units, offset_ns = 1_000_000, 0
    try:
        options = _OPTIONS[endian].parse(body[8:])
    except cs.ConstructError:
        options = []
    for option in options:
        if option.code == 0:
            break
        if option.code == OPT_TSRESOL and option.length >= 1:
            exponent = option.value[0]
            units = 2 ** (exponent & 0x7F) if exponent & 0x80 else 10 ** min(exponent, 18)
        elif option.code == OPT_TSOFFSET and option.length == 8:
            (seconds,) = struct.unpack(endian + "q", option.value)
            offset_ns = seconds * 1_000_000_000
    return Interface(fixed.linktype, units, offset_ns)


class PcapngReader:
    """Blocks of a pcapng buffer, from a block start; keeps the section's interfaces."""

    def __init__(self, buf: CaptureBuffer, stats: CaptureStats | None = None) -> None:
        self.buf = buf
        self.stats = stats if stats is not None else CaptureStats()
        self.endian = "<"
        self.interfaces: list[Interface] = []
        # ``timestamp_ns``'s last second: its interface, its first tick, and that tick in ns.
        self._second_iface: Interface | None = None
        self._second_ticks = 0
        self._second_ns = 0

    def block_at(self, pos: int) -> tuple[int, int] | None:
        """``(type, total length)`` of a sound block at ``pos`` (lengths agree, fits), else None."""
        buf = self.buf
        if pos + 12 > len(buf):
            return None
        if struct.unpack_from("<I", buf, pos)[0] == PCAPNG_SHB:
            (bom,) = struct.unpack_from("<I", buf, pos + 8)
            endian = "<" if bom == PCAPNG_BOM else ">" if bom == 0x4D3C2B1A else None
            if endian is None:
                return None
            self.endian = endian
        kind, length = struct.unpack_from(self.endian + "II", buf, pos)
        if length < 12 or length % 4 or length > MAX_BLOCK or pos + length > len(buf):
            return None
        if _BLOCK_LENGTH[self.endian].unpack_from(buf, pos + length - 4)[0] != length:
            return None
        return kind, length

    def resync(self, pos: int, limit: int) -> int | None:
        """The next offset (4-aligned from ``pos``) before ``limit`` holding a sound known block."""
        limit = min(limit, len(self.buf) - 12)
        while pos <= limit:
            found = self.block_at(pos)
            if found is not None and found[0] in KNOWN_BLOCKS:
                return pos
            pos += 4
        return None

    def packets(
        self, start: int, stop: int, chunk_bytes: int = CHUNK_BYTES
    ) -> Iterator[PacketView]:
        """Every packet of the blocks that start in ``[start, stop)`` as a ``capture.PacketView``
        (``PcapReader.packets``' interface); section state carries over calls. A sound enhanced
        packet block of a known interface is read in one go from a ``Window`` of ``chunk_bytes``
        (``plain_packet``), which first moves to hold the whole block; every other block (section
        and interface blocks, other packet blocks, damage) goes through ``advance`` on the whole
        buffer, its packet's bytes copied out."""
        view = memoryview(self.buf)
        window = Window(self.buf, chunk_bytes)
        end = window.end
        pos, count = start, 0
        window.load(pos, EPB_DATA)
        data, base, limit = window.data, window.base, window.limit
        while pos < stop:
            plain = self.plain_packet(data, pos - base)
            if not plain[4] and limit < end:  # perhaps a block the window cuts: move the window
                plain = self.plain_in_moved_window(window, pos)
                data, base, limit = window.data, window.base, window.limit
            linktype, incl, orig, ts_ns, length = plain
            if length:
                yield (
                    linktype,
                    data,
                    pos - base + EPB_DATA,
                    incl,
                    orig,
                    ts_ns,
                    pos,
                    pos + EPB_DATA,
                )
                count += 1
                pos += length
                continue
            next_pos, packet = self.advance(view, pos, stop, count + 1)
            if packet is not None:
                yield (
                    packet.linktype,
                    packet.data,
                    0,
                    len(packet.data),
                    packet.orig_len,
                    packet.ts_ns,
                    packet.offset,
                    packet.data_at,
                )
                count += 1
            if next_pos < 0:
                break
            pos = next_pos
        self.stats.packets += count

    def records(
        self,
        start: int,
        stop: int,
        first_number: int = 1,
        skips: PacketFilter | None = None,
        chunk_bytes: int = CHUNK_BYTES,
    ) -> Iterator[Packet]:
        """``packets`` as numbered ``Packet`` tuples, each packet's bytes copied out (see
        ``capture.records_of``)."""
        return records_of(self.packets(start, stop, chunk_bytes), first_number, skips)

    def advance(
        self, view: memoryview, pos: int, stop: int, number: int
    ) -> tuple[int, Packet | None]:
        """Reads the block at ``pos``: ``(where the next block starts, its packet numbered
        ``number`` or None)``, the start -1 when reading must end here (the capture ends inside a
        block, or no sound block follows damage before ``stop``)."""
        found = self.block_at(pos)
        if found is None:
            buf = self.buf
            if pos + 12 > len(buf) or (pos + 8 <= len(buf) and self._claims_past_end(pos)):
                self.stats.truncated_tail = True
                self.stats.note(f"capture ends inside a block at offset {pos}")
                return -1, None
            self.stats.note(f"damaged pcapng block at offset {pos}")
            resumed = self.resync(pos + 4, stop)
            if resumed is None:
                return -1, None
            self.stats.resyncs += 1
            self.stats.skipped_bytes += resumed - pos
            return resumed, None
        kind, length = found
        return pos + length, self._packet(kind, view, pos, length, number)

    def plain_packet(self, data: bytes, at: int) -> PlainPacket:
        """``(link type, captured length, original length, ts_ns, block length)`` of the block at
        ``data[at:]`` (a ``capture.Window``'s bytes) when it is a sound enhanced packet block of a
        known interface that lies wholly in ``data``, its packet at ``at + EPB_DATA``: what
        ``advance`` would make of it, without the ``Packet``. ``NOT_PLAIN`` (block length 0) for
        any other block: a tuple, not None, so that the compiled build returns it as five machine
        integers rather than a tuple object."""
        if at + EPB_DATA > len(data):
            return NOT_PLAIN
        native = COMPILED and self.endian == "<"
        if native:
            kind = int(read_i32_le(data, at)) & 0xFFFFFFFF
            length = int(read_i32_le(data, at + 4)) & 0xFFFFFFFF
            iface_id = int(read_i32_le(data, at + 8)) & 0xFFFFFFFF
            ts_hi = int(read_i32_le(data, at + 12)) & 0xFFFFFFFF
            ts_lo = int(read_i32_le(data, at + 16)) & 0xFFFFFFFF
            incl = int(read_i32_le(data, at + 20)) & 0xFFFFFFFF
            orig = int(read_i32_le(data, at + 24)) & 0xFFFFFFFF
        else:
            head = _EPB_HEAD[self.endian].unpack_from(data, at)
            kind, length, iface_id, ts_hi, ts_lo, incl, orig = head
        if (
            kind != BLOCK_EPB
            or length > MAX_BLOCK
            or length % 4
            or EPB_DATA + incl > length - 4
            or at + length > len(data)
            or iface_id >= len(self.interfaces)
        ):
            return NOT_PLAIN
        closing = at + length - 4
        if native:
            if int(read_i32_le(data, closing)) & 0xFFFFFFFF != length:
                return NOT_PLAIN
        elif _BLOCK_LENGTH[self.endian].unpack_from(data, closing)[0] != length:
            return NOT_PLAIN
        iface = self.interfaces[iface_id]
        ticks = (ts_hi << 32) | ts_lo
        if COMPILED:
            ts_ns = self.timestamp_ns(iface, ticks)
        elif iface.units_per_second == 1_000_000:  # interpreted, the product is the fast way
            ts_ns = ticks * 1000 + iface.offset_ns
        else:
            ts_ns = iface.to_ns(ticks)
        return iface.linktype, incl, orig if orig > incl else incl, ts_ns, length

    def timestamp_ns(self, iface: Interface, ticks: int) -> int:
        """``iface.to_ns(ticks)``, worked out from the start of the ticks' second as last computed:
        the product of a timestamp and a resolution is past 2**30, which takes the compiled build
        out of machine integers into Python ones, so it is made once per second and interface
        (the second's own ticks times 10**9 over the resolution is whole, the rest adds on)."""
        units = iface.units_per_second
        into = ticks - self._second_ticks
        if iface is not self._second_iface or not 0 <= into < units:
            into = ticks % units
            self._second_ticks = ticks - into
            self._second_ns = iface.to_ns(self._second_ticks)
            self._second_iface = iface
        return self._second_ns + into * 1_000_000_000 // units

    def plain_in_moved_window(self, window: Window, pos: int) -> PlainPacket:
        """``plain_packet`` of the block at file offset ``pos`` once ``window`` holds all of it:
        for a block the window's edge cut (``plain_packet`` of the window as it was said
        ``NOT_PLAIN``)."""
        window.hold(pos, EPB_DATA)  # its head, then all of it
        window.hold(pos, self.block_span(window.data, pos - window.base))
        return self.plain_packet(window.data, pos - window.base)

    def block_span(self, data: bytes, at: int) -> int:
        """How many bytes from ``at`` a window must hold to read the block there whole: the
        length it declares, when ``data`` has it and it is one a sound block may have; else the
        head of an enhanced packet block (``advance`` reads anything else on the whole buffer)."""
        if at + 8 > len(data):
            return EPB_DATA
        (length,) = _BLOCK_LENGTH[self.endian].unpack_from(data, at + 4)
        return length if EPB_DATA < length <= MAX_BLOCK else EPB_DATA

    def _claims_past_end(self, pos: int) -> bool:
        length: int = _BLOCK_LENGTH[self.endian].unpack_from(self.buf, pos + 4)[0]
        return 12 <= length <= MAX_BLOCK and length % 4 == 0 and pos + length > len(self.buf)

    def _packet(
        self, kind: int, view: memoryview, pos: int, length: int, number: int
    ) -> Packet | None:
        endian = self.endian
        if kind == BLOCK_EPB or kind == BLOCK_PB:
            iface_id, ts_hi, ts_lo, incl, orig = struct.unpack_from(endian + "IIIII", view, pos + 8)
            if kind == BLOCK_PB:
                iface_id &= 0xFFFF
            data_at = pos + 28
        elif kind == BLOCK_SPB:
            (orig,) = struct.unpack_from(endian + "I", view, pos + 8)
            iface_id, ts_hi, ts_lo, data_at = 0, 0, 0, pos + 12
            incl = min(orig, length - 16)
        else:
            self.control_block(kind, view, pos, length)
            return None
        if iface_id >= len(self.interfaces) or data_at + incl > pos + length - 4:
            self.stats.note(
                f"packet block at offset {pos} names no interface or overruns its block"
            )
            return None
        iface = self.interfaces[iface_id]
        ts_ns = iface.to_ns((ts_hi << 32) | ts_lo) if kind != BLOCK_SPB else 0
        data = bytes(view[data_at : data_at + incl])
        return Packet(number, ts_ns, iface.linktype, data, max(orig, incl), pos, data_at)

    def control_block(self, kind: int, view: memoryview, pos: int, length: int) -> None:
        if kind == PCAPNG_SHB:
            self.interfaces = []
        elif kind == BLOCK_IDB:
            body = bytes(view[pos + 8 : pos + length - 4])
            try:
                self.interfaces.append(parse_interface(body, self.endian))
            except cs.ConstructError:
                self.stats.note(f"unreadable interface block at offset {pos}")
                self.interfaces.append(Interface(-1, 1_000_000, 0))
