"""The one adapter between the core's :class:`~kraftwire.node.core.values.LogBatch` values and record-batch
bytes (Fetch ``Records``, FetchSnapshot ``UnalignedRecords``, snapshot files).

The core keeps its log as batches of Python values (data payloads, or generated control-record
objects); bytes are produced only at the wire/snapshot boundary, through :func:`encode_batches` and
:func:`decode_batches`, as real record-batch v2 bytes (control batches for control records). Encoded
bytes are cached on the batch (``LogBatch.raw``) so a batch is encoded once however often it is served.

A log holds each batch once: once its records have been handed to the application (or when a batch is
read back from disk), :func:`keep_encoded` replaces its decoded records with :class:`EncodedRecords`,
which decodes ``raw`` again if anything reads them (a snapshot built from the log, a tool); serving a
Fetch needs only ``raw``. Holding both would double a log's memory (a follower's records are decoded
from the Fetch it received: every one a bytes object of its own).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence, overload

# The batch codec from where it lives, not through ``kraftwire.generated.records``, whose JSON and
# text views of batches (six modules, for the decoders and dump-log) a node never uses.
from kraftwire.generated import _buffer, _control
from kraftwire.generated._control_record import (
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
)

from .values import LogBatch

_CONTROL_TYPES = {
    "LeaderChangeMessage": LEADER_CHANGE,
    "SnapshotHeaderRecord": SNAPSHOT_HEADER,
    "SnapshotFooterRecord": SNAPSHOT_FOOTER,
    "KRaftVersionRecord": KRAFT_VERSION,
    "VotersRecord": KRAFT_VOTERS,
}


def _encode(batch: LogBatch) -> bytes:
    ts = batch.append_time_ms
    if batch.is_control:
        controls = [(_CONTROL_TYPES[type(r).__name__], r) for r in batch.records]
        data: bytes = _control.encode_control_batch(
            controls, base_offset=batch.base_offset, leader_epoch=batch.epoch, timestamp=ts
        )
        return data
    data = _buffer.encode_value_batch(
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

    Raises on corrupt input (bad CRC, truncated records); the caller abandons the append.
    """
    if not data:
        return []
    spans, _tail = _buffer.batch_spans(data)
    return [_decode_one(data[start:end]) for start, end, _magic in spans]


def _decode_one(raw: bytes) -> LogBatch:
    """One whole batch. One that is byte for byte what a leader writes for values of one length
    (``read_value_batch``: CRC checked, records rebuilt and compared; None for any other, an older
    magic included) is sliced into its values; any other is decoded record by record."""
    plain = _buffer.read_value_batch(raw)
    if plain is not None:
        base_offset, epoch, timestamp, values = plain
        return LogBatch(base_offset, epoch, tuple(values), False, timestamp, raw)
    (rb,), _ = _buffer.decode_batches(raw)
    return LogBatch(
        rb.base_offset,
        rb.partition_leader_epoch,
        _values_of(rb),
        rb.is_control,
        rb.base_timestamp,
        raw,
    )


def _values_of(rb: Any) -> tuple[Any, ...]:
    """A decoded record batch's values as the core holds them (payloads, or control records)."""
    if rb.is_control:
        return tuple(_control.decode_control_record(r.key, r.value).value for r in rb.records)
    return tuple(r.value if r.value is not None else b"" for r in rb.records)


class EncodedRecords(Sequence[Any]):
    """A batch's records left in its encoded bytes: the length is known, the values are decoded from
    ``raw`` each time they are read (and not kept). Equal to the tuple of the same values."""

    __slots__ = ("raw", "length")

    def __init__(self, raw: bytes, length: int) -> None:
        self.raw = raw
        self.length = length

    def decoded(self) -> tuple[Any, ...]:
        return tuple(_decode_one(self.raw).records)

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return self.decoded()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.decoded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, EncodedRecords)):
            return self.decoded() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.decoded())

    def __repr__(self) -> str:
        return repr(self.decoded())


def keep_encoded(batch: LogBatch) -> None:
    """Drop ``batch``'s decoded records when its encoded bytes are known: from now on its records
    are read from ``raw`` (see the module's docstring)."""
    raw = batch.raw
    if raw is not None and type(batch.records) is tuple:
        object.__setattr__(batch, "records", EncodedRecords(raw, len(batch.records)))
