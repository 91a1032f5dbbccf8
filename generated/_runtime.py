"""Wire primitives shared by every generated message module (standard library only).

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; ``buf`` is always ``bytes``. Writers append
to a ``bytearray``. Every size and count is checked for sign and against the bytes that remain before
it is used, so truncated input or an absurd length raises :class:`DecodeError` before anything large
is allocated, and no loop runs more often than the input has bytes.

Readers accept only the canonical encoding, the one Kafka's own writers produce, so that a message
that decodes re-encodes to exactly the bytes it came from. Kafka's readers are more lenient, and
Kafka then cannot always write back what it read: they take tagged fields in any order and keep
repeated unknown ones (its RawTaggedFieldWriter then refuses to write a raw tag that is not above the
previous one), treat any non-zero byte as true, read a nullable struct as null on any negative byte,
replace malformed UTF-8, accept a tagged field that carries its default value (which its writers
never send) and varints padded with extra zero groups. Here each of those is a DecodeError naming
the field: tags must be strictly ascending, bools 0 or 1, presence bytes 1 or -1 (0 or 1 inside a
tag), strings valid UTF-8, a known tag must differ from its default, varints must be minimal.

What happens once a read or write has failed (naming the element, explaining the value) is in
``_failures``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "ProtocolError",
    "DecodeError",
    "EncodeError",
    "UnknownSpecError",
    "UnsupportedVersionError",
]

MAX_STRING_BYTES = 0x7FFF
INT64_MAX = (1 << 63) - 1  # the default of Kafka's "high watermark"-like int64 fields
# What the codecs read from: a read-only or writable buffer of bytes, sliced without copying.
ByteData = bytes | bytearray | memoryview


class ProtocolError(Exception):
    """Base of every error raised by generated codecs."""

    # Dotted path of the failing field ("topics.partitions.index"), set by the message codecs.
    field_path: str = ""


class DecodeError(ProtocolError):
    """Input bytes (or a frame) that do not decode: truncated, bad lengths, null where not allowed."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message if offset is None else f"{message} at offset {offset}")
        self.offset = offset


class EncodeError(ProtocolError):
    """A value that cannot be written: null where not nullable, out of range, too long, lossy."""


class UnsupportedVersionError(ProtocolError):
    """A version outside the message's valid versions, or a struct used outside its versions."""


class UnknownSpecError(ProtocolError, KeyError):
    """A spec name (or record family) the generated package does not have.

    A KeyError too, so callers written for the plain KeyError of earlier versions still catch it.
    """

    def __str__(self) -> str:  # KeyError's own __str__ would quote the message
        return str(self.args[0]) if self.args else ""


ZERO_UUID = uuid.UUID(int=0)


def _uuid_constructor() -> Callable[[bytes], uuid.UUID]:
    """``UUID(bytes=raw)`` in a third of the time: fill the slots of a new UUID directly.

    uuid.UUID's __init__ spends most of its time on argument checks that 16 wire bytes never need.
    The shortcut relies on CPython's UUID layout (slots ``int`` and ``is_safe``), so it is checked
    once here and the plain constructor is used when it does not behave identically.
    """
    new, set_slot, unknown = object.__new__, object.__setattr__, uuid.SafeUUID.unknown
    from_bytes = int.from_bytes
    # The same few ids (topics, log directories) recur in every message; UUIDs are immutable, so one
    # object per id is handed out. Bounded: cleared when full.
    seen: dict[bytes, uuid.UUID] = {}

    def from_wire(raw: bytes) -> uuid.UUID:
        if type(raw) is not bytes:  # a slice of a bytearray or memoryview input
            raw = bytes(raw)
        value = seen.get(raw)
        if value is None:
            value = new(uuid.UUID)
            set_slot(value, "int", from_bytes(raw, "big"))
            set_slot(value, "is_safe", unknown)
            if len(seen) >= 4096:
                seen.clear()
            seen[raw] = value
        return value

    try:
        sample = bytes(range(16))
        fast, slow = from_wire(sample), uuid.UUID(bytes=sample)
        if (
            fast == slow
            and hash(fast) == hash(slow)
            and str(fast) == str(slow)
            and fast.bytes == sample
        ):
            return from_wire
    except (AttributeError, TypeError):
        pass
    return lambda raw: uuid.UUID(bytes=raw)


uuid_from_wire = _uuid_constructor()

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")

_unpack_int16 = INT16.unpack_from
_unpack_int32 = INT32.unpack_from
_pack_int16 = INT16.pack
_pack_int32 = INT32.pack


