"""Bad input gives a typed DecodeError naming what and where: never a crash, a hang or a big allocation."""

from __future__ import annotations

import struct
import tracemalloc
import uuid

import pytest

from kraftwire.generated import DecodeError, ProtocolError, UnsupportedVersionError
from kraftwire.generated.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kraftwire.generated.vote_request import PartitionData, TopicData, VoteRequest
from kraftwire.generated.vote_response import VoteResponse


def _vote_request(pre_vote: bool = False) -> VoteRequest:
    partition = PartitionData(partition_index=0, replica_epoch=3, replica_id=1, pre_vote=pre_vote)
    return VoteRequest(cluster_id="c", voter_id=2, topics=[TopicData(topic_name="t", partitions=[partition])])


def _fetch_request() -> FetchRequest:
    partitions = [FetchPartition(partition=i, fetch_offset=100 + i, partition_max_bytes=1 << 20) for i in range(3)]
    return FetchRequest(replica_id=-1, max_wait_ms=500, topics=[FetchTopic(topic="t", partitions=partitions)])


@pytest.mark.parametrize(
    "message, version",
    [(_vote_request(pre_vote=True), 2), (_vote_request(), 0), (_fetch_request(), 4), (_fetch_request(), 12), (_fetch_request(), 17)],
)
def test_every_truncation_is_a_decode_error(message, version):
    data = message.encode(version)
    for cut in range(len(data)):
        with pytest.raises(DecodeError) as info:
            type(message).decode(data[:cut], version)
        assert type(message).__name__ in str(info.value)


def test_trailing_bytes_are_refused():
    data = _vote_request().encode(2)
    with pytest.raises(DecodeError, match="1 bytes left over"):
        VoteRequest.decode(data + b"\x00", 2)


