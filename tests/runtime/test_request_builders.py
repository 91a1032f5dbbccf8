"""The runtime's request builders (one per request that the tools, the metadata client and the wire
tests send) build what each version of the request can carry, read back from its encoding."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraftwire.node.core.api import METADATA_TOPIC, METADATA_TOPIC_ID, Endpoint
from kraftwire.node.runtime.admin import (
    add_raft_voter_request,
    describe_cluster_request,
    describe_quorum_request,
    remove_raft_voter_request,
)
from kraftwire.node.runtime.producer import client_fetch_request

DIRECTORY = uuid.UUID(int=7)


def encoded_and_read_back(request: Any, version: int) -> Any:
    out = bytearray()
    request.write(out, version)
    again, end = type(request).read(bytes(out), 0, version)
    assert end == len(out)
    return again


def test_describe_quorum_asks_for_the_metadata_partition() -> None:
    request = encoded_and_read_back(describe_quorum_request(), 2)
    [topic] = request.topics
    assert (topic.topic_name, [p.partition_index for p in topic.partitions]) == (
        METADATA_TOPIC,
        [0],
    )


def test_describe_cluster_lists_the_controllers() -> None:
    request = encoded_and_read_back(describe_cluster_request(), 1)
    assert (request.endpoint_type, request.include_cluster_authorized_operations) == (2, False)


def test_voter_changes_name_no_cluster_by_default_as_kafkas_tool() -> None:
    listeners = {"CONTROLLER": Endpoint("127.0.0.1", 9093), "OTHER": Endpoint("::1", 9094)}
    added = encoded_and_read_back(add_raft_voter_request(4, DIRECTORY, listeners), 0)
    assert (added.cluster_id, added.voter_id, added.voter_directory_id) == (None, 4, DIRECTORY)
    assert added.timeout_ms == 30000
    assert [(x.name, x.host, x.port) for x in added.listeners] == [
        ("CONTROLLER", "127.0.0.1", 9093),
        ("OTHER", "::1", 9094),
    ]
    removed = encoded_and_read_back(remove_raft_voter_request(4, DIRECTORY, "cluster-a"), 0)
    assert (removed.cluster_id, removed.voter_id, removed.voter_directory_id) == (
        "cluster-a",
        4,
        DIRECTORY,
    )


@pytest.mark.parametrize("version", [12, 13, 14, 15, 17])  # 12: the first with LastFetchedEpoch
def test_a_client_fetch_is_shaped_for_its_version(version: int) -> None:
    built = client_fetch_request(version, 42, 3, 2, max_bytes=4096, max_wait_ms=500)
    request = encoded_and_read_back(built, version)
    replica = request.replica_state.replica_id if version >= 15 else request.replica_id
    assert replica == -1
    assert (request.max_wait_ms, request.min_bytes, request.max_bytes) == (500, 1, 4096)
    [topic] = request.topics
    if version >= 13:
        assert topic.topic_id == METADATA_TOPIC_ID
    else:
        assert topic.topic == METADATA_TOPIC
    [partition] = topic.partitions
    assert (partition.partition, partition.fetch_offset, partition.partition_max_bytes) == (
        0,
        42,
        4096,
    )
    assert (partition.current_leader_epoch, partition.last_fetched_epoch) == (3, 2)
