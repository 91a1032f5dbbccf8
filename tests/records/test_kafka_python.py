"""Cross-implementation tests against kafka-python's record code (``kafka.record``).

v2 batches go both ways for every codec; legacy magic 0/1 message sets (read-only here) are written
by kafka-python and read by us.
"""

from __future__ import annotations

import struct

import pytest

from kraftwire.records import CODEC_NAMES, decode_batches, encode_batch

kafka_record = pytest.importorskip("kafka.record")
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatchBuilder  # noqa: E402
from kafka.record.memory_records import MemoryRecords  # noqa: E402

# kafka-python loads its protocol schemas with deprecated importlib.resources calls.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BASE_TS = 1_700_000_000_000


def _sample(n: int = 40):
    """Compressible records with null/empty keys and values, duplicate and null-valued headers."""
    records = []
    for i in range(n):
        key = None if i % 7 == 0 else (b"" if i % 11 == 0 else b"key-%d" % i)
        value = None if i % 13 == 5 else b"value %d " % i * (i % 5 + 1)
        headers = [] if i % 3 else [("trace", b"t%d" % i), ("trace", None), ("é", b"")]
        records.append((key, value, headers, BASE_TS + (i * 37) % 500))
    return records


def _kafka_python_read(data: bytes) -> list:
    out = []
    memory = MemoryRecords(bytes(data))
    while True:
        batch = memory.next_batch()
        if batch is None:
            return out
        assert batch.validate_crc()
        out.append((batch, list(batch)))


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_kafka_python_reads_our_batches(codec):
    records = _sample()
    data = encode_batch(
        records,
        base_offset=1000,
        leader_epoch=4,
        compression=codec,
        producer_id=42,
        producer_epoch=3,
        base_sequence=17,
        transactional=True,
    )
    ((batch, decoded),) = _kafka_python_read(data)
    assert batch.compression_type == CODEC_NAMES.index(codec)
    assert (batch.base_offset, batch.leader_epoch, batch.producer_id) == (1000, 4, 42)
    assert (batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (3, 17, True)
    assert batch.last_offset_delta == len(records) - 1
    assert batch.max_timestamp == max(r[3] for r in records)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (1000 + i, ts, key, value, headers) for i, (key, value, headers, ts) in enumerate(records)
    ]


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_we_read_kafka_python_batches(codec):
    records = _sample()
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODEC_NAMES.index(codec),
        is_transactional=False,
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
        batch_size=1 << 20,
    )
    for i, (key, value, headers, ts) in enumerate(records):
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    data = bytes(builder.build())
    (batch,), tail = decode_batches(data + data[:20])
    assert tail == data[:20]
    assert batch.compression == codec
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 1, 0)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records] == [
        (i, ts, key, value, headers) for i, (key, value, headers, ts) in enumerate(records)
    ]
    if codec == "none":
        assert batch.encode() == data  # same bytes as kafka-python's builder


def _legacy_set(magic: int, codec: int, records) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i, (key, value, _, ts) in enumerate(records):
        assert builder.append(i, timestamp=ts, key=key, value=value) is not None
    return bytes(builder.build())


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODEC_NAMES[:4])  # zstd needs magic 2
def test_we_read_kafka_python_legacy_message_sets(magic, codec):
    records = _sample(25)
    data = _legacy_set(magic, CODEC_NAMES.index(codec), records)
    batches, tail = decode_batches(data)
    assert tail == b""
    got = [record for batch in batches for record in batch.records]
    assert all(batch.magic == magic and batch.compression == codec for batch in batches)
    assert len(batches) == (len(records) if codec == "none" else 1)
    expected_ts = [ts if magic == 1 else -1 for *_, ts in records]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (i, ts, key, value, [])
        for i, ((key, value, _, _), ts) in enumerate(zip(records, expected_ts))
    ]
    # kafka-python reads the same set the same way
    theirs = [r for _, decoded in _kafka_python_read(data) for r in decoded]
    assert [(r.offset, r.key, r.value) for r in theirs] == [(r.offset, r.key, r.value) for r in got]


@pytest.mark.parametrize("codec", CODEC_NAMES[1:4])
def test_legacy_magic1_wrapper_offsets_are_relative(codec):
    """A broker stores the absolute offset of the last inner message in a magic-1 wrapper."""
    records = _sample(5)
    data = bytearray(_legacy_set(1, CODEC_NAMES.index(codec), records))
    struct.pack_into(">q", data, 0, 104)  # the offset field is outside the message CRC
    (batch,), _ = decode_batches(bytes(data))
    assert [r.offset for r in batch.records] == [100, 101, 102, 103, 104]
    assert (batch.base_offset, batch.last_offset) == (100, 104)
