"""Reading packet records out of pcap and pcapng files.

A capture is read from a bytes-like buffer (usually an mmap of the file) between two byte offsets, so
the same reader serves a whole file and a split of it. Records are read a chunk at a time as bytes
(``Window``: bounded memory, and the compiled build's native byte readers), each packet out as a
``Packet`` tuple. Damage (a bogus record length, garbage between records, a truncated last record)
never stops reading: the reader looks for the next plausible record (``resync``) and counts what it
skipped in ``CaptureStats``.

Layouts read once per file or section (pcap file header, pcapng section and interface blocks) are
declared with construct, where a declarative layout reads better than offsets.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from typing import Callable, Final, Iterator, NamedTuple

import construct as cs

# Whether this module runs compiled: then ``PcapReader.records`` reads little-endian record headers
# with librt's typed readers (see ``layers.COMPILED``).
COMPILED: Final = not __file__.endswith((".py", ".pyc"))
if COMPILED:
    from librt.strings import read_i32_le

PCAP_MAGIC_US: Final = 0xA1B2C3D4
PCAP_MAGIC_NS: Final = 0xA1B23C4D
PCAPNG_SHB: Final = 0x0A0D0D0A
PCAPNG_BOM: Final = 0x1A2B3C4D
MAX_RECORD: Final = 262144  # the largest snaplen libpcap writes
# How much of a capture a ``Window`` holds at a time (more when one record needs more).
CHUNK_BYTES: Final = 1 << 20
# The shortest header either format starts with (pcap's file header; a pcapng section header block
# takes at least 28): a file shorter than this holds no capture, whatever its first bytes say.
MIN_CAPTURE_HEADER: Final = 24


class CaptureError(ValueError):
    """The buffer is not a pcap or pcapng capture at all (its first bytes say so)."""


class Packet(NamedTuple):
    number: int  # 1-based, as tshark counts frames (relative to the reader's first_number)
    ts_ns: int  # nanoseconds since the epoch (0 when the block carries none, as an SPB)
    linktype: int
    data: bytes  # copied out of the reader's window (``records_of``)
    # length on the wire: larger than len(data) when the snaplen cut the packet (some writers store
    # less than len(data), e.g. without the cooked header, which is not a cut)
    orig_len: int
    offset: int  # byte offset of the record in the file
    data_at: int  # byte offset of ``data`` in the file


# What a capture is read from: the file's bytes, usually memory-mapped.
CaptureBuffer = bytes | bytearray | mmap.mmap

# ``(linktype, buffer, offset of the packet's data, captured length)`` -> pass over the packet
PacketFilter = Callable[[int, object, int, int], bool]

# What both readers' ``packets`` yield, one interface for pcap and pcapng: the link type, the bytes
# holding the packet and where in them it starts, its captured and original length, its timestamp
# (ns), and the file offsets of its record and of its bytes. The bytes are a window of the file
# (nothing is copied per packet): they are valid until the reader is resumed.
PacketView = tuple[int, bytes, int, int, int, int, int, int]


@dataclass
class CaptureStats:
    packets: int = 0
    resyncs: int = 0  # times the reader skipped damaged bytes to find the next record
    skipped_bytes: int = 0
    truncated_tail: bool = False
    problems: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(text)


# Builds a NamedTuple from a tuple of its fields, without the Python-level ``__new__`` its class
# call runs (an interpreted frame per object, also in the compiled build).
_new_tuple: Final = tuple.__new__


def records_of(
    views: Iterator[PacketView], first_number: int = 1, skips: PacketFilter | None = None
) -> Iterator[Packet]:
    """``Packet`` tuples of a reader's ``views``, numbered from ``first_number`` (every packet
    counts, also those ``skips(linktype, data, offset, length)`` passes over before they are
    built), each packet's bytes copied out of the window."""
    number = first_number
    for linktype, data, at, incl, orig, ts_ns, offset, data_at in views:
        if skips is None or not skips(linktype, data, at, incl):
            fields = (number, ts_ns, linktype, data[at : at + incl], orig, offset, data_at)
            yield _new_tuple(Packet, fields)
        number += 1


PcapHeader = cs.Struct(
    "magic" / cs.Int32ul,
    "version_major" / cs.Int16ul,
    "version_minor" / cs.Int16ul,
    "thiszone" / cs.Int32sl,
    "sigfigs" / cs.Int32ul,
    "snaplen" / cs.Int32ul,
    "network" / cs.Int32ul,
)


def shown_name(path: str) -> str:
    """``path`` as text every output can hold. Python keeps the bytes of a file name that are not
    UTF-8 as lone surrogates, which Arrow, Parquet and JSON text cannot hold: each is shown as a
    ``\\xNN`` escape instead."""
    try:
        path.encode()
        return path
    except UnicodeEncodeError:
        try:
            raw = path.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # surrogates no file system gave: keep them visible
            return path.encode("utf-8", "backslashreplace").decode()
        return raw.decode("utf-8", "backslashreplace")


