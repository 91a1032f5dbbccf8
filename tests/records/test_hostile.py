"""Hostile input from issue #12: work that grows linearly with the input, allocations that follow the
data that really arrives, and bad JSON values rejected where they enter, with the field named.

Work and memory are counted (bytes fed to zlib, tracemalloc peaks), never timed.
"""

from __future__ import annotations

import gzip
import importlib
import json
import re
import struct
import tracemalloc
import types
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.generated import lookup
from kraftwire.records import (
    DecodeError,
    EncodeError,
    ProtocolError,
    batch_from_json,
    batch_to_json,
    crc32c,
    decode_batches,
    encode_batch,
)

MIB = 1024 * 1024
PACKAGE = decode_batches.__module__.rsplit(".", 1)[0]
compression = importlib.import_module(PACKAGE + "._compression")
frames = importlib.import_module(PACKAGE + "._frames")
RECORDS = [(b"k%d" % i, b"value %d" % i, [("h", b"x")], 1_700_000_000_000 + i) for i in range(50)]


def _v2_with_body(codec: int, body: bytes, count: int, template: bytes | None = None) -> bytes:
    """A v2 batch whose records section is ``body`` (already compressed with ``codec``); the other
    header fields are ``template``'s."""
    template = template or encode_batch([(None, b"x", None, 0)], base_offset=7)
    batch = bytearray(template[:61]) + body
    struct.pack_into(">h", batch, 21, codec)
    struct.pack_into(">i", batch, 57, count)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def _legacy_message(offset: int, magic: int, attributes: int, key, value) -> bytes:
    """One magic 0/1 message set entry (offset, size, crc, magic, attributes, [timestamp], key, value)."""
    body = bytearray([magic, attributes])
    if magic == 1:
        body += struct.pack(">q", 1_600_000_000_000)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


# -- gzip: concatenated members ---------------------------------------------------------------------

EMPTY_MEMBER = gzip.compress(b"", mtime=0)  # 20 bytes


class _CountingZlib(types.SimpleNamespace):
    """The zlib module, with every inflater counting the input bytes it is handed and gives back."""

    def __init__(self) -> None:
        names = [
            name for name in dir(zlib) if not name.startswith("__") and name != "decompressobj"
        ]
        super().__init__(**{name: getattr(zlib, name) for name in names})
        self.bytes_handled = 0
        self.inflaters = 0
        self.calls = 0

    def decompressobj(self, *args):
        self.inflaters += 1
        return _CountingInflater(self, zlib.decompressobj(*args))


class _CountingInflater:
    def __init__(self, counter: _CountingZlib, inner) -> None:
        self._counter = counter
        self._inner = inner

    def decompress(self, data, max_length=0):
        self._counter.bytes_handled += len(data)
        self._counter.calls += 1
        return self._inner.decompress(data, max_length)

    def __getattr__(self, name):
        value = getattr(self._inner, name)
        if isinstance(value, bytes):  # unused_data / unconsumed_tail: copies of the input's rest
            self._counter.bytes_handled += len(value)
        return value


def _count_gzip_work(monkeypatch, data: bytes) -> int:
    counter = _CountingZlib()
    monkeypatch.setattr(compression, "zlib", counter)
    decode_batches(data)
    monkeypatch.undo()
    return counter.bytes_handled


@pytest.mark.parametrize("members", [500, 2000, 8000])
def test_gzip_members_cost_linear_work(monkeypatch, members):
    body = gzip.compress(encode_batch(RECORDS)[61:], mtime=0) + EMPTY_MEMBER * members
    data = _v2_with_body(1, body, len(RECORDS))
    # Each input byte goes through zlib a bounded number of times, however many members there are
    # (copying the rest of the input for each member handled members * input / 2 bytes).
    assert _count_gzip_work(monkeypatch, data) <= 8 * len(body)