# -- varints -----------------------------------------------------------------------------------------


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 of at most 5 bytes, read into a signed 32-bit int as Kafka does."""
    try:
        b = buf[pos]
    except IndexError:
        raise DecodeError("truncated varint", pos) from None
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    start = pos
    pos += 1
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise DecodeError("truncated varint", start) from None
        pos += 1
        if b == 0:
            raise DecodeError("varint padded with a trailing zero group", start)
        if shift == 28:
            if b > 0x0F:
                raise DecodeError("illegal varint: more than 32 bits", start)
            value |= b << 28
            return (value - (1 << 32) if value & 0x80000000 else value), pos
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        value &= 0xFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


# -- lengths -----------------------------------------------------------------------------------------


def _check_remaining(buf: bytes, pos: int, length: int, what: str) -> int:
    end = pos + length
    if end > len(buf):
        raise DecodeError(f"{what} of {length} bytes runs past the end of the input", pos)
    return end


def read_array_count(buf: bytes, pos: int) -> tuple[int, int]:
    """Classic array count (int32, -1 = null). Returns -1 for null."""
    if pos + 4 > len(buf):
        raise DecodeError("truncated array length", pos)
    (count,) = _unpack_int32(buf, pos)
    pos += 4
    if count > len(buf) - pos:
        raise DecodeError(
            f"array of {count} elements, but only {len(buf) - pos} bytes remain", pos - 4
        )
    if count < -1:
        raise DecodeError(f"negative array length {count}", pos - 4)
    return count, pos


def read_compact_array_count(buf: bytes, pos: int) -> tuple[int, int]:
    """Compact array count (uvarint count+1, 0 = null). Returns -1 for null."""
    start = pos
    count, pos = read_uvarint(buf, pos)
    count = ((count - 1 + 0x80000000) & 0xFFFFFFFF) - 0x80000000  # Java int arithmetic wraps
    if count > len(buf) - pos:
        raise DecodeError(
            f"array of {count} elements, but only {len(buf) - pos} bytes remain", start
        )
    if count < -1:
        raise DecodeError(f"negative array length {count}", start)
    return count, pos


# -- strings -----------------------------------------------------------------------------------------


def _decode_utf8(buf: bytes, pos: int, end: int) -> str:
    # Java's String(bytes, UTF_8) replaces malformed sequences; a replaced string would not
    # re-encode to the same bytes, so malformed UTF-8 is refused (see the module docstring).
    try:
        return buf[pos:end].decode()
    except UnicodeDecodeError as exc:
        raise bad_utf8(exc, pos) from None


def bad_utf8(exc: UnicodeDecodeError, pos: int) -> DecodeError:
    return DecodeError(f"string is not valid UTF-8 ({exc.reason})", pos + exc.start)


def read_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    if pos + 2 > len(buf):
        raise DecodeError("truncated string length", pos)
    (length,) = _unpack_int16(buf, pos)
    pos += 2
    if length < 0:
        if length == -1:
            return None, pos
        raise DecodeError(f"negative string length {length}", pos - 2)
    end = _check_remaining(buf, pos, length, "string")
    return _decode_utf8(buf, pos, end), end


def read_compact_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    start = pos
    length, pos = read_uvarint(buf, pos)
    if length == 0:
        return None, pos
    length -= 1
    if length > MAX_STRING_BYTES:
        raise DecodeError(f"string of {length} bytes is longer than {MAX_STRING_BYTES}", start)
    if length < 0:
        raise DecodeError(f"negative string length {length}", start)
    end = _check_remaining(buf, pos, length, "string")
    return _decode_utf8(buf, pos, end), end


def write_string(out: bytearray, value: str | None) -> None:
    """A non-null string; the attribute's type may admit None where another version allows it."""
    if value is None:
        raise null_value()
    data = value.encode("utf-8")
    if len(data) > MAX_STRING_BYTES:
        raise too_long(len(data))
    out += _pack_int16(len(data))
    out += data


def write_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
    else:
        write_string(out, value)


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        raise null_value()
    data = value.encode("utf-8")
    length = len(data)
    if length > MAX_STRING_BYTES:
        raise too_long(length)
    if length < 0x7F:
        out.append(length + 1)
    else:
        write_uvarint(out, length + 1)
    out += data


def write_compact_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
    else:
        write_compact_string(out, value)


# -- bytes and records -------------------------------------------------------------------------------


def read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    if pos + 4 > len(buf):
        raise DecodeError("truncated bytes length", pos)
    (length,) = _unpack_int32(buf, pos)
    pos += 4
    if length < 0:
        if length == -1:
            return None, pos
        raise DecodeError(f"negative bytes length {length}", pos - 4)
    end = _check_remaining(buf, pos, length, "bytes")
    return buf[pos:end], end


