"""Control batches: encode ControlRecords (:mod:`._control_record`) as a control batch, as Kafka's
``MemoryRecords.withLeaderChangeMessage`` and ``withEndTransactionMarker`` do."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from ._base import Message
from ._buffer import RecordInput, encode_batch
from ._control_record import (
    ABORT,
    COMMIT,
    CONTROL_TYPE_NAMES,
    ControlRecord,
    control_record,
    decode_control_record,
)
from ._runtime import EncodeError

__all__ = [
    "CONTROL_TYPE_NAMES",
    "ControlRecord",
    "control_record",
    "decode_control_record",
    "encode_control_batch",
    "end_txn_marker_batch",
]


# A control record as encode_control_batch takes it: a ControlRecord or a (type, value) pair.
ControlInput = ControlRecord | tuple[int, Message | bytes | int | None]


def _as_control(item: ControlInput, package: ModuleType | None) -> ControlRecord:
    if isinstance(item, ControlRecord):
        return item
    try:
        type_, value = item
    except (TypeError, ValueError):
        raise EncodeError(f"expected a ControlRecord or (type, value), got {item!r:.80}") from None
    return control_record(type_, value, package=package)


def encode_control_batch(
    controls: Iterable[ControlInput],
    *,
    base_offset: int = 0,
    leader_epoch: int = 0,
    timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    transactional: bool = False,
    compression: int | str = "none",
    package: ModuleType | None = None,
) -> bytes:
    """A control batch holding ``controls`` (ControlRecords or ``(type, value)`` pairs), as
    ``MemoryRecords.withLeaderChangeMessage`` and friends write it: all records share ``timestamp``.
    """
    records: list[RecordInput] = []
    for item in controls:
        control = _as_control(item, package)
        records.append((control.key_bytes(), control.value_bytes(), None, timestamp))
    return encode_batch(
        records,
        base_offset=base_offset,
        leader_epoch=leader_epoch,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=transactional,
        control=True,
    )


def end_txn_marker_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    leader_epoch: int = 0,
    timestamp: int | None = None,
    package: ModuleType | None = None,
) -> bytes:
    """A transactional control batch with one COMMIT or ABORT marker (``withEndTransactionMarker``)."""
    marker = control_record(COMMIT if commit else ABORT, coordinator_epoch, package=package)
    return encode_control_batch(
        [marker],
        base_offset=base_offset,
        leader_epoch=leader_epoch,
        timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        package=package,
    )
