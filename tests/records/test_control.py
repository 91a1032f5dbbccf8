"""Control records: keys, every value type (decoded into the generated classes), builders, and the
exact bytes of docs/wire-format.md §10 (as Kafka writes them) and the vectors."""

from __future__ import annotations

import sys
import uuid

import pytest

from kraftwire.generated import lookup
from kraftwire.records import (
    ControlRecord,
    DecodeError,
    EncodeError,
    control_record,
    decode_batches,
    decode_control_record,
    encode_batch,
    encode_control_batch,
    end_txn_marker_batch,
)


def _nested(spec: str, name: str):
    return getattr(sys.modules[lookup(spec).__module__], name)


def _voters_record():
    Voter = _nested("VotersRecord", "Voter")
    Endpoint = _nested("VotersRecord", "Endpoint")
    Feature = _nested("VotersRecord", "KRaftVersionFeature")
    return lookup("VotersRecord")(
        version=0,
        voters=[
            Voter(
                voter_id=1,
                voter_directory_id=uuid.UUID(int=1),
                endpoints=[Endpoint(name="C", host="h", port=9093)],
                k_raft_version_feature=Feature(min_supported_version=0, max_supported_version=1),
            )
        ],
    )


# (type, key hex, value hex, value object factory) — bytes verified against Kafka (docs/wire-format.md §10)
DOC_EXAMPLES = [
    (
        5,
        "00000005",
        "0000000100",
        lambda: lookup("KRaftVersionRecord")(version=0, k_raft_version=1),
    ),
    (4, "00000004", "000000", lambda: lookup("SnapshotFooterRecord")(version=0)),
    (
        3,
        "00000003",
        "0000000000000000000500",
        lambda: lookup("SnapshotHeaderRecord")(version=0, last_contained_log_timestamp=5),
    ),
    (
        2,
        "00000002",
        "00000000000102000000010001" "00",
        lambda: lookup("LeaderChangeMessage")(
            version=0,
            leader_id=1,
            voters=[_nested("LeaderChangeMessage", "Voter")(voter_id=1)],
            granting_voters=[],
        ),
    ),
    (
        6,
        "00000006",
        "00000200000001" + "00" * 15 + "01" + "0202430268238500" + "00000001" + "000000",
        _voters_record,
    ),
    (1, "00000001", "000000000007", lambda: lookup("EndTxnMarker")(coordinator_epoch=7)),
]


@pytest.mark.parametrize("type_, key_hex, value_hex, make", DOC_EXAMPLES)
def test_documented_control_record_bytes(type_, key_hex, value_hex, make):
    message = make()
    control = control_record(type_, message)
    assert control.key_bytes().hex() == key_hex
    assert control.value_bytes().hex() == value_hex
    decoded = decode_control_record(bytes.fromhex(key_hex), bytes.fromhex(value_hex))
    assert decoded == ControlRecord(type_, message)
    assert decoded.to_json()["typeName"] == control.type_name


def test_vector_transaction_markers(vector_blobs):
    markers = [
        batch for blob in vector_blobs for batch in decode_batches(blob)[0] if batch.is_control
    ]
    decoded = {
        b.base_offset: decode_control_record(b.records[0].key, b.records[0].value) for b in markers
    }
    assert decoded[11].type_name == "COMMIT" and decoded[11].value.coordinator_epoch == 4
    assert decoded[3].type_name == "ABORT" and decoded[3].value.coordinator_epoch == 0
    # The builder reproduces Kafka's marker batches byte for byte.
    for batch in markers:
        control = decoded[batch.base_offset]
        rebuilt = end_txn_marker_batch(
            control.type_name == "COMMIT",
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            coordinator_epoch=control.value.coordinator_epoch,
            base_offset=batch.base_offset,
            leader_epoch=batch.partition_leader_epoch,
            timestamp=batch.records[0].timestamp,
        )
        assert decode_batches(rebuilt)[0][0].encode() == batch.encode() == rebuilt