def test_huge_array_count_fails_fast_without_allocating():
    # VoteResponse v0: error_code int16, then the topics array: a compact count whose uvarint is 2^31;
    # minus one in Java's int arithmetic, that claims 2^31 - 1 elements.
    count = 1 << 31
    varint = bytearray()
    while count >= 0x80:
        varint.append((count & 0x7F) | 0x80)
        count >>= 7
    varint.append(count)
    data = (b"\x00\x00" + bytes(varint) + b"\x00\x00\x00\x00")[:10]
    assert len(data) == 10
    with pytest.raises(DecodeError):  # the first error reads the module's source once, for paths
        VoteResponse.decode(data, 0)
    tracemalloc.start()
    with pytest.raises(DecodeError, match="elements, but only .* bytes remain") as info:
        VoteResponse.decode(data, 0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert "topics" in str(info.value)
    assert peak < 64 * 1024


def test_classic_array_count_beyond_input():
    # FetchRequest v4: replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, then topics count.
    head = struct.pack(">iiiib", -1, 0, 0, 0, 0)
    with pytest.raises(DecodeError, match="topics"):
        FetchRequest.decode(head + struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 2, 4)


def test_negative_string_length_and_null_in_non_nullable_string():
    head = struct.pack(">iiiib", -1, 0, 0, 0, 0) + struct.pack(">i", 1)
    with pytest.raises(DecodeError, match=r"topics\[0\]\.topic: non-nullable field was serialized as null"):
        FetchRequest.decode(head + b"\xff\xff" + struct.pack(">i", 0), 4)
    with pytest.raises(DecodeError, match="negative string length"):
        FetchRequest.decode(head + b"\xff\xfe" + struct.pack(">i", 0), 4)


def test_invalid_utf8_is_refused_since_a_replaced_string_would_not_re_encode():
    data = bytearray(_vote_request().encode(0))
    # cluster_id "c" is the first compact string: length byte 2 then 'c'
    assert data[:2] == b"\x02c"
    data[1] = 0xFF
    with pytest.raises(DecodeError, match="cluster_id: string is not valid UTF-8"):
        VoteRequest.decode(bytes(data), 0)


def test_illegal_varint():
    with pytest.raises(DecodeError, match="illegal varint"):
        VoteResponse.decode(b"\x00\x00" + b"\xff" * 5 + b"\x01", 0)


def test_known_tag_in_a_version_where_it_is_not_tagged():
    # HighWatermark is tag 1 of FetchPartition only from v18; in v17 it is an error, not an unknown tag.
    message = _fetch_request()
    message.topics[0].partitions[0].unknown_tagged_fields = [(1, b"\x00" * 8)]
    with pytest.raises(ProtocolError, match="reuses a known"):
        message.encode(18)  # a raw tag may not reuse a known tag number
    raw = FetchRequest(topics=[FetchTopic(topic="t", partitions=[FetchPartition(partition=1)])])
    tampered = _inject_tag_in_first_partition(raw, 17, tag=1, value=b"\x00" * 8)
    with pytest.raises(DecodeError, match="tag 1 is not valid for this version"):
        FetchRequest.decode(tampered, 17)


def _inject_tag_in_first_partition(message: FetchRequest, version: int, tag: int, value: bytes) -> bytes:
    """Re-encode with a raw tag, then renumber it: the writer refuses known numbers, the reader must too."""
    message.topics[0].partitions[0].unknown_tagged_fields = [(99, value)]
    with_tag = message.encode(version)
    message.topics[0].partitions[0].unknown_tagged_fields = None
    marker = bytes([1, 99, len(value)]) + value
    assert with_tag.count(marker) == 1
    return with_tag.replace(marker, bytes([1, tag, len(value)]) + value)


def test_unsupported_versions():
    with pytest.raises(UnsupportedVersionError, match=r"VoteRequest v3 is not supported \(valid versions: 0-2\)"):
        VoteRequest.decode(b"", 3)
    with pytest.raises(UnsupportedVersionError):
        _vote_request().encode(-1)
    with pytest.raises(UnsupportedVersionError):
        FetchRequest().encode(3)  # Fetch starts at v4 since KIP-896


def test_errors_carry_offset_and_path():
    data = _vote_request().encode(2)
    with pytest.raises(DecodeError) as info:
        VoteRequest.decode(data[:20], 2)
    assert info.value.field_path == "topics[0].partitions[0].replica_id"
    assert info.value.offset == 18


def test_errors_name_the_element_with_its_indices():
    # 50 partitions, each with a HighWatermark tag; partition 0 carries an unknown tag whose 61 bytes
    # put partition 41's fetch_offset at byte 1873. The input stops 3 bytes into it.
    partitions = [FetchPartition(partition=i, fetch_offset=i, high_watermark=5) for i in range(50)]
    partitions[0].unknown_tagged_fields = [(7, b"x" * 61)]
    topic = FetchTopic(topic_id=uuid.UUID(int=1), partitions=partitions)
    data = FetchRequest(topics=[topic]).encode(18)
    with pytest.raises(DecodeError) as info:
        FetchRequest.decode(data[:1876], 18)
    assert str(info.value) == "FetchRequest v18: topics[0].partitions[41].fetch_offset: truncated input at offset 1873"
    assert info.value.offset == 1873
    assert info.value.field_path == "topics[0].partitions[41].fetch_offset"


def test_errors_inside_tagged_fields_and_inlined_elements_name_them():
    partitions = [FetchPartition(partition=i, high_watermark=5) for i in range(3)]
    data = bytearray(FetchRequest(topics=[FetchTopic(topic_id=uuid.UUID(int=1), partitions=partitions)]).encode(18))
    # partition 2's tag section: count 1, tag 1, size 8, value; make the size 9
    where = len(data) - 4 - 8 - 1  # after it: the value, topic tags, forgotten, rack, top tags
    assert data[where - 2 : where + 1] == b"\x01\x01\x08"
    data[where] = 9
    with pytest.raises(DecodeError, match=r"topics\[0\]\.partitions\[2\]: tagged field 1 declares 9 bytes but its value has 8"):
        FetchRequest.decode(bytes(data), 18)
