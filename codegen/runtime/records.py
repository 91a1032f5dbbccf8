"""Kafka record batches: read and write the ``records`` bytes of Fetch, Produce and FetchSnapshot, log
segments and snapshots.

* :func:`decode_batches` reads a buffer of back-to-back batches (v2, and legacy magic 0/1 message sets)
  and returns the complete ones plus the bytes of a trailing partial batch, which is never an error.
* :func:`encode_batch` builds a v2 batch from ``(key, value, headers, timestamp)`` records;
  :func:`encode_control_batch` builds control batches; :meth:`RecordBatch.encode` re-writes a decoded
  batch from its fields.
* Control records, KRaft metadata-log frames and coordinator records are decoded into the generated
  message classes of a package (by default, the one this module is part of).
* :func:`batch_to_json` / :func:`batch_from_json` give a JSON view; :func:`restamp` rewrites a
  batch's base offset and leader epoch (both lie outside the CRC).

Only the standard library is required; snappy, lz4 and zstd need ``cramjam``, and CRC-32C is fastest
with the ``crc32c`` package (a pure-Python fallback is used without it).
"""

from __future__ import annotations

from ._batch import Record, RecordBatch
from ._buffer import (
    batch_spans,
    decode_batches,
    encode_batch,
    encode_value_batch,
    iter_batches,
    read_value_batch,
    restamp,
)
from ._compression import CODEC_NAMES, DEFAULT_MAX_DECOMPRESSED_BYTES, CodecUnavailableError
from ._control import (
    CONTROL_TYPE_NAMES,
    ControlRecord,
    control_record,
    decode_control_record,
    encode_control_batch,
    end_txn_marker_batch,
)
from ._crc32c import crc32c, crc32c_backend
from ._logrecords import (
    CoordinatorRecord,
    MetadataRecord,
    decode_coordinator_record,
    decode_metadata_record,
    encode_coordinator_record,
    encode_metadata_record,
)
from . import _records_json, _v2_text
from ._records_json import batch_from_json, batch_to_json, record_to_json
from ._runtime import DecodeError, EncodeError, ProtocolError
from ._view_reader import compiled_build

# The JSON view of a records buffer is the Spark decoders' hot path: compiled when built (see
# ``_view_reader``). The rest of ``_records_json`` is not, and stays the pure module's.
batches_to_json = (compiled_build(_records_json) or _records_json).batches_to_json
# The text of that view written straight from the bytes (``_v2_text``), for compiled codecs.
write_batches_json_text = (compiled_build(_v2_text) or _v2_text).write_batches_json_text

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
    "encode_value_batch",
    "encode_control_batch",
    "encode_coordinator_record",
    "encode_metadata_record",
    "end_txn_marker_batch",
    "iter_batches",
    "read_value_batch",
    "record_to_json",
    "restamp",
    "write_batches_json_text",
]