def test_a_gzip_batch_of_one_member_is_inflated_in_one_call(monkeypatch):
    """A batch's records are nearly always one gzip member: it is handed to zlib whole (fed in
    doubling pieces from 32 bytes, a few hundred bytes took four calls)."""
    body = gzip.compress(encode_batch(RECORDS * 20)[61:], mtime=0)
    assert len(body) > 256
    counter = _CountingZlib()
    monkeypatch.setattr(compression, "zlib", counter)
    (batch,), _ = decode_batches(_v2_with_body(1, body, len(RECORDS) * 20))
    monkeypatch.undo()
    assert (counter.inflaters, counter.calls) == (1, 1)
    assert len(batch.records) == len(RECORDS) * 20


@pytest.mark.parametrize("members", [500, 4000])
def test_legacy_gzip_members_cost_linear_work(monkeypatch, members):
    inner = b"".join(_legacy_message(i, 1, 0, None, b"v%d" % i) for i in range(3))
    value = gzip.compress(inner, mtime=0) + EMPTY_MEMBER * members
    data = _legacy_message(2, 1, 1, None, value)
    assert _count_gzip_work(monkeypatch, data) <= 8 * len(value)
    (batch,), _ = decode_batches(data)
    assert [r.value for r in batch.records] == [b"v0", b"v1", b"v2"]


def test_records_split_over_many_gzip_members_decode():
    plain = encode_batch(RECORDS)
    records = plain[61:]
    pieces = [records[i : i + 7] for i in range(0, len(records), 7)]
    body = b"".join(gzip.compress(piece, mtime=0) for piece in pieces)
    body += EMPTY_MEMBER * 300 + b"trailing bytes that are not a gzip member are ignored"
    (batch,), tail = decode_batches(_v2_with_body(1, body, len(RECORDS), plain))
    (expected,), _ = decode_batches(plain)
    assert tail == b"" and batch.records == expected.records and len(pieces) > 100


def test_gzip_members_still_respect_the_decompression_limit():
    member = gzip.compress(bytes(100_000), mtime=0)
    data = _v2_with_body(1, member * 30, 1)
    with pytest.raises(DecodeError, match="decompression limit"):
        decode_batches(data, max_decompressed_bytes=2_000_000)
    truncated = _v2_with_body(1, member + member[:-3], 1)
    with pytest.raises(DecodeError, match="truncated gzip"):
        decode_batches(truncated)


# -- lz4 and zstd: buffers follow the data ----------------------------------------------------------


def _peak(function, *args, **kwargs) -> tuple[int, object]:
    tracemalloc.start()
    try:
        try:
            result = function(*args, **kwargs)
        except ProtocolError as exc:
            result = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, result


def _assert_within_bound(data: bytes, real: int = 0, **options) -> object:
    """Decode ``data``; the peak allocation beyond the decompressed bytes (``real``, held once as the
    buffer and once as the finished bytes) stays under 16x the input plus 1 MiB."""
    peak, result = _peak(decode_batches, data, **options)
    assert peak < 16 * len(data) + MIB + 2 * real, f"peak {peak} for {len(data)} input bytes"
    return result


def _lz4_frame(block_size_id: int, blocks: list[bytes]) -> bytes:
    """An LZ4 frame as Kafka writes it (independent blocks), with blocks of the given maximum size."""
    descriptor = bytes([0x60, block_size_id << 4])
    checksum = (frames.xxh32(descriptor) >> 8) & 0xFF
    header = b"\x04\x22\x4d\x18" + descriptor + bytes([checksum])
    return header + b"".join(struct.pack("<I", len(b)) + b for b in blocks) + bytes(4)


def test_lz4_77_byte_batch_does_not_reserve_a_mebibyte():
    data = _v2_with_body(3, _lz4_frame(6, [b"\x00"]), 0)  # one 1-byte block in a 1 MiB-block frame
    assert len(data) == 77
    batches, _ = _assert_within_bound(data)
    assert batches[0].records == []


def test_lz4_152_byte_batch_does_not_reserve_64_mebibytes():
    data = _v2_with_body(3, _lz4_frame(7, [b"\x00"] * 16), 0)  # 16 empty blocks of a 4 MiB frame
    assert len(data) == 152
    _assert_within_bound(data)


