"""encode_value_batch: the batch a Raft leader appends, written from cached varints, byte for byte what
encode_batch writes for the same value-only records."""

from __future__ import annotations

import pytest

from kraftwire.generated.records import (
    EncodeError,
    crc32c,
    decode_batches,
    encode_batch,
    encode_value_batch,
    read_value_batch,
)


def general(values, base_offset, epoch, timestamp):
    records = [(None, value, None, timestamp) for value in values]
    return encode_batch(records, base_offset=base_offset, leader_epoch=epoch)


@pytest.mark.parametrize(
    "values",
    [
        [b""],
        [b"x" * 256] * 3,
        [b"a", b"", b"bc" * 70, bytearray(b"\xff" * 9000)],  # one- to three-byte varint lengths
        [memoryview(b"xyz"), b"abc", memoryview(bytearray(b"q" * 200))[10:13]],
        [bytes([n % 251]) * (n % 300) for n in range(9000)],  # offset deltas past 8,191
    ],
    ids=["empty value", "same size", "varint lengths", "memoryviews", "9000 records"],
)
def test_same_bytes_as_the_general_writer(values):
    for base_offset, epoch, timestamp in ((0, 0, 0), (123_456_789_012, 7, 1_700_000_000_123)):
        fast = encode_value_batch(
            values, base_offset=base_offset, leader_epoch=epoch, timestamp=timestamp
        )
        assert fast == general(values, base_offset, epoch, timestamp)
    (batch,), tail = decode_batches(fast)
    assert tail == b"" and [r.value for r in batch.records] == [bytes(v) for v in values]


@pytest.mark.parametrize(
    "values, message",
    [
        ([], "a record batch needs at least one record"),
        ([b"ok", "text"], "record 1: value must be bytes, bytearray or a memoryview of bytes"),
        ([None], "record 0: value must be bytes, .* got NoneType"),
        ([memoryview(b"ab").cast("H")], "record 0: value must be bytes, .* got memoryview"),
    ],
)
def test_bad_values_are_an_encode_error(values, message):
    with pytest.raises(EncodeError, match=message):
        encode_value_batch(values, timestamp=0)


def test_an_offset_out_of_range_is_an_encode_error():
    with pytest.raises(EncodeError, match="header field out of range"):
        encode_value_batch([b"x"], base_offset=1 << 63, timestamp=0)


def test_batches_one_after_another_of_many_lengths_and_counts():
    """Values of one length take the cached record heads (grown with the count, a few lengths kept):
    every batch is still the general writer's, whatever came before it."""
    for length, count in [
        (5, 3),
        (5, 100),
        (5, 40),
        (300, 8200),
        (4, 32768),
        *[(n, 20) for n in range(9)],
        (5, 2),
    ]:
        values = [bytes([length % 256]) * length] * count
        fast = encode_value_batch(values, base_offset=length, leader_epoch=2, timestamp=9)
        assert fast == general(values, length, 2, 9), (length, count)


@pytest.mark.parametrize(
    "length, count", [(0, 1), (1, 70), (256, 500), (200, 8192), (256, 20000), (3, 32768)]
)
def test_read_value_batch_gives_back_what_was_written(length, count):
    values = [bytes([n % 256]) * length for n in range(count)]
    batch = encode_value_batch(values, base_offset=77, leader_epoch=4, timestamp=1_700_000_000_000)
    assert read_value_batch(batch) == (77, 4, 1_700_000_000_000, values)
    (general_batch,), _ = decode_batches(batch)
    assert [r.value for r in general_batch.records] == values


def _rewritten_crc(batch: bytes) -> bytes:
    out = bytearray(batch)
    out[17:21] = crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def _other_batches():
    same = [(None, b"v" * 9, None, 5)] * 3
    yield "mixed lengths", encode_batch([(None, b"a", None, 5), (None, b"bb", None, 5)])
    yield "a key", encode_batch([(b"k", b"v" * 9, None, 5)] * 3)
    yield "headers", encode_batch([(None, b"v" * 9, [("h", b"1")], 5)] * 3)
    yield "null values", encode_batch([(None, None, None, 5)] * 3)
    yield "two timestamps", encode_batch([(None, b"v" * 9, None, 5), (None, b"v" * 9, None, 6)])
    yield "compressed", encode_batch(same, compression="gzip")
    yield "transactional", encode_batch(same, transactional=True, producer_id=1, producer_epoch=0)
    yield "control", encode_batch(same, control=True)
    yield "over the cached heads", encode_value_batch([b"x"] * 32769, timestamp=5)
    flipped = bytearray(encode_value_batch([b"v" * 9] * 3, timestamp=5))
    flipped[-3] ^= 1
    yield "a bad CRC", bytes(flipped)
    header_count = bytearray(encode_value_batch([b"v" * 9] * 3, timestamp=5))
    header_count[-1] = 2  # the last record claims a header: CRC right, records not a value batch's
    yield "a record's tail changed", _rewritten_crc(bytes(header_count))
    yield "cut short", encode_value_batch([b"v" * 9] * 3, timestamp=5)[:-4]


@pytest.mark.parametrize(
    "name, batch", list(_other_batches()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_read_value_batch_leaves_every_other_batch_to_the_general_reader(name, batch):
    assert read_value_batch(batch) is None


def test_read_value_batch_of_many_lengths_and_counts_one_after_another():
    """The reader's cached value places grow with the count and are dropped with the heads when
    more lengths come than are kept: every batch still reads back as written."""
    for length, count in [(5, 3), (5, 100), (5, 40), (300, 8200), *[(n, 20) for n in range(9)],
                          (5, 2), (5, 70), (300, 9000)]:  # fmt: skip
        values = [bytes([n % 256]) * length for n in range(count)]
        batch = encode_value_batch(values, base_offset=length, leader_epoch=2, timestamp=9)
        assert read_value_batch(batch) == (length, 2, 9, values), (length, count)
