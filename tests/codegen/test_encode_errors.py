"""Values that cannot be written give a typed EncodeError naming the field path."""

from __future__ import annotations

import pytest

from kraftwire.generated import EncodeError, ProtocolError, UnsupportedVersionError
from kraftwire.generated.add_raft_voter_request import AddRaftVoterRequest
from kraftwire.generated.begin_quorum_epoch_request import BeginQuorumEpochRequest
from kraftwire.generated.end_quorum_epoch_request import EndQuorumEpochRequest
from kraftwire.generated.end_quorum_epoch_request import PartitionData as EndQuorumPartition
from kraftwire.generated.end_quorum_epoch_request import TopicData as EndQuorumTopic
from kraftwire.generated.fetch_request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from kraftwire.generated.vote_request import PartitionData, TopicData, VoteRequest


def _vote(**partition) -> VoteRequest:
    return VoteRequest(topics=[TopicData(topic_name="t", partitions=[PartitionData(**partition)])])


def test_null_where_not_nullable():
    with pytest.raises(EncodeError, match=r"VoteRequest v2: topics\[0\]\.topic_name: is null but not nullable"):
        VoteRequest(topics=[TopicData(topic_name=None)]).encode(2)
    with pytest.raises(EncodeError, match=r"topics: is null but not nullable"):
        VoteRequest(topics=None).encode(2)


def test_string_too_long():
    with pytest.raises(EncodeError, match=r"cluster_id: string of 32768 UTF-8 bytes is longer than 32767"):
        VoteRequest(cluster_id="x" * 32768).encode(2)
    with pytest.raises(EncodeError, match="longer than 32767"):
        VoteRequest(cluster_id="é" * 16384).encode(2)  # 32768 bytes in UTF-8
    assert len(VoteRequest(cluster_id="x" * 32767).encode(2)) > 32767


@pytest.mark.parametrize(
    "partition, path, text",
    [
        ({"partition_index": 1 << 31}, "partition_index", "out of range for int32"),
        ({"replica_epoch": -(1 << 31) - 1}, "replica_epoch", "out of range for int32"),
        ({"last_offset": 1 << 63}, "last_offset", "out of range for int64"),
        ({"replica_id": "7"}, "replica_id", "expected an int for int32, got str"),
        ({"replica_directory_id": "not-a-uuid"}, "replica_directory_id", "expected uuid"),
    ],
)
def test_integers_and_types_are_checked(partition, path, text):
    with pytest.raises(EncodeError) as info:
        _vote(**partition).encode(2)
    assert f"topics[0].partitions[0].{path}: " in str(info.value)
    assert text in str(info.value)


def test_uint16_port_range():
    from kraftwire.generated.add_raft_voter_request import Listener

    request = AddRaftVoterRequest(listeners=[Listener(name="CONTROLLER", host="h", port=65536)])
    with pytest.raises(EncodeError, match=r"listeners\[0\]\.port: 65536 is out of range for uint16"):
        request.encode(0)


def test_non_ignorable_field_absent_in_version():
    with pytest.raises(EncodeError, match=r"v1: topics\[0\]\.partitions\[0\]\.pre_vote: has a non-default value"):
        _vote(pre_vote=True).encode(1)
    assert _vote(pre_vote=False).encode(1)
    with pytest.raises(EncodeError, match=r"AddRaftVoterRequest v0: ack_when_committed: has a non-default"):
        AddRaftVoterRequest(ack_when_committed=False).encode(0)
    assert AddRaftVoterRequest(ack_when_committed=True).encode(0)
    # replica_id is not ignorable and left Fetch at v15 (it moved into ReplicaState)
    with pytest.raises(EncodeError, match="FetchRequest v15: replica_id"):
        FetchRequest(replica_id=5).encode(15)


def test_ignorable_field_is_dropped_silently():
    # VoteRequest.VoterId is ignorable and absent before v1
    assert VoteRequest(voter_id=3).encode(0) == VoteRequest().encode(0)
    # HighWatermark is ignorable and only in v18
    with_hw = FetchRequest(topics=[FetchTopic(partitions=[FetchPartition(high_watermark=-1)])])
    default = FetchRequest(topics=[FetchTopic(partitions=[FetchPartition()])])
    assert with_hw.encode(17) == default.encode(17)
    assert with_hw.encode(18) != default.encode(18)