def test_lz4_highly_compressed_blocks_still_decode():
    cramjam = pytest.importorskip("cramjam")
    plain = bytes(64 * 1024)
    block = bytes(cramjam.lz4.compress_block(plain, store_size=False))
    records = encode_batch([(None, plain[:60_000], None, 0)])[61:]
    packed = bytes(cramjam.lz4.compress_block(records, store_size=False))
    for block_size_id in (4, 7):
        data = _v2_with_body(3, _lz4_frame(block_size_id, [packed]), 1)
        (batch,), _ = _assert_within_bound(data, real=len(records))
        assert batch.records[0].value == plain[:60_000]
    # 40 blocks of 64 KiB zeros, about 270 bytes each: 2.5 MiB out of 11 KB, under a 2 MiB limit too.
    frame = _lz4_frame(4, [block] * 40)
    with pytest.raises(DecodeError, match="decompression limit"):
        decode_batches(_v2_with_body(3, frame, 1), max_decompressed_bytes=2 * MIB)
    result = _assert_within_bound(_v2_with_body(3, frame, 1), real=40 * len(plain))
    assert isinstance(result, DecodeError) and "decompression limit" not in str(result)


def test_lz4_corrupt_block_is_a_decode_error_without_a_large_buffer():
    sequences = (
        b"\x1f" + b"a" + b"\x01\x00" + b"\xff" * 300 + b"\x10"
    )  # a match longer than 4 KiB...
    bad_offset = (
        b"\x1f" + b"a" + b"\x05\x00" + b"\xff" * 300 + b"\x10"
    )  # ...reaching before the block
    for block in (bad_offset, sequences[:-1], b"\xf0" + b"\xff" * 40):
        result = _assert_within_bound(_v2_with_body(3, _lz4_frame(7, [block]), 1))
        assert isinstance(result, DecodeError), result


def _zstd_frame_without_size(blocks: list[bytes]) -> bytes:
    """A zstd frame with no content size (descriptor 0, window 1 MiB) holding raw ``blocks``."""
    return struct.pack("<I", 0xFD2FB528) + bytes([0x00, 10 << 3]) + b"".join(blocks)


def _zstd_rle_block(size: int, last: bool) -> bytes:
    header = size << 3 | 1 << 1 | int(last)
    return header.to_bytes(3, "little") + b"z"


def test_zstd_227_byte_batch_claiming_more_than_the_block_maximum():
    # 40 RLE blocks that each claim 2 MiB, more than a zstd block may hold (128 KiB).
    blocks = [_zstd_rle_block((1 << 21) - 1, last=i == 39) for i in range(40)]
    data = _v2_with_body(4, _zstd_frame_without_size(blocks), 1)
    assert len(data) == 227
    result = _assert_within_bound(data)
    assert isinstance(result, DecodeError) and "block" in str(result)


