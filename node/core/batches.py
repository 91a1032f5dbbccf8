"""The one adapter between the core's :class:`~kraftwire.node.core.values.LogBatch` values and record-batch
bytes (Fetch ``Records``, FetchSnapshot ``UnalignedRecords``, snapshot files).

The core keeps its log as batches of Python values (data payloads, or generated control-record
objects); bytes are produced only at the wire/snapshot boundary, through :func:`encode_batches` and
:func:`decode_batches`, as real record-batch v2 bytes (control batches for control records). Encoded
bytes are cached on the batch (``LogBatch.raw``) so a batch is encoded once however often it is served.
"""

from __future__ import annotations

from typing import Sequence

from kraftwire.generated import records as _records

from .values import LogBatch

_CONTROL_TYPES = {
    "LeaderChangeMessage": 2,
    "SnapshotHeaderRecord": 3,
    "SnapshotFooterRecord": 4,
    "KRaftVersionRecord": 5,
    "VotersRecord": 6,
}


def _encode(batch: LogBatch) -> bytes:
    ts = batch.append_time_ms
    if batch.is_control:
        controls = [(_CONTROL_TYPES[type(r).__name__], r) for r in batch.records]
        data: bytes = _records.encode_control_batch(
            controls, base_offset=batch.base_offset, leader_epoch=batch.epoch, timestamp=ts
        )
        return data
    data = _records.encode_value_batch(
        batch.records, timestamp=ts, base_offset=batch.base_offset, leader_epoch=batch.epoch
    )
    return data


def _encode_one(batch: LogBatch) -> bytes:
    if batch.raw is not None:
        return batch.raw
    raw = _encode(batch)
    object.__setattr__(batch, "raw", raw)
    return raw


def encode_batches(batches: Sequence[LogBatch]) -> bytes:
    """Concatenated record-batch bytes for ``batches``."""
    if len(batches) == 1:
        return _encode_one(batches[0])
    return b"".join(_encode_one(b) for b in batches)


def decode_batches(data: bytes) -> list[LogBatch]:
    """Whole batches in ``data`` (a partial trailing batch is ignored, as Kafka does).

    Raises on corrupt input (bad CRC, truncated records); the caller abandons the append. A batch
    that is byte for byte what a leader writes for values of one length (``read_value_batch``: CRC
    checked, records rebuilt and compared) is sliced into its values; any other is decoded record
    by record.
    """
    if not data:
        return []
    out: list[LogBatch] = []
    spans, _tail = _records.batch_spans(data)
    for start, end, magic in spans:
        raw = data[start:end]
        plain = _records.read_value_batch(raw) if magic == 2 else None
        if plain is not None:
            base_offset, epoch, timestamp, values = plain
            out.append(LogBatch(base_offset, epoch, tuple(values), False, timestamp, raw))
            continue
        (rb,), _ = _records.decode_batches(raw)
        if rb.is_control:
            recs = tuple(_records.decode_control_record(r.key, r.value).value for r in rb.records)
        else:
            recs = tuple(r.value if r.value is not None else b"" for r in rb.records)
        out.append(
            LogBatch(
                rb.base_offset,
                rb.partition_leader_epoch,
                recs,
                rb.is_control,
                rb.base_timestamp,
                raw,
            )
        )
    return out
