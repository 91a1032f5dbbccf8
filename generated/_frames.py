"""Container formats around the lz4 and zstd codecs: the LZ4 frame as Kafka writes it, and a size
bound for zstd frames, both read from the block headers without expanding anything.

Kafka's Java client writes LZ4 frames itself (``KafkaLZ4BlockOutputStream``): FLG 0x60 (version 1,
independent blocks, no checksums, no content size), BD 0x40 (64 KiB blocks), a header checksum, then
blocks, each stored raw when compressing does not shrink it, and a zero end mark. Message sets of magic 0
carry a header checksum computed over the wrong bytes (the magic number too); readers must accept it.
"""

from __future__ import annotations

import re
import struct

from collections.abc import Callable
from types import ModuleType

from ._runtime import ByteData, DecodeError

__all__ = [
    "lz4_block_size",
    "lz4_frame_compress",
    "lz4_frame_decompress",
    "xxh32",
    "zstd_frame_bound",
]

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK = 64 * 1024
_LZ4_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_UINT32_LE = struct.Struct("<I")
_LZ4_FIRST_TRY = 64 * 1024  # buffer slack for a block's first try, on top of 16x its size
_RUN_OF_255 = re.compile(b"\xff*")

# -- xxHash32 (only ever applied to a few header bytes) ----------------------------------------------

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (pure Python; used for LZ4 frame-header checksums)."""
    n = len(data)
    pos = 0
    if n >= 16:
        lanes = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                (word,) = _UINT32_LE.unpack_from(data, pos)
                lanes[i] = (_rotl((lanes[i] + word * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = _rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)
    else:
        h = seed + _P5
    h = (h + n) & _M32
    while pos + 4 <= n:
        (word,) = _UINT32_LE.unpack_from(data, pos)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def _header_checksum(descriptor: bytes) -> int:
    return (xxh32(descriptor) >> 8) & 0xFF


_KAFKA_LZ4_HEADER = _LZ4_MAGIC + bytes([0x60, 0x40, _header_checksum(b"\x60\x40")])

# -- lz4 ---------------------------------------------------------------------------------------------


def lz4_frame_compress(lib: ModuleType, data: ByteData) -> bytes:
    """An LZ4 frame with the layout KafkaLZ4BlockOutputStream writes (64 KiB independent blocks)."""
    out = bytearray(_KAFKA_LZ4_HEADER)
    view = memoryview(data)
    compress_block = lib.lz4.compress_block
    for start in range(0, len(view), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        packed = compress_block(chunk, store_size=False)
        if len(packed) >= len(chunk):
            out += _UINT32_LE.pack(len(chunk) | 0x80000000)
            out += chunk
        else:
            out += _UINT32_LE.pack(len(packed))
            out += packed
    out += b"\x00\x00\x00\x00"
    return bytes(out)


# An independent block: (start, stop, stored_raw, block_max).
_Block = tuple[int, int, bool, int]
# A frame: (start, header checksum position).
_Frame = tuple[int, int]


def lz4_frame_decompress(
    lib: ModuleType, data: ByteData, limit: int, broken_checksum: bool = False
) -> bytes:
    """Expand one or more concatenated LZ4 frames into at most ``limit`` bytes."""
    whole = bytes(data)
    blocks, frames, bound, linked = _lz4_blocks(whole, broken_checksum)
    if linked:
        return _lz4_linked(lib, whole, frames, bound, limit)
    return _lz4_independent(lib, whole, blocks, limit)


def _lz4_blocks(data: bytes, broken_checksum: bool) -> tuple[list[_Block], list[_Frame], int, bool]:
    """Walk the frame and block headers: ``(blocks, frames, bound, linked)``.

    ``blocks`` are ``(start, stop, stored_raw, block_max)``, ``frames`` the ``(start, header checksum
    position)`` of each frame, ``bound`` the most bytes the blocks can expand to, and ``linked`` whether
    any frame has dependent blocks.
    """
    end = len(data)
    pos = 0
    blocks: list[_Block] = []
    bound = 0
    linked = False
    frames: list[_Frame] = []
    while pos == 0 or (pos + 4 <= end and data.startswith(_LZ4_MAGIC, pos)):
        frame_start = pos
        if not data.startswith(_LZ4_MAGIC, pos) or pos + 7 > end:
            raise DecodeError("not an LZ4 frame (bad magic or truncated header)")
        flg, bd = data[pos + 4], data[pos + 5]
        if flg >> 6 != 1:
            raise DecodeError(f"unsupported LZ4 frame version {flg >> 6}")
        if flg & 0x02 or bd & 0x8F:
            raise DecodeError("LZ4 frame descriptor has reserved bits set")
        block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 7)
        if block_max is None:
            raise DecodeError(f"unsupported LZ4 block size id {(bd >> 4) & 7}")
        linked = linked or not flg & 0x20
        block_checksums = 4 if flg & 0x10 else 0
        hc_pos = pos + 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        if hc_pos >= end:
            raise DecodeError("truncated LZ4 frame header")
        expected = _header_checksum(data[pos + 4 : hc_pos])
        if data[hc_pos] != expected:
            if not (broken_checksum and data[hc_pos] == _header_checksum(data[pos:hc_pos])):
                raise DecodeError("LZ4 frame header checksum mismatch")
        pos = hc_pos + 1
        frames.append((frame_start, hc_pos))
        while True:
            if pos + 4 > end:
                raise DecodeError("truncated LZ4 frame (no end mark)")
            (size,) = _UINT32_LE.unpack_from(data, pos)
            pos += 4
            if size == 0:
                break
            stored_raw = bool(size & 0x80000000)
            size &= 0x7FFFFFFF
            if size > block_max or pos + size + block_checksums > end:
                raise DecodeError(f"LZ4 block of {size} bytes is too large or truncated")
            blocks.append((pos, pos + size, stored_raw, block_max))
            bound += size if stored_raw else block_max
            pos += size + block_checksums
        if flg & 0x04:
            pos += 4  # content checksum (not verified; the batch CRC covers the compressed bytes)
    return blocks, frames, bound, linked


def _lz4_independent(lib: ModuleType, data: bytes, blocks: list[_Block], limit: int) -> bytes:
    """Independent blocks (what Kafka writes), each expanded into a buffer sized to what it holds.

    A frame's block size is only a maximum (a one-byte block may sit in a 4 MiB-block frame), so a
    block is first tried in a buffer of ``16 x its size + 64 KiB`` (enough for almost every real
    block); one that does not fit is measured exactly from its sequence headers before a larger
    buffer is allocated.
    """
    out = bytearray()
    source = memoryview(data)
    decompress_into = lib.lz4.decompress_block_into
    for start, stop, stored_raw, block_max in blocks:
        room = min(block_max, limit - len(out))
        size = stop - start
        if stored_raw:
            if size > room:
                raise _too_big(limit)
            out += source[start:stop]
            continue
        block = source[start:stop]
        buffer = _lz4_try_block(decompress_into, block, min(room, 16 * size + _LZ4_FIRST_TRY))
        if buffer is None:
            exact = lz4_block_size(data, start, stop)
            if exact > block_max:
                raise DecodeError(f"LZ4 block expands to {exact} bytes, more than its frame allows")
            if exact > room:
                raise _too_big(limit)
            buffer = _lz4_try_block(decompress_into, block, exact)
            if buffer is None:
                raise DecodeError("corrupt LZ4 block")
        out += buffer
    return bytes(out)


def _lz4_try_block(
    decompress_into: Callable[..., int], block: memoryview, capacity: int
) -> bytearray | None:
    """The expanded block, or None when it is corrupt or needs more than ``capacity`` bytes."""
    buffer = bytearray(capacity)
    try:
        size = decompress_into(block, buffer, capacity)
    except Exception:  # liblz4 does not tell a short buffer from corrupt input
        return None
    del buffer[size:]
    return buffer


def lz4_block_size(data: ByteData, pos: int, end: int) -> int:
    """The size the independent LZ4 block ``data[pos:end]`` expands to, read from its sequence
    headers (token, literal length, literals, match offset, match length) without expanding it.

    Raises DecodeError when the block is malformed: truncated, or a match reaching before its start.
    """
    size = 0
    while True:
        if pos >= end:
            raise DecodeError("truncated LZ4 block")
        token = data[pos]
        pos += 1
        literals = token >> 4
        if literals == 15:
            literals, pos = _lz4_length(data, pos, end, literals)
        pos += literals
        size += literals
        if pos >= end:  # the last sequence has literals only
            if pos > end:
                raise DecodeError("LZ4 literals run past the end of the block")
            return size
        if pos + 2 > end:
            raise DecodeError("truncated LZ4 match offset")
        offset = data[pos] | data[pos + 1] << 8
        pos += 2
        if offset == 0 or offset > size:
            raise DecodeError(f"LZ4 match offset {offset} outside the block")
        match = token & 15
        if match == 15:
            match, pos = _lz4_length(data, pos, end, match)
        size += match + 4


def _lz4_length(data: ByteData, pos: int, end: int, length: int) -> tuple[int, int]:
    """A length continued in extra bytes: each 255 adds 255 and goes on, any other byte ends it."""
    run = _RUN_OF_255.match(data, pos, end)
    stop = run.end() if run is not None else pos  # a starred pattern matches everywhere, if empty
    if stop >= end:
        raise DecodeError("truncated LZ4 length")
    return length + 255 * (stop - pos) + data[stop], stop + 1


def _lz4_linked(
    lib: ModuleType, data: bytes, frames: list[_Frame], bound: int, limit: int
) -> bytes:
    """Frames with dependent blocks (not written by Kafka clients): decoded whole, by liblz4."""
    if bound > limit:
        raise _too_big(limit)
    fixed = bytearray(data)
    for frame_start, hc_pos in frames:  # repair a magic-0 header checksum for liblz4
        fixed[hc_pos] = _header_checksum(bytes(fixed[frame_start + 4 : hc_pos]))
    return bytes(lib.lz4.decompress(bytes(fixed)))


def _too_big(limit: int) -> DecodeError:
    return DecodeError(
        f"lz4 data expands beyond the decompression limit of {limit} bytes "
        "(raise max_decompressed_bytes to accept it)"
    )


# -- zstd --------------------------------------------------------------------------------------------

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 * 1024


def zstd_frame_bound(data: ByteData) -> tuple[int, bool]:
    """An upper bound on the decompressed size of concatenated zstd frames, and whether it is exact.

    Raises DecodeError when the frames are malformed or truncated.
    """
    data = bytes(data)
    end = len(data)
    pos = 0
    total = 0
    exact = True
    if end == 0:
        raise DecodeError("empty zstd data")
    while pos < end:
        if pos + 4 > end:
            raise DecodeError("truncated zstd frame magic")
        (magic,) = _UINT32_LE.unpack_from(data, pos)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            if pos + 8 > end:
                raise DecodeError("truncated zstd skippable frame")
            pos += 8 + _UINT32_LE.unpack_from(data, pos + 4)[0]
            continue
        if magic != _ZSTD_MAGIC:
            raise DecodeError("not a zstd frame (bad magic)")
        pos, frame_size, window, checksum = _zstd_header(data, pos + 4, end)
        block_max = min(window, _ZSTD_BLOCK_MAX)
        blocks_size = 0
        while True:
            if pos + 3 > end:
                raise DecodeError("truncated zstd block header")
            header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            pos += 3
            kind = (header >> 1) & 3
            size = header >> 3
            if size > block_max:  # raw and RLE: the expanded size; compressed: the stored size
                raise DecodeError(f"zstd block of {size} bytes is larger than its frame allows")
            if kind == 0:  # raw
                blocks_size += size
                pos += size
            elif kind == 1:  # RLE: one byte repeated `size` times
                blocks_size += size
                pos += 1
            elif kind == 2:
                blocks_size += block_max
                pos += size
            else:
                raise DecodeError("reserved zstd block type")
            if pos > end:
                raise DecodeError("truncated zstd block")
            if header & 1:
                break
        if frame_size is None:
            exact = False
            total += blocks_size
        else:
            if frame_size > blocks_size:
                raise DecodeError("zstd frame content size exceeds what its blocks can hold")
            total += frame_size
        pos += checksum
        if pos > end:
            raise DecodeError("truncated zstd frame checksum")
    return total, exact


def _zstd_header(data: bytes, pos: int, end: int) -> tuple[int, int | None, int, int]:
    """Parse a frame header after the magic.

    Returns (position of the first block, content size or None, window size, checksum length).
    """
    if pos >= end:
        raise DecodeError("truncated zstd frame header")
    descriptor = data[pos]
    pos += 1
    fcs_flag = descriptor >> 6
    single_segment = descriptor & 0x20
    dict_size = (0, 1, 2, 4)[descriptor & 3]
    fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    window = 0
    if not single_segment:
        if pos >= end:
            raise DecodeError("truncated zstd frame header")
        exponent, mantissa = data[pos] >> 3, data[pos] & 7
        base = 1 << (10 + exponent)
        window = base + (base >> 3) * mantissa
        pos += 1
    pos += dict_size
    if pos + fcs_size > end:
        raise DecodeError("truncated zstd frame header")
    frame_size = None
    if fcs_size:
        frame_size = int.from_bytes(data[pos : pos + fcs_size], "little")
        if fcs_size == 2:
            frame_size += 256
        pos += fcs_size
    if single_segment and frame_size is not None:  # a single segment always has a content size
        window = frame_size
    return pos, frame_size, window, 4 if descriptor & 0x04 else 0