def capture_format(buf: CaptureBuffer) -> str:
    """``"pcap"`` or ``"pcapng"`` from the first four bytes; CaptureError otherwise (also for a
    buffer shorter than any capture file header, which is no capture rather than a damaged one)."""
    if len(buf) < MIN_CAPTURE_HEADER:
        raise CaptureError(
            f"not a pcap or pcapng file ({len(buf)} bytes, shorter than any capture file header)"
        )
    (magic_le,) = struct.unpack_from("<I", buf, 0)
    (magic_be,) = struct.unpack_from(">I", buf, 0)
    if magic_le == PCAPNG_SHB:
        return "pcapng"
    if PCAP_MAGIC_US in (magic_le, magic_be) or PCAP_MAGIC_NS in (magic_le, magic_be):
        return "pcap"
    raise CaptureError(f"not a pcap or pcapng file (magic {bytes(buf[:4]).hex()})")


@dataclass(frozen=True)
class PcapFile:
    """What the 24-byte pcap file header says."""

    endian: str  # "<" or ">"
    nanosecond: bool
    snaplen: int
    linktype: int

    @classmethod
    def parse(cls, buf: CaptureBuffer) -> "PcapFile":
        if len(buf) < 24:
            raise CaptureError("pcap file header truncated (fewer than 24 bytes)")
        (magic_le,) = struct.unpack_from("<I", buf, 0)
        endian = "<" if magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS) else ">"
        header = PcapHeader.parse(
            bytes(buf[:24]) if endian == "<" else _swap_words(bytes(buf[:24]))
        )
        return cls(
            endian=endian,
            nanosecond=header.magic == PCAP_MAGIC_NS,
            snaplen=header.snaplen or MAX_RECORD,
            linktype=header.network & 0x0FFFFFFF,  # the upper bits carry FCS information
        )


def _swap_words(header: bytes) -> bytes:
    """A big-endian pcap header rewritten little-endian, so one construct layout reads both."""
    out = bytearray()
    for fmt_pos, size in ((0, 4), (4, 2), (6, 2), (8, 4), (12, 4), (16, 4), (20, 4)):
        out += header[fmt_pos : fmt_pos + size][::-1]
    return bytes(out)


