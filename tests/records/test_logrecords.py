"""Metadata-log frames and coordinator records, decoded with a package generated from upstream specs.

The bundled package holds only the KRaft specs, so the ``pkg`` fixture (conftest.py) generates a small
package from metadata, storage and coordinator specs of ../shared/kafka-schemas. Bodies and JSON come
from ../shared/kafka-vectors (written by Kafka); the framing is added here as Kafka's serdes do.
"""

from __future__ import annotations

import json
import struct

import pytest
from shared import shared_path
from varints import uvarint

from kraftwire.records import (
    DecodeError,
    batch_to_json,
    batches_to_json,
    decode_batches,
    decode_coordinator_record,
    decode_metadata_record,
    encode_batch,
    encode_coordinator_record,
    encode_metadata_record,
)


def _vectors(stem: str) -> list[dict]:
    path = shared_path("kafka-vectors", f"{stem}.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    "stem, family",
    [
        ("TopicRecord", "metadata"),
        ("PartitionRecord", "metadata"),
        ("RegisterBrokerRecord", "metadata"),
        ("FeatureLevelRecord", "metadata"),
        ("NoOpRecord", "metadata"),
        ("RemoteLogSegmentMetadataRecord", "storage"),
    ],
)
def test_metadata_vectors_frame_and_decode(pkg, stem, family):
    cls = pkg.lookup(stem)
    for vector in _vectors(stem):
        version, body = vector["version"], bytes.fromhex(vector["hex"])
        frame = uvarint(1) + uvarint(cls.API_KEY) + uvarint(version) + body
        decoded = decode_metadata_record(frame, package=pkg, family=family)
        assert (decoded.record_type, decoded.version, type(decoded.message)) == (
            cls.API_KEY,
            version,
            cls,
        )
        assert decoded.to_json()["data"] == vector["json"]
        assert encode_metadata_record(decoded.message, version) == frame


def test_metadata_frame_errors_and_unknown_types(pkg):
    body = bytes.fromhex(_vectors("TopicRecord")[0]["hex"])
    good = uvarint(1) + uvarint(2) + uvarint(0) + body
    # Without a family the KRaft log's "metadata" family is used (storage reuses ids 0-3).
    assert decode_metadata_record(good, package=pkg).message == pkg.lookup("TopicRecord").decode(
        body, 0
    )
    with pytest.raises(DecodeError, match="frame version 0"):
        decode_metadata_record(b"\x00" + good[1:], package=pkg)
    with pytest.raises(DecodeError, match="left over"):
        decode_metadata_record(good + b"\x00", package=pkg)
    with pytest.raises(DecodeError, match="too large"):
        decode_metadata_record(uvarint(1) + uvarint(40000) + uvarint(0), package=pkg)
    with pytest.raises(DecodeError, match="null"):
        decode_metadata_record(None, package=pkg)
    frame = uvarint(1) + uvarint(99) + uvarint(0) + b"\x01\x02"
    unknown = decode_metadata_record(frame, package=pkg)
    assert (unknown.message, unknown.body) == (None, b"\x01\x02")
    # The bundled package has no metadata specs: a clear error, not a crash.
    with pytest.raises(DecodeError, match="no metadata records"):
        decode_metadata_record(good)


COORDINATORS = [
    ("OffsetCommitKey", "OffsetCommitValue", "group"),
    ("ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue", "__consumer_offsets"),
    ("ShareSnapshotKey", "ShareSnapshotValue", "share"),
    ("TransactionLogKey", "TransactionLogValue", "transaction-coordinator"),
]


@pytest.mark.parametrize("key_stem, value_stem, family", COORDINATORS)
def test_coordinator_vectors_decode(pkg, key_stem, value_stem, family):
    key_cls = pkg.lookup(key_stem)
    key_vector = _vectors(key_stem)[0]
    key = struct.pack(">h", key_cls.API_KEY) + bytes.fromhex(key_vector["hex"])
    for vector in _vectors(value_stem):
        version = vector["version"]
        value = struct.pack(">h", version) + bytes.fromhex(vector["hex"])
        decoded = decode_coordinator_record(key, value, package=pkg, family=family)
        assert type(decoded.key) is key_cls and decoded.key.to_json(0) == key_vector["json"]
        assert decoded.version == version and decoded.value.to_json(version) == vector["json"]
        assert decoded.to_json()["value"] == vector["json"]
        assert encode_coordinator_record(decoded.key, decoded.value, version) == (key, value)
    tombstone = decode_coordinator_record(key, None, package=pkg, family=family)
    assert tombstone.is_tombstone and tombstone.to_json()["value"] is None
    assert encode_coordinator_record(tombstone.key) == (key, None)