def test_leader_change_batch_as_a_new_leader_writes_it():
    message = DOC_EXAMPLES[3][3]()
    data = encode_control_batch(
        [(2, message)], base_offset=10, leader_epoch=3, timestamp=1_700_000_000_000
    )
    (batch,), _ = decode_batches(data)
    assert batch.is_control and not batch.is_transactional
    assert (batch.base_offset, batch.partition_leader_epoch, batch.producer_id) == (10, 3, -1)
    control = decode_control_record(batch.records[0].key, batch.records[0].value)
    assert control.value == message and control.to_json()["value"]["leaderId"] == 1


def test_snapshot_header_and_footer_batches():
    header = [
        control_record(3, DOC_EXAMPLES[2][3]()),
        control_record(5, DOC_EXAMPLES[0][3]()),
        control_record(6, _voters_record()),
    ]
    data = encode_control_batch(header, timestamp=5) + encode_control_batch(
        [control_record(4)], base_offset=3, timestamp=5
    )
    batches, _ = decode_batches(data)
    types = [decode_control_record(r.key, r.value).type_name for b in batches for r in b.records]
    assert types == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS", "SNAPSHOT_FOOTER"]
    assert [r.offset for b in batches for r in b.records] == [0, 1, 2, 3]


def test_record_batch_control_records_decodes_each_record():
    """RecordBatch.control_records() is public API (it was dropped as "dead code" in a commit titled
    "behaviour unchanged"; issue 26 restores it)."""
    header = [control_record(3, DOC_EXAMPLES[2][3]()), control_record(6, _voters_record())]
    data = encode_control_batch(header, timestamp=5) + encode_control_batch(
        [control_record(4)], base_offset=2, timestamp=5
    )
    batches, _ = decode_batches(data)
    decoded = [batch.control_records() for batch in batches]
    assert [[c.type_name for c in controls] for controls in decoded] == [
        ["SNAPSHOT_HEADER", "KRAFT_VOTERS"],
        ["SNAPSHOT_FOOTER"],
    ]
    assert all(isinstance(c, ControlRecord) for controls in decoded for c in controls)
    assert decoded[0][1].value == _voters_record()
    (data_batch,), _ = decode_batches(encode_batch([(b"k", b"v", [], 0)]))
    with pytest.raises(ValueError, match="not a control batch"):
        data_batch.control_records()


def test_unknown_types_are_kept_raw_and_odd_keys():
    unknown = decode_control_record(b"\x00\x00\x00\x09", b"\x01\x02")
    assert (unknown.type, unknown.type_name, unknown.value) == (9, "UNKNOWN", b"\x01\x02")
    assert unknown.value_bytes() == b"\x01\x02"
    assert encode_control_batch([unknown])  # writable again
    later = decode_control_record(b"\x00\x01\x00\x01" + b"extra", b"\x00\x00\x00\x00\x00\x07")
    assert (later.key_version, later.type_name) == (1, "COMMIT")  # key v1+ is read as v0
    bumped = decode_control_record(b"\x00\x00\x00\x00", b"\x00\x03\x00\x00\x00\x07")
    assert bumped.value_version == 3 and bumped.value.coordinator_epoch == 7
    for key, value, message in [
        (b"\x00\x00\x00", b"", "at least 4 bytes"),
        (None, b"", "at least 4 bytes"),
        (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x07", "negative"),
        (b"\x00\x00\x00\x01", b"\xff\xff\x00\x00\x00\x07", "negative"),
        (b"\x00\x00\x00\x01", b"\x00\x00\x00", "at least 6 bytes"),
        (b"\x00\x00\x00\x02", None, "null"),
        (b"\x00\x00\x00\x02", b"\x00", "LEADER_CHANGE"),
    ]:
        with pytest.raises(DecodeError, match=message):
            decode_control_record(key, value)


def test_a_known_type_without_its_message_is_an_encode_error():
    """A control record of a known type holds its generated message: one holding raw bytes or
    nothing is refused with an EncodeError naming the type (it was an AttributeError), and an int
    value is only an ABORT/COMMIT's coordinator epoch."""
    for value in (None, b"\x00\x01"):
        record = ControlRecord(2, value)  # LEADER_CHANGE
        for write in (record.value_bytes, record.to_json):
            with pytest.raises(EncodeError, match="LEADER_CHANGE control record's value must be"):
                write()
    with pytest.raises(EncodeError, match="only ABORT and COMMIT take an int value"):
        control_record(2, 5)
    assert control_record(1, 5).value.coordinator_epoch == 5  # COMMIT