class Window:
    """A capture's bytes from file offset ``base`` on, a chunk at a time: what the fused loops
    (``pipeline``) read records from. A chunk is bytes, which the compiled build reads with native
    byte readers (an mmap allows only generic calls), and it holds about ``chunk_bytes``, so memory
    stays bounded whatever the file's size. A buffer that is already bytes is one whole chunk.

    ``data`` is ``buf[base:limit]``; ``load(pos, need)`` moves it to start at ``pos`` with at least
    ``need`` bytes, or all there are: a record that does not fit (``limit`` before its end, and
    ``limit`` before ``end``) is read again from a chunk that starts with it."""

    def __init__(self, buf: CaptureBuffer, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.buf = buf
        self.end = len(buf)
        self.chunk_bytes = max(chunk_bytes, 1)
        self.data: bytes = buf if isinstance(buf, bytes) else b""
        self.whole = isinstance(buf, bytes)
        self.base = 0
        self.limit = len(self.data)

    def hold(self, pos: int, need: int) -> None:
        """``load(pos, need)`` unless ``data`` already holds those bytes."""
        if pos < self.base or pos + need > self.limit:
            self.load(pos, need)

    def load(self, pos: int, need: int) -> None:
        if self.whole:
            return
        stop = pos + (need if need > self.chunk_bytes else self.chunk_bytes)
        self.data = bytes(self.buf[pos:stop])
        self.base = pos
        self.limit = pos + len(self.data)


def record_header_le(data: bytes, at: int) -> tuple[int, int, int, int]:
    """The seconds, fraction, captured and original length of the little-endian pcap record
    header at ``data[at:]``, read with librt: called only when ``COMPILED`` (a native call, its
    tuple never made as an object)."""
    return (
        int(read_i32_le(data, at)) & 0xFFFFFFFF,
        int(read_i32_le(data, at + 4)) & 0xFFFFFFFF,
        int(read_i32_le(data, at + 8)) & 0xFFFFFFFF,
        int(read_i32_le(data, at + 12)) & 0xFFFFFFFF,
    )


class PcapReader:
    """Records of a pcap file whose header is ``info``; resynchronises after damage."""

    def __init__(
        self, buf: CaptureBuffer, info: PcapFile, stats: CaptureStats | None = None
    ) -> None:
        self.buf = buf
        self.info = info
        self.stats = stats if stats is not None else CaptureStats()
        # What ``records`` reads each record with (``pipeline`` reads pcap records the same way):
        # seconds, fraction, captured and original length.
        self.record_header = struct.Struct(info.endian + "IIII")
        self.frac_limit = 1_000_000_000 if info.nanosecond else 1_000_000
        self.ts_scale = 1 if info.nanosecond else 1000  # fraction units to nanoseconds
        self.max_len = max(info.snaplen, MAX_RECORD)
        # The last record's seconds, which the ±1 day timestamp check of resync is relative to; -1
        # before the first. A plain int, not None: compiled, an ``int | None`` attribute holds a
        # Python object, and the fused loop would allocate one for every record.
        self.last_sec = -1

    def plausible(self, pos: int, chain: int = 1) -> bool:
        """Whether a record header can start at ``pos``: sane fields and a timestamp within a day of
        the previous record's, and ``chain`` more such headers after it (one more is already about a
        billion to one against a false start; more would reject a true start followed by damage)."""
        buf, end = self.buf, len(self.buf)
        unpack = self.record_header.unpack_from
        for _ in range(chain + 1):
            if pos == end:
                return True
            if pos + 16 > end:
                return False
            sec, frac, incl, orig = unpack(buf, pos)
            if frac >= self.frac_limit or not 0 < incl <= self.max_len or orig > MAX_RECORD * 4:
                return False
            if self.last_sec >= 0 and abs(sec - self.last_sec) > 86400:
                return False
            pos += 16 + incl
            if pos > end:
                return True  # a cut-off last record still starts where the header says
        return True

    def resync(self, pos: int, limit: int | None = None) -> int | None:
        """The first offset at or after ``pos`` (and before ``limit``) where records plausibly start."""
        stop = len(self.buf) - 16 if limit is None else min(limit, len(self.buf) - 16)
        while pos <= stop:
            if self.plausible(pos):
                return pos
            pos += 1
        return None

    def packets(
        self, start: int, stop: int, chunk_bytes: int = CHUNK_BYTES
    ) -> Iterator[PacketView]:
        """Every packet whose record header starts in ``[start, stop)`` (``start`` must be a record
        start) as a ``PacketView``: its bytes are ``data[at:at + incl]`` of a ``Window`` of
        ``chunk_bytes``, not copied out. Damage and a cut end are noted in ``stats``."""
        window = Window(self.buf, chunk_bytes)
        end = window.end
        unpack = self.record_header.unpack_from
        frac_limit, scale, max_len = self.frac_limit, self.ts_scale, self.max_len
        linktype, little = self.info.linktype, self.info.endian == "<"
        pos, count = start, 0
        window.load(pos, 16)
        data, base, limit = window.data, window.base, window.limit
        second, second_ns = -1, 0  # the last record's whole second, and in nanoseconds
        while pos < stop:
            if pos + 16 > limit:
                if limit >= end:
                    self.cut_tail(pos, "record header")
                    break
                window.load(pos, 16)
                data, base, limit = window.data, window.base, window.limit
            at = pos - base
            if COMPILED and little:
                sec, frac, incl, orig = record_header_le(data, at)
            else:
                sec, frac, incl, orig = unpack(data, at)
            if frac >= frac_limit or not 0 < incl <= max_len:
                found = self.skip_damage(pos, stop)
                if found is None:
                    break
                pos = found
                continue
            if pos + 16 + incl > limit:
                if limit >= end:
                    self.cut_tail(pos, f"record of {incl} bytes")
                    break
                window.load(pos, 16 + incl)
                data, base, limit = window.data, window.base, window.limit
                continue
            self.last_sec = sec
            if sec != second:  # compiled, a product past 2**30 leaves the fast integer arithmetic
                second, second_ns = sec, sec * 1_000_000_000
            yield (linktype, data, at + 16, incl, orig, second_ns + frac * scale, pos, pos + 16)
            count += 1
            pos += 16 + incl
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
        ``records_of``)."""
        return records_of(self.packets(start, stop, chunk_bytes), first_number, skips)

    def skip_damage(self, pos: int, stop: int) -> int | None:
        """The record header at ``pos`` is not sane: the next plausible record start before
        ``stop`` (counted as a resync), or None when there is none."""
        found = self.resync(pos + 1, stop)
        self.stats.note(f"bad pcap record header at offset {pos}")
        if found is not None:
            self.stats.resyncs += 1
            self.stats.skipped_bytes += found - pos
        return found

    def cut_tail(self, pos: int, what: str) -> None:
        self.stats.truncated_tail = True
        self.stats.note(f"capture ends inside a {what} at offset {pos}")