def test_coordinator_errors_and_unknown_types(pkg):
    key = struct.pack(">h", 3) + bytes.fromhex(_vectors("ConsumerGroupMetadataKey")[0]["hex"])
    with pytest.raises(DecodeError, match="family"):
        decode_coordinator_record(key, None, package=pkg)  # three families: ambiguous
    with pytest.raises(DecodeError, match="outside its valid versions"):
        decode_coordinator_record(key, b"\x00\x63", package=pkg, family="group")
    with pytest.raises(DecodeError, match="2-byte"):
        decode_coordinator_record(b"\x00", None, package=pkg, family="group")
    unknown = decode_coordinator_record(b"\x00\x63abc", b"\x00\x00xyz", package=pkg, family="group")
    assert (unknown.key, unknown.key_body, unknown.value_body) == (None, b"abc", b"xyz")


def test_json_view_decodes_metadata_values(pkg):
    vector = _vectors("TopicRecord")[0]
    frame = uvarint(1) + uvarint(2) + uvarint(0) + bytes.fromhex(vector["hex"])
    (batch,), _ = decode_batches(encode_batch([(None, frame, [], 0), (None, b"\x07", [], 0)]))
    view = batch_to_json(batch, values="metadata", package=pkg)
    assert view["records"][0]["metadata"]["data"] == vector["json"]
    assert "decodeError" in view["records"][1]


def test_buffer_views_decode_metadata_and_coordinator_values_as_batch_views_do(pkg):
    """batches_to_json reads v2 batches straight into their view (``_v2_view``) and decodes the
    values afterwards: the same members as batch_to_json on the decoded batches, errors included."""
    vector = _vectors("TopicRecord")[0]
    frame = uvarint(1) + uvarint(2) + uvarint(0) + bytes.fromhex(vector["hex"])
    key_cls = pkg.lookup("OffsetCommitKey")
    key = struct.pack(">h", key_cls.API_KEY) + bytes.fromhex(_vectors("OffsetCommitKey")[0]["hex"])
    value_vector = _vectors("OffsetCommitValue")[0]
    value = struct.pack(">h", value_vector["version"]) + bytes.fromhex(value_vector["hex"])
    cases = [
        ([(None, frame, [], 0), (None, b"\x07", [], 1), (None, None, [], 2)], "metadata", None),
        (
            [(key, value, [], 0), (key, None, [], 1), (b"\x00", value, [], 2)],
            "coordinator",
            "group",
        ),
    ]
    for rows, values, family in cases:
        data = encode_batch(rows) + encode_batch(rows[:1], base_offset=3, compression="gzip")
        options = {"values": values, "family": family, "package": pkg}
        view = batches_to_json(data, **options)
        assert view["batches"] == [batch_to_json(b, **options) for b in decode_batches(data)[0]]
        members = [
            record.get(values, record.get("decodeError"))
            for record in view["batches"][0]["records"]
        ]
        assert all(members) and "decodeError" in view["batches"][0]["records"][-1]
    assert view["batches"][0]["records"][0]["coordinator"]["value"] == value_vector["json"]


def test_coordinator_record_parts_that_are_not_buffers_are_refused(pkg):
    """As for a metadata value: ``bytes(5)`` is five zero bytes, which decoded as a record."""
    key = struct.pack(">h", 3) + bytes.fromhex(_vectors("ConsumerGroupMetadataKey")[0]["hex"])
    for value in ("text", 5):
        with pytest.raises(DecodeError, match=f"value must be bytes, not {type(value).__name__}"):
            decode_coordinator_record(key, value, package=pkg, family="group")
        with pytest.raises(DecodeError, match=f"key must be bytes, not {type(value).__name__}"):
            decode_coordinator_record(value, None, package=pkg, family="group")