def read_compact_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    start = pos
    length, pos = read_uvarint(buf, pos)
    if length == 0:
        return None, pos
    length -= 1
    if length < 0:
        raise DecodeError(f"negative bytes length {length}", start)
    end = _check_remaining(buf, pos, length, "bytes")
    return buf[pos:end], end


def write_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        raise null_value()
    out += _pack_int32(len(value))
    out += value


def write_nullable_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        write_bytes(out, value)


def write_compact_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        raise null_value()
    write_uvarint(out, len(value) + 1)
    out += value


def write_compact_nullable_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out.append(0)
    else:
        write_compact_bytes(out, value)


# -- tagged fields -----------------------------------------------------------------------------------


def read_tag_count(buf: bytes, pos: int) -> tuple[int, int]:
    """The number of fields in a tagged section, checked before the loop that reads them.

    Each tagged field takes at least two bytes (its tag and its size), so a count above half the
    bytes that remain can never be satisfied: refusing it up front keeps the loop bounded by the input.
    """
    start = pos
    count, pos = read_uvarint(buf, pos)
    if count < 0:
        raise DecodeError(f"negative tagged field count {count}", start)
    if count > (len(buf) - pos) >> 1:
        raise tag_count_error(count, len(buf) - pos, start)
    return count, pos


def tag_count_error(count: int, remaining: int, offset: int) -> DecodeError:
    return DecodeError(
        f"{count} tagged fields need at least {2 * count} bytes, but only {remaining} remain",
        offset,
    )


def read_tag_size(buf: bytes, pos: int, tag: int) -> tuple[int, int]:
    """The size of a tagged field's value, checked for sign and against the bytes that remain."""
    start = pos
    size, pos = read_uvarint(buf, pos)
    if size < 0:
        raise DecodeError(f"tagged field {tag} has a negative size {size}", start)
    if size > len(buf) - pos:
        raise DecodeError(
            f"tagged field {tag} of {size} bytes runs past the end of the input", start
        )
    return size, pos


class RawTags:
    """Tagged fields this version does not know, kept as the wire bytes they came in.

    A decoder may meet tens of thousands of them in one section, so they are kept as one slice of the
    input (every entry's tag, size and value, in their ascending tag order) rather than one tuple per
    field; iterating yields ``(tag, value)`` pairs, and the writer copies the slice back verbatim.
    """

    __slots__ = ("raw", "count")

    def __init__(self, raw: bytes, count: int) -> None:
        self.raw = raw
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        raw, pos = self.raw, 0
        for _ in range(self.count):
            tag, pos = read_uvarint(raw, pos)
            size, pos = read_uvarint(raw, pos)
            yield tag, raw[pos : pos + size]
            pos += size

    def __getitem__(self, index: int) -> tuple[int, bytes]:
        return list(self)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawTags):
            return self.raw == other.raw and self.count == other.count
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        return repr(list(self))


def read_raw_tags(buf: bytes, pos: int, count: int, declared: int) -> tuple[RawTags, int]:
    """Read the last ``count`` fields of a tagged section, none known to this version (tags below
    ``declared`` are not valid here), and keep them raw. Tags must be strictly ascending."""
    start = pos
    previous = declared - 1
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        if tag <= previous:
            raise tag_order_error(tag, previous) if previous >= declared else invalid_tag(tag)
        previous = tag
        size, pos = read_tag_size(buf, pos, tag)
        pos += size
    return RawTags(buf[start:pos], count), pos


