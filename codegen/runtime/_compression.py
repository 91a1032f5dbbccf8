"""Record-batch compression codecs: none, gzip, snappy, lz4 and zstd.

gzip uses the standard library's ``zlib``. snappy, lz4 and zstd use the ``cramjam`` package (Rust/C
bindings for all three), which is optional: the records layer still imports (and handles uncompressed
and gzip batches) when it is missing; using one of those codecs then raises
:class:`CodecUnavailableError`, which names the package to install.

Every decompressor takes ``limit``, the most bytes it may produce. The size is bounded before the data
is expanded (from snappy's length preambles, lz4 and zstd block headers, or zlib's ``max_length``), so a
"decompression bomb" raises :class:`DecodeError` without allocating more than about ``limit`` bytes.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from ._frames import lz4_frame_compress, lz4_frame_decompress, zstd_frame_bound
from ._runtime import ByteData, DecodeError, EncodeError, ProtocolError

# cramjam is imported on the first snappy, lz4 or zstd batch, not with this module: it costs a
# process about 3 MiB of memory, which a node that never sees such a batch need not pay.
# ``_UNLOADED`` until then; ``None`` when it is not installed (those codecs raise
# CodecUnavailableError).
_UNLOADED: Any = object()
_cramjam: Any = _UNLOADED

__all__ = [
    "ATTR_CODEC_MASK",
    "CODEC_NAMES",
    "CodecUnavailableError",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "codec_id",
    "compress",
    "decompress",
]

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
ATTR_CODEC_MASK = 0x07  # the attribute bits naming the codec, in every magic
DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

# Kafka's default compression levels (compression.<codec>.level): gzip = Deflater.DEFAULT (6), zstd 3.
_DEFAULT_GZIP_LEVEL = 6
_DEFAULT_ZSTD_LEVEL = 3

# What java.util.zip.GZIPOutputStream writes: no name, mtime 0, XFL 0, OS 255 (unknown).
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"

# snappy-java's SnappyOutputStream stream header: magic, then int32 version 1, int32 compatible 1.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_INT32 = struct.Struct(">i")
_GZIP_FIRST_PIECE = 32  # input bytes handed to zlib first for each gzip member
_ZSTD_FIRST_TRY = 64 * 1024  # buffer slack for a zstd frame without a content size, beyond 16x
# What cramjam's zstd decompress_into says when the output buffer is full (pinned cramjam 2.14;
# tests/records/test_hostile.py checks it), as opposed to corrupt data.
_ZSTD_SHORT_BUFFER = "failed to write whole buffer"


class CodecUnavailableError(ProtocolError):
    """A compression codec is needed but the library that implements it is not installed."""


def _lib() -> Any:
    global _cramjam
    if _cramjam is _UNLOADED:
        try:
            import cramjam

            _cramjam = cramjam
        except ImportError:
            _cramjam = None
    if _cramjam is None:
        raise CodecUnavailableError(
            "snappy, lz4 and zstd record batches need the 'cramjam' package (pip install cramjam)"
        )
    return _cramjam


def codec_id(codec: int | str) -> int:
    """The attribute value (0-4) for a codec name such as ``"lz4"``, or an int passed through."""
    if isinstance(codec, int) and not isinstance(codec, bool):
        if 0 <= codec < len(CODEC_NAMES):
            return codec
    elif isinstance(codec, str) and codec.lower() in CODEC_NAMES:
        return CODEC_NAMES.index(codec.lower())
    raise EncodeError(f"unknown compression {codec!r}; expected one of {', '.join(CODEC_NAMES)}")


# -- compress ----------------------------------------------------------------------------------------


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """Compress ``data`` the way the Java client does for ``codec`` (1-4; snappy xerial-framed)."""
    if codec == 1:
        return _gzip_compress(data, _DEFAULT_GZIP_LEVEL if level is None else level)
    if codec == 2:
        lib = _lib()
        out = bytearray(_XERIAL_HEADER)
        view = memoryview(data)
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = lib.snappy.compress_raw(view[start : start + _XERIAL_BLOCK])
            out += _INT32.pack(len(block))
            out += block
        return bytes(out)
    if codec == 3:
        return lz4_frame_compress(_lib(), data)
    if codec == 4:
        return bytes(
            _lib().zstd.compress(data, level=_DEFAULT_ZSTD_LEVEL if level is None else level)
        )
    raise EncodeError(f"unknown compression codec {codec}")


def _gzip_compress(data: bytes, level: int) -> bytes:
    deflater = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return _GZIP_HEADER + body + trailer


# -- decompress --------------------------------------------------------------------------------------


def decompress(
    codec: int, data: ByteData, limit: int, *, broken_lz4_checksum: bool = False
) -> bytes:
    """Expand ``data`` compressed with ``codec``; more than ``limit`` bytes is a DecodeError.

    ``broken_lz4_checksum`` accepts the wrong lz4 frame-header checksum of magic-0 message sets.
    """
    name = CODEC_NAMES[codec] if 0 <= codec < len(CODEC_NAMES) else str(codec)
    try:
        if codec == 1:
            return _gzip_decompress(data, limit)
        if codec == 2:
            return _snappy_decompress(_lib(), data, limit)
        if codec == 3:
            return lz4_frame_decompress(_lib(), data, limit, broken_lz4_checksum)
        if codec == 4:
            return _zstd_decompress(_lib(), data, limit)
    except (DecodeError, CodecUnavailableError):
        raise
    except Exception as exc:  # zlib.error, cramjam.DecompressionError, ...
        raise DecodeError(f"corrupt {name} data: {exc}") from None
    raise DecodeError(f"unknown compression codec {codec}")


def _too_big(name: str, limit: int) -> DecodeError:
    return DecodeError(
        f"{name} data expands beyond the decompression limit of {limit} bytes "
        "(raise max_decompressed_bytes to accept it)"
    )


def _gzip_decompress(data: ByteData, limit: int) -> bytes:
    """Inflate concatenated gzip members (Java's GZIPInputStream reads them all) in linear time.

    The first member is fed the whole input in one call: a batch is nearly always one member, and
    feeding it in small pieces cost four calls per batch. Each later member is fed in pieces that
    double in size, so what zlib hands back after a member ends (its ``unused_data``, a copy) is
    never more than twice the member: copying the whole rest of the input per member would make a
    run of tiny members quadratic (the first member's copy is made once, so it stays linear).
    """
    view = memoryview(data)
    end = len(view)
    parts: list[bytes] = []
    total = 0
    pos = 0
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        piece = end if pos == 0 else _GZIP_FIRST_PIECE
        while not inflater.eof:
            if pos >= end:
                raise DecodeError("truncated gzip data")
            chunk = inflater.decompress(view[pos : pos + piece], limit - total + 1)
            pos = min(pos + piece, end)
            total += len(chunk)
            if total > limit:
                raise _too_big("gzip", limit)
            parts.append(chunk)
            piece *= 2
        pos -= len(inflater.unused_data)
        # Anything after the last member that does not start another one is ignored, as in Java.
        if end - pos < 10 or view[pos : pos + 2].tobytes() != b"\x1f\x8b":
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _snappy_decompress(lib: Any, data: ByteData, limit: int) -> bytes:
    data = bytes(data)
    if not data.startswith(_XERIAL_MAGIC):
        size = lib.snappy.decompress_raw_len(data)
        if size > limit:
            raise _too_big("snappy", limit)
        return bytes(lib.snappy.decompress_raw(data))
    # xerial framing: header, then (int32 length, raw snappy block) chunks. snappy-java also accepts a
    # second header where a chunk would start (concatenated streams).
    blocks: list[bytes] = []
    total = 0
    pos = 0
    end = len(data)
    while pos < end:
        if data.startswith(_XERIAL_MAGIC, pos):
            if pos + 16 > end:
                raise DecodeError("truncated xerial snappy header")
            pos += 16
            continue
        if pos + 4 > end:
            raise DecodeError("truncated xerial snappy chunk length")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise DecodeError(
                f"xerial snappy chunk of {length} bytes runs past the end of the data"
            )
        block = data[pos : pos + length]
        pos += length
        total += lib.snappy.decompress_raw_len(block)
        if total > limit:
            raise _too_big("snappy", limit)
        blocks.append(block)
    return b"".join(bytes(lib.snappy.decompress_raw(block)) for block in blocks)


def _zstd_decompress(lib: Any, data: ByteData, limit: int) -> bytes:
    bound, exact = zstd_frame_bound(data)
    if bound <= limit:
        return bytes(lib.zstd.decompress(data))
    if exact:
        raise _too_big("zstd", limit)
    # Frames without a content size: their blocks promise up to 128 KiB each, often far more than
    # they hold. Decode into a buffer that starts near the input's size and doubles, up to the limit,
    # only while the data really does not fit.
    capacity = min(limit, 16 * len(data) + _ZSTD_FIRST_TRY)
    while True:
        out = bytearray(capacity)
        try:
            size = lib.zstd.decompress_into(data, out)
        except Exception as exc:
            if capacity == limit or _ZSTD_SHORT_BUFFER not in str(exc):
                raise DecodeError(
                    f"zstd data is corrupt or expands beyond the decompression limit of {limit} "
                    f"bytes (raise max_decompressed_bytes to accept it): {exc}"
                ) from None
            del out
            capacity = min(limit, 2 * capacity)
            continue
        del out[size:]
        return bytes(out)
