"""Unknown tagged fields survive decode → encode byte for byte, at every nesting depth."""

from __future__ import annotations

import tracemalloc
import uuid

import pytest

from kraftwire.generated import EncodeError
from kraftwire.generated.snapshot_footer_record import SnapshotFooterRecord
from kraftwire.generated.fetch_response import (
    EpochEndOffset,
    FetchResponse,
    FetchableTopicResponse,
    NodeEndpoint,
    PartitionData,
)


def _response(tags: dict[str, list[tuple[int, bytes]]]) -> FetchResponse:
    partition = PartitionData(
        partition_index=3,
        high_watermark=10,
        records=b"",
        diverging_epoch=EpochEndOffset(epoch=2, end_offset=7, unknown_tagged_fields=tags.get("epoch")),
        unknown_tagged_fields=tags.get("partition"),
    )
    topic = FetchableTopicResponse(
        topic_id=uuid.UUID(int=5), partitions=[partition], unknown_tagged_fields=tags.get("topic")
    )
    endpoint = NodeEndpoint(node_id=1, host="h", port=9093, unknown_tagged_fields=tags.get("endpoint"))
    return FetchResponse(responses=[topic], node_endpoints=[endpoint], unknown_tagged_fields=tags.get("top"))


DEPTHS = {
    "top": [(7, b"top-level")],
    "topic": [(4, b"\x01\x02")],
    "partition": [(9, b""), (200, b"x" * 130)],  # a 2-byte tag and a 2-byte size
    "epoch": [(1, b"nested in a tagged struct")],
    "endpoint": [(3, b"\xff")],
}


@pytest.mark.parametrize("where", [*DEPTHS, "all"])
def test_unknown_tags_round_trip_byte_for_byte(where):
    tags = DEPTHS if where == "all" else {where: DEPTHS[where]}
    message = _response(tags)
    data = message.encode(17)
    decoded = FetchResponse.decode(data, 17)
    assert decoded == message
    assert decoded.encode(17) == data
    for raw in tags.values():
        for tag, value in raw:
            assert value in data
    plain = _response({}).encode(17)
    assert len(data) > len(plain)


def test_unknown_tags_are_written_after_known_ones_in_tag_order():
    # NodeEndpoints is known tag 0 of FetchResponse v16+; a raw tag 5 must come after it.
    message = FetchResponse(
        node_endpoints=[NodeEndpoint(node_id=1, host="h", port=1)], unknown_tagged_fields=[(5, b"\xaa")]
    )
    data = message.encode(16)
    # NodeEndpoints value: count 1 (+1), node_id, host "h", port (int32 here), rack null, no tags
    endpoints = bytes.fromhex("02" "00000001" "0268" "00000001" "00" "00")
    assert data.endswith(b"\x02" + b"\x00" + bytes([len(endpoints)]) + endpoints + b"\x05\x01\xaa")


def test_hand_written_bytes_with_an_unknown_tag_decode_and_reencode():
    # EpochEndOffset-free minimal FetchResponse v17: throttle 0, error 0, session 0, no responses,
    # then a tagged section holding only unknown tag 42 (3 bytes).
    data = bytes.fromhex("00000000" "0000" "00000000" "01" "01" "2a03616263")
    decoded = FetchResponse.decode(data, 17)
    assert decoded.unknown_tagged_fields == [(42, b"abc")]
    assert decoded.encode(17) == data
    assert "unknown" not in str(decoded.to_json(17))  # JSON never shows them, as in Kafka


def test_repeated_or_known_raw_tags_are_refused():
    with pytest.raises(EncodeError, match="reuses a known or repeated tag"):
        FetchResponse(unknown_tagged_fields=[(0, b"")]).encode(17)
    with pytest.raises(EncodeError, match="reuses a known or repeated tag"):
        FetchResponse(unknown_tagged_fields=[(7, b""), (7, b"")]).encode(17)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def test_many_empty_unknown_tags_are_kept_compactly():
    # 50,000 zero-size unknown tags in a SnapshotFooterRecord (version int16, then the tag section).
    count = 50_000
    data = b"\x00\x00" + _uvarint(count) + b"".join(_uvarint(tag) + b"\x00" for tag in range(count))
    tracemalloc.start()
    decoded = SnapshotFooterRecord.decode(data, 0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 * len(data) + (1 << 20), (peak, len(data))
    assert len(decoded.unknown_tagged_fields) == count
    assert decoded.encode(0) == data
    assert list(decoded.unknown_tagged_fields)[-1] == (count - 1, b"")


def test_raw_tags_compare_equal_to_the_list_they_stand_for():
    tags = [(3, b""), (9, b"\x01\x02"), (300, b"x" * 200)]
    message = SnapshotFooterRecord(unknown_tagged_fields=tags)
    decoded = SnapshotFooterRecord.decode(message.encode(0), 0)
    assert decoded.unknown_tagged_fields == tags and tags == decoded.unknown_tagged_fields
    assert decoded == message and message == decoded
    assert decoded.unknown_tagged_fields[1] == (9, b"\x01\x02")
    assert repr(decoded.unknown_tagged_fields) == repr(tags)
