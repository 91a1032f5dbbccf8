"""The one adapter between the core's :class:`~kraftwire.node.core.api.LogBatch` values and record-batch
bytes (Fetch ``Records``, FetchSnapshot ``UnalignedRecords``, snapshot files).

The core keeps its log as batches of Python values (data payloads, or generated control-record
objects); bytes are produced only at the wire/snapshot boundary, through :func:`encode_batches` and
:func:`decode_batches`. Encoded bytes are cached on the batch (``LogBatch.raw``) so a batch is
encoded once however often it is served.

With ``kraftwire.records`` available this writes real record-batch v2 bytes (control batches for
control records). Until then it falls back to a private framing that only kraftwire nodes understand
(``_FALLBACK_MAGIC``), which is enough for the simulator and the transcript tests.
"""

from __future__ import annotations

import pickle
from typing import Sequence

from kraftwire.node.core.api import LogBatch

try:  # pragma: no cover - depends on the records module being present
    from kraftwire import records as _records  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    _records = None

_FALLBACK_MAGIC = b"KWB0"


_CONTROL_TYPES = {
    "LeaderChangeMessage": 2,
    "SnapshotHeaderRecord": 3,
    "SnapshotFooterRecord": 4,
    "KRaftVersionRecord": 5,
    "VotersRecord": 6,
}
_ATTR_CONTROL = 0x20


def _encode_wire(batch: LogBatch) -> bytes:
    ts = batch.append_time_ms
    if batch.is_control:
        controls = [(_CONTROL_TYPES[type(r).__name__], r) for r in batch.records]
        return _records.encode_control_batch(
            controls, base_offset=batch.base_offset, leader_epoch=batch.epoch, timestamp=ts
        )
    return _records.encode_batch(
        [(None, r, None, ts) for r in batch.records], base_offset=batch.base_offset, leader_epoch=batch.epoch
    )


def _encode_fallback(batch: LogBatch) -> bytes:
    body = pickle.dumps(
        (batch.base_offset, batch.epoch, batch.is_control, batch.append_time_ms, batch.records),
        protocol=pickle.HIGHEST_PROTOCOL,
    )
    return _FALLBACK_MAGIC + len(body).to_bytes(4, "big") + body


def _encode_one(batch: LogBatch) -> bytes:
    if batch.raw is not None:
        return batch.raw
    raw = _encode_wire(batch) if _records is not None else _encode_fallback(batch)
    object.__setattr__(batch, "raw", raw)
    return raw


def encode_batches(batches: Sequence[LogBatch]) -> bytes:
    """Concatenated record-batch bytes for ``batches``."""
    if len(batches) == 1:
        return _encode_one(batches[0])
    return b"".join(_encode_one(b) for b in batches)


def decode_batches(data: bytes) -> list[LogBatch]:
    """Whole batches in ``data`` (a partial trailing batch is ignored, as Kafka does).

    Raises on corrupt input (bad CRC, truncated records); the caller abandons the append.
    """
    if not data:
        return []
    if _records is None or data[:4] == _FALLBACK_MAGIC:
        return _decode_fallback(data)
    out: list[LogBatch] = []
    batches, _tail = _records.decode_batches(data)
    pos = 0
    for rb in batches:
        size = rb.batch_length + 12
        raw = data[pos : pos + size]
        pos += size
        is_control = bool(rb.attributes & _ATTR_CONTROL)
        if is_control:
            recs = tuple(
                _records.decode_control_record(r.key, r.value).value for r in rb.records
            )
        else:
            recs = tuple(r.value if r.value is not None else b"" for r in rb.records)
        out.append(
            LogBatch(rb.base_offset, rb.partition_leader_epoch, recs, is_control, rb.base_timestamp, raw)
        )
    return out


def _decode_fallback(data: bytes) -> list[LogBatch]:
    out: list[LogBatch] = []
    pos = 0
    n = len(data)
    while pos + 8 <= n:
        if data[pos : pos + 4] != _FALLBACK_MAGIC:
            raise ValueError(f"not a kraftwire batch at byte {pos}")
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        end = pos + 8 + size
        if end > n:
            break
        base, epoch, is_control, ts, records = pickle.loads(data[pos + 8 : end])
        out.append(LogBatch(base, epoch, records, is_control, ts, data[pos:end]))
        pos = end
    return out
