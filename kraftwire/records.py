"""Kafka record batches: the public records API of kraftwire.

The implementation is the records layer bundled into the generated package
(``kraftwire.generated.records``); this module re-exports it so users have one stable import::

    from kraftwire.records import decode_batches, encode_batch, DecodeError

    batches, partial_tail = decode_batches(fetch_partition.records)
    data = encode_batch([(b"key", b"value", [("h", b"1")], 1700000000000)], compression="zstd")
"""

from kraftwire.generated.records import (
    CODEC_NAMES,
    CONTROL_TYPE_NAMES,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CodecUnavailableError,
    ControlRecord,
    CoordinatorRecord,
    DecodeError,
    EncodeError,
    MetadataRecord,
    ProtocolError,
    Record,
    RecordBatch,
    batch_from_json,
    batch_spans,
    batch_to_json,
    batches_to_json,
    control_record,
    crc32c,
    crc32c_backend,
    decode_batches,
    decode_control_record,
    decode_coordinator_record,
    decode_metadata_record,
    encode_batch,
    encode_control_batch,
    encode_coordinator_record,
    encode_metadata_record,
    end_txn_marker_batch,
    iter_batches,
    record_to_json,
    restamp,
)

__all__ = [
    "CODEC_NAMES",
    "CONTROL_TYPE_NAMES",
    "CodecUnavailableError",
    "ControlRecord",
    "CoordinatorRecord",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DecodeError",
    "EncodeError",
    "MetadataRecord",
    "ProtocolError",
    "Record",
    "RecordBatch",
    "batch_from_json",
    "batch_spans",
    "batch_to_json",
    "batches_to_json",
    "control_record",
    "crc32c",
    "crc32c_backend",
    "decode_batches",
    "decode_control_record",
    "decode_coordinator_record",
    "decode_metadata_record",
    "encode_batch",
    "encode_control_batch",
    "encode_coordinator_record",
    "encode_metadata_record",
    "end_txn_marker_batch",
    "iter_batches",
    "record_to_json",
    "restamp",
]
