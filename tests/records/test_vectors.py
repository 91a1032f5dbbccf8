"""The record batches in ../shared/kafka-vectors (written by Kafka's own MemoryRecords builder)."""

from __future__ import annotations

from kraftwire.records import (
    CODEC_NAMES,
    Record,
    RecordBatch,
    batch_spans,
    decode_batches,
    encode_batch,
)


def _batches_with_bytes(blob: bytes):
    batches, tail = decode_batches(blob)
    assert tail == b""
    spans, end = batch_spans(blob)
    assert end == len(blob)
    assert len(spans) == len(batches)
    return [(batch, blob[start:stop]) for batch, (start, stop, _) in zip(batches, spans)]


def test_every_records_value_decodes(vector_blobs):
    total = 0
    for blob in vector_blobs:
        for batch, raw in _batches_with_bytes(blob):
            total += 1
            assert batch.magic == 2
            assert batch.size_in_bytes == len(raw)
            assert batch.record_count == len(batch.records)
            assert [r.offset for r in batch.records] == list(
                range(batch.base_offset, batch.last_offset + 1)
            )
            assert batch.max_timestamp == max(r.timestamp for r in batch.records)
    # single, with headers, idempotent, transactional + COMMIT marker, gzip, ABORT marker, two batches
    assert len(vector_blobs) == 7
    assert total == 9


def test_uncompressed_batches_reencode_byte_for_byte(vector_blobs):
    checked = 0
    for blob in vector_blobs:
        for batch, raw in _batches_with_bytes(blob):
            if batch.compression == "none":
                assert batch.encode() == raw
                checked += 1
    assert checked == 8


def _with_codec(batch: RecordBatch, codec: str) -> RecordBatch:
    fields = {name: getattr(batch, name) for name in RecordBatch.__slots__}
    fields["attributes"] = (batch.attributes & ~7) | CODEC_NAMES.index(codec)
    return RecordBatch(**fields)


def test_compressed_batch_decodes_to_the_same_records(vector_blobs):
    compressed = [
        (batch, raw)
        for blob in vector_blobs
        for batch, raw in _batches_with_bytes(blob)
        if batch.compression != "none"
    ]
    assert [batch.compression for batch, _ in compressed] == ["gzip"]
    batch, raw = compressed[0]
    assert batch.records == [Record(100, 1700000000000, b"gz", b"zip" * 20, [], 0)]
    for codec in CODEC_NAMES:
        (decoded,), _ = decode_batches(_with_codec(batch, codec).encode())
        assert decoded.compression == codec
        assert decoded.records == batch.records
    # Our gzip writer (GZIPOutputStream's header, deflate level 6) even reproduces Kafka's bytes.
    assert batch.encode() == raw


def _find(vector_blobs, **fields) -> list[RecordBatch]:
    for blob in vector_blobs:
        batches, _ = decode_batches(blob)
        if all(getattr(batches[0], name) == value for name, value in fields.items()):
            return batches
    raise AssertionError(f"no vector batch with {fields}")


def test_vector_contents(vector_blobs):
    (with_headers,) = _find(vector_blobs, base_offset=42)
    assert with_headers.partition_leader_epoch == 5
    assert [(r.key, r.value, r.headers) for r in with_headers.records] == [
        (b"k%d" % i, b"value-%d" % i, [("h%d" % i, b"\x00\x01")]) for i in range(3)
    ]
    (idempotent,) = _find(vector_blobs, producer_id=1000)
    assert not idempotent.is_transactional
    assert [(r.key, r.value) for r in idempotent.records] == [(None, None), (b"", b"")]
    data, marker = _find(vector_blobs, base_offset=10)
    assert data.is_transactional and not data.is_control and data.producer_id == 77
    assert data.records[0].value == "tx é".encode()
    assert marker.is_transactional and marker.is_control and marker.base_offset == 11
    assert marker.records[0].key == b"\x00\x00\x00\x01"  # COMMIT
    (abort,) = _find(vector_blobs, base_offset=3)
    assert abort.is_control and abort.records[0].key == b"\x00\x00\x00\x00"  # ABORT
    first, second = _find(vector_blobs, base_offset=0, partition_leader_epoch=1)
    assert (first.records[0].value, second.records[0].value) == (b"a", b"b")
    (single,) = _find(vector_blobs, partition_leader_epoch=-1)
    assert single.records[0].value == b"hello"


def test_encode_batch_reproduces_a_kafka_batch(vector_blobs):
    """encode_batch with the same inputs as Kafka's builder gives the same bytes."""
    blob = next(b for b in vector_blobs if decode_batches(b)[0][0].base_offset == 42)
    (batch,), _ = decode_batches(blob)
    rebuilt = encode_batch(
        [(r.key, r.value, r.headers, r.timestamp) for r in batch.records],
        base_offset=42,
        leader_epoch=5,
    )
    assert rebuilt == blob