class _ArrayStructs(dict[int, struct.Struct]):
    """Precompiled ``struct.Struct`` objects for arrays of ``n`` fixed-width elements, by ``n``."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code = code

    def __missing__(self, count: int) -> struct.Struct:
        compiled = struct.Struct(f">{count}{self.code}")
        if count <= 256:  # keep the cache small whatever the input claims
            self[count] = compiled
        return compiled


ARRAY_bool = _ArrayStructs("?")
ARRAY_int8 = _ArrayStructs("b")
ARRAY_int16 = _ArrayStructs("h")
ARRAY_uint16 = _ArrayStructs("H")
ARRAY_int32 = _ArrayStructs("i")
ARRAY_uint32 = _ArrayStructs("I")
ARRAY_int64 = _ArrayStructs("q")
ARRAY_float64 = _ArrayStructs("d")
ZERO_BYTES = bytes(16)

# For the common case of a short array (a one-byte compact count), indexed by element count.
SMALL_bool = tuple(struct.Struct(f">{n}?") for n in range(127))
SMALL_int8 = tuple(struct.Struct(f">{n}b") for n in range(127))
SMALL_int16 = tuple(struct.Struct(f">{n}h") for n in range(127))
SMALL_uint16 = tuple(struct.Struct(f">{n}H") for n in range(127))
SMALL_int32 = tuple(struct.Struct(f">{n}i") for n in range(127))
SMALL_uint32 = tuple(struct.Struct(f">{n}I") for n in range(127))
SMALL_int64 = tuple(struct.Struct(f">{n}q") for n in range(127))
SMALL_float64 = tuple(struct.Struct(f">{n}d") for n in range(127))
_ARRAYS = {
    "bool": ARRAY_bool,
    "int8": ARRAY_int8,
    "int16": ARRAY_int16,
    "uint16": ARRAY_uint16,
    "int32": ARRAY_int32,
    "uint32": ARRAY_uint32,
    "int64": ARRAY_int64,
    "float64": ARRAY_float64,
}


def read_fixed_array(
    buf: bytes, pos: int, kind: str, compact: bool, nullable: bool
) -> tuple[list[Any] | None, int]:
    """An array of fixed-width elements, any length, classic or compact (the generic path)."""
    count, pos = read_compact_array_count(buf, pos) if compact else read_array_count(buf, pos)
    if count < 0:
        if nullable:
            return None, pos
        raise null_error()
    structure = _ARRAYS[kind][count]
    end = pos + structure.size
    if end > len(buf):
        raise truncated(pos)
    if kind == "bool" and buf[pos:end].translate(None, b"\x00\x01"):
        raise DecodeError("bool array element is neither 0 nor 1", pos)
    return list(structure.unpack_from(buf, pos)), end


def count_error(count: int, remaining: int, offset: int) -> DecodeError:
    return DecodeError(f"array of {count} elements, but only {remaining} bytes remain", offset)


def truncated(pos: int) -> DecodeError:
    return DecodeError("value runs past the end of the input", pos)


def too_long(size: int) -> EncodeError:
    return EncodeError(f"string of {size} UTF-8 bytes is longer than {MAX_STRING_BYTES}")


def tag_size_error(tag: int, size: int, used: int) -> DecodeError:
    return DecodeError(f"tagged field {tag} declares {size} bytes but its value has {used}")


def write_raw_tags(
    out: bytearray, unknown: list[tuple[int, bytes]] | RawTags, declared: int
) -> None:
    """Write tags kept raw from a decode, after the known ones (whose numbers are all below them)."""
    if type(unknown) is RawTags:  # checked when decoded; only its first tag can clash here
        if read_uvarint(unknown.raw, 0)[0] < declared:
            raise EncodeError(f"unknown tagged field {unknown[0][0]} reuses a known tag")
        out += unknown.raw
        return
    seen: set[int] = set()
    for tag, _ in unknown:
        if tag < declared or tag in seen:
            raise EncodeError(f"unknown tagged field {tag} reuses a known or repeated tag")
        seen.add(tag)
    for tag, data in sorted(unknown, key=lambda item: item[0]):
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


def tag_order_error(tag: int, previous: int) -> DecodeError:
    if tag < 0:
        return invalid_tag(tag)
    what = "repeats" if tag == previous else "comes after"
    return DecodeError(
        f"tagged field {tag} {what} tagged field {previous}: tags must be strictly ascending"
    )


def default_tag(tag: int) -> DecodeError:
    return DecodeError(f"tagged field {tag} carries its default value, which is never written")


def bad_bool(value: int, offset: int) -> DecodeError:
    return DecodeError(f"bool byte {value} is neither 0 nor 1", offset)


def bad_presence(value: int, offset: int) -> DecodeError:
    return DecodeError(
        f"nullable struct presence marker {value} is neither present nor null", offset
    )


def tags_not_supported() -> EncodeError:
    return EncodeError("tagged fields were set, but this version does not support them")


def null_error() -> DecodeError:
    return DecodeError("non-nullable field was serialized as null")


def null_value() -> EncodeError:
    return EncodeError("is null but not nullable in this version")


def invalid_tag(tag: int) -> DecodeError:
    return DecodeError(f"tag {tag} is not valid for this version")


def skip_unknown_tags(buf: bytes, pos: int, known: int) -> tuple[RawTags | None, int]:
    """Read a tagged section in which this version knows no tags (tags below ``known`` are invalid)."""
    count, pos = read_tag_count(buf, pos)
    if count == 0:
        return None, pos
    return read_raw_tags(buf, pos, count, known)


def not_ignorable() -> EncodeError:
    return EncodeError(
        "has a non-default value, but the field is not in this version and is not ignorable"
    )
