"""Big-endian signed integers read from a buffer at an offset, for the stages above the packets.

The one place above the link layers where the compiled and the pure build read differently (see
``layers.COMPILED``): compiled, each field of a ``bytes`` buffer is one of librt's typed reads (a C
call that makes no object) and a function returning several fields returns them unboxed (mypyc
passes a tuple of machine integers as a C struct between the modules of its group); interpreted,
or for a ``bytearray``, one ``struct`` unpack reads them all, which costs less than a call per
field. The several-field functions are named by their layout (``i32_i16`` ...) so that the Kafka
stage, which knows what the fields mean, reads a header in one call either way.
"""

from __future__ import annotations

import struct
from typing import Callable, Final

# Whether this module runs compiled: then ``bytes`` are read with librt's typed readers.
COMPILED: Final = not __file__.endswith((".py", ".pyc"))
if COMPILED:
    from librt.strings import read_i16_be, read_i32_be

# What the functions read: a buffer of whole bytes (a frame reader's ``bytearray`` or a payload).
Buffer = bytes | bytearray

I16: Final = struct.Struct(">h")
I32: Final = struct.Struct(">i")
I32_I32: Final = struct.Struct(">ii")
I16_I16_I32_I16: Final = struct.Struct(">hhih")
I32_I16_I16_I32_I16: Final = struct.Struct(">ihhih")
# Bound once: compiled, ``I16.unpack_from(...)`` would look the method up on every call. Typed as
# what they return, so that the functions below hand the unpacked tuple on without rebuilding it.
_unpack_i16: Final[Callable[[Buffer, int], tuple[int]]] = I16.unpack_from
_unpack_i32: Final[Callable[[Buffer, int], tuple[int]]] = I32.unpack_from
_unpack_i32_i32: Final[Callable[[Buffer, int], tuple[int, int]]] = I32_I32.unpack_from
_unpack_i16_i16_i32_i16: Final[Callable[[Buffer, int], tuple[int, int, int, int]]] = (
    I16_I16_I32_I16.unpack_from
)
_unpack_i32_i16_i16_i32_i16: Final[Callable[[Buffer, int], tuple[int, int, int, int, int]]] = (
    I32_I16_I16_I32_I16.unpack_from
)


def i16_be(buf: Buffer, at: int) -> int:
    """The int16 at ``buf[at:at + 2]`` (``struct.error`` when the buffer is shorter)."""
    if COMPILED and isinstance(buf, bytes):
        return int(read_i16_be(buf, at))
    return _unpack_i16(buf, at)[0]


def i32_be(buf: Buffer, at: int) -> int:
    """The int32 at ``buf[at:at + 4]``."""
    if COMPILED and isinstance(buf, bytes):
        return int(read_i32_be(buf, at))
    return _unpack_i32(buf, at)[0]


def i32_i32_be(buf: Buffer, at: int) -> tuple[int, int]:
    """Two int32s from ``at`` on."""
    if COMPILED and isinstance(buf, bytes):
        return int(read_i32_be(buf, at)), int(read_i32_be(buf, at + 4))
    return _unpack_i32_i32(buf, at)


def i16_i16_i32_i16_be(buf: Buffer, at: int) -> tuple[int, int, int, int]:
    """An int16, an int16, an int32 and an int16 from ``at`` on (10 bytes)."""
    if COMPILED and isinstance(buf, bytes):
        return (
            int(read_i16_be(buf, at)),
            int(read_i16_be(buf, at + 2)),
            int(read_i32_be(buf, at + 4)),
            int(read_i16_be(buf, at + 8)),
        )
    return _unpack_i16_i16_i32_i16(buf, at)


def i32_i16_i16_i32_i16_be(buf: Buffer, at: int) -> tuple[int, int, int, int, int]:
    """An int32 then ``i16_i16_i32_i16_be`` from ``at`` on (14 bytes)."""
    if COMPILED and isinstance(buf, bytes):
        return (
            int(read_i32_be(buf, at)),
            int(read_i16_be(buf, at + 4)),
            int(read_i16_be(buf, at + 6)),
            int(read_i32_be(buf, at + 8)),
            int(read_i16_be(buf, at + 12)),
        )
    return _unpack_i32_i16_i16_i32_i16(buf, at)