def test_zstd_without_content_size_grows_its_buffer_as_data_arrives():
    zstandard = pytest.importorskip("zstandard")
    records = encode_batch([(None, b"%06d" % i * 50, None, 0) for i in range(200)])[61:]
    compressor = zstandard.ZstdCompressor(write_content_size=False)
    chunks = compressor.compressobj()
    body = b""
    for start in range(0, len(records), 300):
        body += chunks.compress(records[start : start + 300])
        body += chunks.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)  # many small compressed blocks
    body += chunks.flush()
    data = _v2_with_body(4, body, 200)
    # The block headers only promise 128 KiB per block, well above the limit given here.
    limit = 8 * MIB
    assert len(records) < limit < (len(records) // 300) * 128 * 1024
    (batch,), _ = _assert_within_bound(data, real=len(records), max_decompressed_bytes=limit)
    assert len(batch.records) == 200 and batch.records[-1].value == b"000199" * 50
    # More data than the limit allows is still refused, with the buffer at most the limit.
    with pytest.raises(DecodeError, match="decompression limit"):
        decode_batches(data, max_decompressed_bytes=len(records) - 1)


# -- JSON values that cannot be written -------------------------------------------------------------


def _batch_json() -> dict:
    (batch,), _ = decode_batches(encode_batch(RECORDS[:3], compression="none"))
    return batch_to_json(batch)


@pytest.mark.parametrize(
    "path, value, field",
    [
        (("batchLength",), 1e400, "batchLength"),
        (("baseOffset",), float("nan"), "baseOffset"),
        (("baseOffset",), float("-inf"), "baseOffset"),
        (("producerEpoch",), 1.5, "producerEpoch"),
        (("producerEpoch",), 1 << 15, "producerEpoch"),
        (("magic",), True, "magic"),
        (("crc",), -1, "crc"),
        (("records", 1, "offset"), 1e400, "records[1].offset"),
        (("records", 2, "timestamp"), float("nan"), "records[2].timestamp"),
        (("records", 0, "attributes"), float("inf"), "records[0].attributes"),
        (("records", 0, "attributes"), 256, "records[0].attributes"),
        (("records", 0, "key"), 12, "records[0].key"),
        (("records", 0, "headers", 0, "key"), "\ud800", "records[0].headers[0].key"),
        (("records", 0, "headers", 0, "key"), 5, "records[0].headers[0].key"),
        (("records", 0, "headers", 0, "value"), "%%", "records[0].headers[0].value"),
        (("records", 0, "headers"), {"key": "h"}, "records[0].headers"),
        (("records",), None, "records"),
    ],
)
def test_batch_json_bad_values_name_the_field(path, value, field):
    view = json.loads(json.dumps(_batch_json()))
    target = view
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(DecodeError, match=re.escape(f"invalid record batch JSON: {field}: ")):
        batch_from_json(view)


@pytest.mark.parametrize("field", ["baseOffset", "crc"])
def test_batch_json_deeply_nested_value_is_a_bounded_decode_error(field):
    """Issue 26: the error message used to format the whole value's repr before cutting it, so a
    deeply nested value raised RecursionError (and a huge one was formatted in full)."""
    nested: list = []
    for _ in range(100_000):
        nested = [nested]
    view = json.loads(json.dumps(_batch_json()))
    view[field] = nested
    with pytest.raises(DecodeError) as failure:
        batch_from_json(view)
    assert str(failure.value) == (
        f"invalid record batch JSON: {field}: expected an integer, got array (list of 1)"
    )
    view[field] = "x" * 10_000_000
    with pytest.raises(DecodeError) as failure:
        batch_from_json(view)
    assert len(str(failure.value)) < 120


def test_batch_json_issue_reproducer():
    with pytest.raises(DecodeError, match="batchLength"):
        batch_from_json(json.loads('{"baseOffset": 0, "batchLength": 1e400}'))


def test_batch_json_accepts_surrogate_escaped_header_keys():
    # Header keys that are not UTF-8 decode with surrogateescape and must round-trip.
    raw = encode_batch([(b"k", b"v", [(b"\xff\xfe".decode("utf-8", "surrogateescape"), b"x")], 5)])
    (batch,), _ = decode_batches(raw)
    assert batch_from_json(json.loads(json.dumps(batch_to_json(batch)))).encode() == raw


def test_message_from_json_rejects_lone_surrogates_naming_the_field():
    vote = lookup("VoteRequest")
    good = vote(cluster_id="c", voter_id=1).to_json(2)
    bad = dict(good, clusterId="ab\ud800")
    with pytest.raises(EncodeError, match=r"VoteRequest v2: clusterId: .*surrogate"):
        vote.from_json(bad, 2)
    topic = {"topicName": "t\udfff", "partitions": []}
    with pytest.raises(EncodeError, match=r"topics\[\]\.topicName: .*surrogate"):
        vote.from_json(dict(good, topics=[topic]), 2)


def test_find_coordinator_surrogate_reproducer(upstream):
    request = upstream.lookup("FindCoordinatorRequest")
    with pytest.raises(upstream.EncodeError, match="FindCoordinatorRequest v0: key: .*surrogate"):
        request.from_json({"key": "\ud800"}, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.binary(min_size=1, max_size=40), st.integers(1, 2000)), max_size=12))
def test_lz4_block_size_reads_the_expanded_size_from_the_sequences(runs):
    cramjam = pytest.importorskip("cramjam")
    plain = b"".join(piece * repeat for piece, repeat in runs)
    block = bytes(cramjam.lz4.compress_block(plain, store_size=False))
    assert frames.lz4_block_size(block, 0, len(block)) == len(plain)
    padded = b"xy" + block + b"z"
    assert frames.lz4_block_size(padded, 2, len(padded) - 1) == len(plain)
