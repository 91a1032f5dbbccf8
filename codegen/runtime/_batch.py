"""Record batches and records: the classes every reader and writer of the records layer shares.

A :class:`RecordBatch` carries every header field of a v2 batch (legacy magic 0/1 message sets map
onto the same class) and its decoded :class:`Record` list. The v2 wire format lives in ``_v2_read.py``
and ``_v2_write.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import NamedTuple

from ._compression import ATTR_CODEC_MASK, CODEC_NAMES
from ._control_record import ControlRecord, decode_control_record
from ._runtime import EncodeError
from ._v2_write import write_v2_batch

__all__ = ["Record", "RecordBatch"]

ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40


# A record header: its key (text; a key that is not UTF-8 survives via surrogateescape) and value.
Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One record: absolute ``offset`` and ``timestamp`` (base + the record's deltas, as written).

    ``headers`` is a list of ``(key: str, value: bytes | None)`` in wire order (duplicates kept); a
    key that is not valid UTF-8 survives via ``surrogateescape``. In a LogAppendTime batch Kafka's
    consumers report the batch's ``max_timestamp`` for every record; ``timestamp`` keeps the written
    value so that the batch re-encodes exactly.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()
    attributes: int = 0


class RecordBatch:
    """A record batch: every header field plus ``records``.

    Magic 0/1 message sets read by the legacy reader use the same class: their ``attributes`` are the
    wrapper message's, the v2-only fields hold their "none" values, and ``crc`` is the CRC-32 of the
    (wrapper) message.
    """

    __slots__ = (
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
        "records",
    )

    def __init__(
        self,
        *,
        base_offset: int = 0,
        batch_length: int = 0,
        partition_leader_epoch: int = -1,
        magic: int = 2,
        crc: int = 0,
        attributes: int = 0,
        last_offset_delta: int = 0,
        base_timestamp: int = -1,
        max_timestamp: int = -1,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        record_count: int = 0,
        records: list[Record] | None = None,
    ) -> None:
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.record_count = record_count
        self.records = [] if records is None else records

    # -- attributes ----------------------------------------------------------------------------------

    @property
    def codec(self) -> int:
        return self.attributes & ATTR_CODEC_MASK

    @property
    def compression(self) -> str:
        codec = self.codec
        return CODEC_NAMES[codec] if codec < len(CODEC_NAMES) else f"unknown({codec})"

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return "NoTimestampType"
        return "LogAppendTime" if self.attributes & ATTR_LOG_APPEND_TIME else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self) -> int | None:
        """With the delete-horizon bit set, baseTimestamp holds the horizon (KIP-534)."""
        return self.base_timestamp if self.has_delete_horizon else None

    # -- offsets and sizes ---------------------------------------------------------------------------

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size_in_bytes(self) -> int:
        """Bytes the batch occupies in a records buffer (offset and length fields included)."""
        return 12 + self.batch_length

    def encode(self, *, compression_level: int | None = None) -> bytes:
        """Write this batch (v2 only) from its fields; batch length and CRC are recomputed."""
        if self.magic != 2:
            raise EncodeError(f"magic {self.magic} message sets are read-only")
        return write_v2_batch(
            self.records,
            base_offset=self.base_offset,
            partition_leader_epoch=self.partition_leader_epoch,
            attributes=self.attributes,
            last_offset_delta=self.last_offset_delta,
            base_timestamp=self.base_timestamp,
            max_timestamp=self.max_timestamp,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            compression_level=compression_level,
        )

    def control_records(self, *, package: ModuleType | None = None) -> list[ControlRecord]:
        """The decoded :class:`ControlRecord` of each record of a control batch (a DecodeError for one
        that does not decode, a ValueError for a batch that is not a control batch)."""
        if not self.is_control:
            raise ValueError("not a control batch")
        return [decode_control_record(r.key, r.value, package=package) for r in self.records]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordBatch):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, magic={self.magic}, "
            f"partition_leader_epoch={self.partition_leader_epoch}, compression={self.compression!r}, "
            f"control={self.is_control}, transactional={self.is_transactional}, "
            f"producer_id={self.producer_id}, records={len(self.records)})"
        )
