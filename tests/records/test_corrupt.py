"""Corrupt, truncated and hostile input: every case is a DecodeError (or a reported partial tail),
never a crash and never an unbounded allocation."""

from __future__ import annotations

import struct
import time
import tracemalloc
import zlib

import pytest

from kraftwire.records import (
    CodecUnavailableError,
    DecodeError,
    crc32c,
    decode_batches,
    encode_batch,
    iter_batches,
)
from streams import check_stream

cramjam = pytest.importorskip("cramjam")

RECORDS = [(b"k%d" % i, b"v" * 30, [("h", b"x")], 1_700_000_000_000 + i) for i in range(20)]
MIB = 1024 * 1024


def _reseal(batch: bytearray) -> bytes:
    """Fix up the batch length and CRC after editing a batch, so only the edit is 'wrong'."""
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def _with_body(codec: int, body: bytes, count: int = 1) -> bytes:
    """A v2 batch whose (already compressed) records section is ``body``."""
    header = bytearray(encode_batch([(None, b"x", None, 0)], base_offset=77))[:61]
    struct.pack_into(">h", header, 21, codec)
    struct.pack_into(">i", header, 57, count)
    return _reseal(header + body)


def test_corrupted_crc_names_the_base_offset():
    data = bytearray(encode_batch(RECORDS, base_offset=1234))
    data[-3] ^= 0x40
    with pytest.raises(DecodeError, match=r"offset 1234.*CRC-32C mismatch"):
        decode_batches(bytes(data))
    data = bytearray(encode_batch(RECORDS, base_offset=99, compression="lz4"))
    struct.pack_into(">I", data, 17, 0)
    with pytest.raises(DecodeError, match="offset 99"):
        decode_batches(bytes(data))


def test_partial_last_batch_is_reported_not_an_error():
    one = encode_batch(RECORDS, base_offset=0)
    two = encode_batch(RECORDS, base_offset=20, compression="gzip")
    for cut in (1, 11, 12, 16, 17, 61, len(two) - 1):
        check_stream(decode_batches, one + two, decode_batches(one + two)[0], trailing=two[:cut])
        assert [b.base_offset for b in iter_batches(one + two[:cut])] == [0]
    assert decode_batches(b"") == ([], b"")
    assert decode_batches(None) == ([], b"")


def test_truncated_batch_whose_length_was_fixed_up():
    data = bytearray(encode_batch(RECORDS))
    with pytest.raises(DecodeError, match="record"):
        decode_batches(_reseal(data[:-10]))


def test_record_count_larger_than_the_bytes_allow():
    for count in (21, 2**31 - 1):
        data = bytearray(encode_batch(RECORDS, base_offset=5))
        struct.pack_into(">i", data, 57, count)
        start = time.perf_counter()
        with pytest.raises(DecodeError, match="offset 5"):
            decode_batches(_reseal(data))
        assert time.perf_counter() - start < 1
    data = bytearray(encode_batch(RECORDS))
    struct.pack_into(">i", data, 57, 19)  # fewer records than the bytes hold
    with pytest.raises(DecodeError, match="remain"):
        decode_batches(_reseal(data))


def test_bad_lengths_and_magic():
    data = bytearray(encode_batch(RECORDS))
    bad_magic = bytearray(data)
    bad_magic[16] = 7
    with pytest.raises(DecodeError, match="magic"):
        decode_batches(bytes(bad_magic))
    tiny = bytearray(data)
    struct.pack_into(">i", tiny, 8, 20)
    with pytest.raises(DecodeError, match="smaller"):
        decode_batches(bytes(tiny))
    record_length = bytearray(data)
    record_length[61] = 0x7E  # first record's length varint: 63 instead of the real length
    with pytest.raises(DecodeError):
        decode_batches(_reseal(record_length))


def _gzip_bomb(size: int) -> bytes:
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(MIB)
    return b"".join([deflater.compress(chunk) for _ in range(size // MIB)] + [deflater.flush()])


def _zstd_bomb(size: int) -> bytes:
    compressor = cramjam.zstd.Compressor(level=1)
    chunk = bytes(MIB)
    for _ in range(size // MIB):
        compressor.compress(chunk)
    return bytes(compressor.finish())


def _lz4_bomb(size: int) -> bytes:
    block = bytes(cramjam.lz4.compress_block(bytes(64 * 1024), store_size=False))
    frame = bytes.fromhex("04224d186040") + bytes([0x82])
    return frame + (struct.pack("<I", len(block)) + block) * (size // (64 * 1024)) + bytes(4)


def _snappy_bomb(size: int) -> bytes:
    block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    header = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    return header + (struct.pack(">i", len(block)) + block) * (size // (32 * 1024))


@pytest.mark.parametrize(
    "codec, bomb",
    [(1, _gzip_bomb), (2, _snappy_bomb), (3, _lz4_bomb), (4, _zstd_bomb)],
    ids=["gzip", "snappy", "lz4", "zstd"],
)
def test_decompression_bomb(codec, bomb):
    data = _with_body(codec, bomb(64 * MIB), count=1000)
    assert len(data) < 4 * MIB
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="decompression limit"):
            decode_batches(data, max_decompressed_bytes=8 * MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * MIB
    # The same batch decodes (to garbage records, hence a different error) once the limit allows it.
    with pytest.raises(DecodeError) as info:
        decode_batches(data, max_decompressed_bytes=65 * MIB)
    assert "decompression limit" not in str(info.value)


def test_bombs_that_claim_gigabytes_in_their_headers():
    # zstd frame header: single segment, 8-byte content size of 16 GiB, one empty raw block.
    zstd = struct.pack("<I", 0xFD2FB528) + bytes([0xE0]) + struct.pack("<Q", 16 << 30) + b"\x01\0\0"
    # raw snappy: a preamble claiming 4 GiB, then a few bytes.
    snappy = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00abc"
    for codec, body in ((4, zstd), (2, snappy)):
        with pytest.raises(DecodeError):
            decode_batches(_with_body(codec, body))


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_compressed_data(codec):
    for body in (b"", b"\x00", b"not compressed at all" * 3, bytes(range(256))):
        with pytest.raises(DecodeError):
            decode_batches(_with_body(codec, body))


def test_missing_codec_library_names_the_package(monkeypatch):
    import sys

    module = sys.modules[decode_batches.__module__]
    compression = sys.modules[module.__name__.rsplit(".", 1)[0] + "._compression"]
    monkeypatch.setattr(compression, "_cramjam", None)
    monkeypatch.setitem(sys.modules, "cramjam", None)
    data = encode_batch(RECORDS, compression="gzip")  # gzip needs only the standard library
    assert len(decode_batches(data)[0][0].records) == 20
    with pytest.raises(CodecUnavailableError, match="pip install cramjam"):
        encode_batch(RECORDS, compression="zstd")