def test_tagged_fields_refused_in_non_flexible_version():
    request = BeginQuorumEpochRequest(unknown_tagged_fields=[(5, b"\x01")])
    with pytest.raises(EncodeError, match="tagged fields were set, but this version does not support them"):
        request.encode(0)
    assert request.encode(1).endswith(b"\x01\x05\x01\x01")


def test_lone_surrogate_in_a_built_message_names_the_field():
    # Python strings can hold a lone surrogate (from "\ud800" or surrogateescape); UTF-8 cannot.
    with pytest.raises(EncodeError) as info:
        VoteRequest(cluster_id="\ud800").encode(2)
    assert str(info.value) == (
        "VoteRequest v2: cluster_id: not valid Unicode text: lone surrogate '\\ud800' at index 0"
    )
    assert info.value.field_path == "cluster_id"
    request = VoteRequest(topics=[TopicData(topic_name="ok"), TopicData(topic_name="ab\udfff")])
    with pytest.raises(EncodeError, match=r"v2: topics\[1\]\.topic_name: .*lone surrogate '\\udfff' at index 2"):
        request.encode(2)
    with pytest.raises(EncodeError, match=r"v0: topics\[1\]\.topic_name: .*lone surrogate"):
        request.encode(0)  # classic (non-compact) strings go through the runtime's writer


def test_element_paths_name_the_index_of_the_failing_element():
    good, bad = PartitionData(), PartitionData(replica_epoch=1 << 40)
    request = VoteRequest(
        topics=[TopicData(topic_name="a", partitions=[good]), TopicData(topic_name="b", partitions=[good, good, bad])]
    )
    with pytest.raises(EncodeError) as info:
        request.encode(2)
    assert info.value.field_path == "topics[1].partitions[2].replica_epoch"
    assert "out of range for int32" in str(info.value)


def test_elements_of_primitive_arrays_are_named():
    forgotten = [ForgottenTopic(partitions=[1, 2]), ForgottenTopic(partitions=[3, 1 << 33])]
    with pytest.raises(EncodeError, match=r"v18: forgotten_topics_data\[1\]\.partitions\[1\]: 8589934592 is out of range"):
        FetchRequest(forgotten_topics_data=forgotten).encode(18)
    partition = EndQuorumPartition(preferred_successors=[1, 2, None])
    request = EndQuorumEpochRequest(topics=[EndQuorumTopic(topic_name="t", partitions=[partition])])
    with pytest.raises(EncodeError, match=r"v0: topics\[0\]\.partitions\[0\]\.preferred_successors\[2\]: is null but"):
        request.encode(0)


def test_elements_of_string_arrays_are_named(upstream):
    groups = upstream.lookup("DescribeGroupsRequest")
    with pytest.raises(upstream.EncodeError, match=r"v5: groups\[1\]: not valid Unicode text: lone surrogate"):
        groups(groups=["a", "b\ud800"]).encode(5)
    with pytest.raises(upstream.EncodeError, match=r"v0: groups\[0\]: string of 40000 UTF-8 bytes is longer"):
        groups(groups=["x" * 40000]).encode(0)


def test_unsupported_version_is_its_own_error():
    with pytest.raises(UnsupportedVersionError):
        VoteRequest().encode(9)


@pytest.mark.parametrize(
    "payload, path, text",
    [
        ({"clusterId": 5, "voterId": 1, "topics": []}, "clusterId", "expected a string, got integer"),
        ({"clusterId": None, "voterId": "1", "topics": []}, "voterId", "expected an integer"),
        ({"clusterId": None, "voterId": 1, "topics": {}}, "topics[]", "expected a JSON array"),
        ({"clusterId": None, "topics": []}, "voterId", "unable to locate field 'voterId'"),
        (
            {"clusterId": None, "voterId": 1, "topics": [{"topicName": "t", "partitions": [{"partitionIndex": 1}]}]},
            "topics[].partitions[].replicaEpoch",
            "mandatory",
        ),
        ({"clusterId": None, "voterId": 1 << 40, "topics": []}, "voterId", "out of range for int32"),
        ([], "", "expected a JSON object"),
    ],
)
def test_from_json_type_errors_name_the_path(payload, path, text):
    with pytest.raises(ProtocolError) as info:
        VoteRequest.from_json(payload, 2)
    message = str(info.value)
    assert message.startswith("VoteRequest v2: ")
    assert (f"{path}: " in message) if path else True
    assert text in message
