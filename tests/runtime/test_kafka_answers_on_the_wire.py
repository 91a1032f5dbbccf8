"""A running node answers as a Kafka KafkaRaftClient in the same role answers on the wire.

The expected values were read off Kafka's own raft client (built from Kafka's source, run beside our
nodes in one quorum, asked the same requests; issue #10 interop): a non-leader's DescribeQuorum keeps
leader 0 / epoch 0 / high watermark 0 and the NOT_LEADER_OR_FOLLOWER text, its Fetch errors carry high
watermark -1 (a client's, replica -1, as a replica's), its voter-change refusals an empty message. A completed AddRaftVoter or RemoveRaftVoter carries a null
message as Kafka 4.4.0's ``RaftUtil`` answers (4.0.x and the issue #10 build carried "NONE").
"""

from __future__ import annotations

import time
import uuid

import pytest

from kraftwire.generated import fetch_request as _fetch
from kraftwire.generated import errors
from kraftwire.node.runtime.admin import (
    add_raft_voter_request,
    describe_quorum_request,
    remove_raft_voter_request,
)
from kraftwire.node.runtime.client import KafkaConnection
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.storage.layout import read_meta_properties
from runtime_settings import TEST_SETTINGS

pytestmark = pytest.mark.timeout(180)

METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID
NOT_LEADER_TEXT = (
    "For requests intended only for the leader, this error indicates that the broker is not the"
    " current leader. For requests intended for any replica, this error indicates that the broker is"
    " not a replica of the topic partition."
)


@pytest.fixture
def leader_and_observer(tmp_path):
    """Node 1 the only voter and leader; node 2 formatted without voters, fetching as an observer."""
    cluster = LocalCluster(str(tmp_path / "c"), 1, settings=TEST_SETTINGS)
    cluster.format()
    try:
        cluster.start_all()
        cluster.wait_for_leader()
        observer = cluster.add_node()
        cluster.start(observer)
        _wait(lambda: observer in _replicas(cluster, "observers"), "node 2 to observe")
        yield cluster
    finally:
        cluster.stop_all(graceful_s=5)


def _replicas(cluster: LocalCluster, which: str) -> list[int]:
    described = cluster.describe()
    if described is None:
        return []
    return [r.replica_id for r in getattr(described[1].topics[0].partitions[0], which)]


def _wait(condition, what: str, timeout_s: float = 60) -> None:
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"waited in vain for {what}")


def ask(cluster: LocalCluster, node_id: int, request):
    endpoint = cluster.endpoints[node_id]
    with KafkaConnection(endpoint.host, endpoint.port, timeout_s=40) as connection:
        return connection.call(request)


def voter_change(cluster: LocalCluster, node_id: int, kind: str):
    directory_id = read_meta_properties(cluster.log_dir(node_id)).directory_id
    if kind == "remove":
        return remove_raft_voter_request(node_id, directory_id, cluster.cluster_id)
    listeners = {"CONTROLLER": cluster.endpoints[node_id]}
    return add_raft_voter_request(node_id, directory_id, listeners, cluster.cluster_id)


def test_a_non_leader_answers_as_kafkas(leader_and_observer):
    cluster = leader_and_observer
    _, epoch = cluster.wait_for_leader()
    described = ask(cluster, 2, describe_quorum_request())
    assert (described.error_code, described.error_message, described.nodes) == (0, "", [])
    partition = described.topics[0].partitions[0]
    assert (partition.error_code, partition.error_message) == (
        errors.NOT_LEADER_OR_FOLLOWER,
        NOT_LEADER_TEXT,
    )
    assert (partition.leader_id, partition.leader_epoch, partition.high_watermark) == (0, 0, 0)
    assert (partition.current_voters, partition.observers) == ([], [])

    fetched = ask(cluster, 2, _fetch_request(cluster.cluster_id, epoch))
    answer = fetched.responses[0].partitions[0]
    assert (answer.error_code, answer.high_watermark) == (errors.NOT_LEADER_OR_FOLLOWER, -1)
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (1, epoch)
    assert [(n.node_id, n.port) for n in fetched.node_endpoints] == [(1, cluster.endpoints[1].port)]

    # a client's Fetch (replica -1) is answered the same way
    fetched = ask(cluster, 2, _fetch_request(cluster.cluster_id, epoch, replica_id=-1))
    answer = fetched.responses[0].partitions[0]
    assert (answer.error_code, answer.high_watermark) == (errors.NOT_LEADER_OR_FOLLOWER, -1)
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (1, epoch)

    for kind in ("add", "remove"):
        refused = ask(cluster, 2, voter_change(cluster, 2, kind))
        assert (refused.error_code, refused.error_message) == (errors.NOT_LEADER_OR_FOLLOWER, "")


def _fetch_request(cluster_id: str, epoch: int, replica_id: int = 77):
    partition = _fetch.FetchPartition(
        partition=0,
        current_leader_epoch=epoch,
        fetch_offset=0,
        last_fetched_epoch=0,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
        replica_directory_id=uuid.UUID(int=5),
    )
    return _fetch.FetchRequest(
        cluster_id=cluster_id,
        replica_state=_fetch.ReplicaState(replica_id=replica_id, replica_epoch=-1),
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            _fetch.FetchTopic(
                topic="__cluster_metadata", topic_id=METADATA_TOPIC_ID, partitions=[partition]
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def test_the_leader_refuses_a_stale_client_fetch_without_a_high_watermark(leader_and_observer):
    cluster = leader_and_observer
    _, epoch = cluster.wait_for_leader()
    fetched = ask(cluster, 1, _fetch_request(cluster.cluster_id, epoch - 1, replica_id=-1))
    answer = fetched.responses[0].partitions[0]
    assert (answer.error_code, answer.high_watermark) == (errors.FENCED_LEADER_EPOCH, -1)
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (1, epoch)


def _caught_up(cluster: LocalCluster, node_id: int) -> bool:
    """Whether the leader reports ``node_id``, an observer, as having caught up once."""
    described = cluster.describe()
    if described is None:
        return False
    observers = described[1].topics[0].partitions[0].observers
    return any(r.replica_id == node_id and r.last_caught_up_timestamp >= 0 for r in observers)


def _add_voter(cluster: LocalCluster, node_id: int, attempts: int = 5):
    """AddRaftVoter for an observer that has caught up, asked again (as an operator would) while
    the leader refuses it as lagging: on a loaded machine the observer's last fetch can fall
    outside the leader's caught-up window, which the leader rightly refuses."""
    _wait(lambda: _caught_up(cluster, node_id), f"node {node_id} to catch up")
    for _ in range(attempts):
        answer = ask(cluster, 1, voter_change(cluster, node_id, "add"))
        if "lagging behind" not in (answer.error_message or ""):
            return answer
        time.sleep(0.5)
    return answer


def test_completed_voter_changes_carry_a_null_message(leader_and_observer):
    cluster = leader_and_observer
    added = _add_voter(cluster, 2)
    assert (added.error_code, added.error_message) == (errors.NONE, None)
    _wait(lambda: _replicas(cluster, "current_voters") == [1, 2], "voters [1, 2]")
    removed = ask(cluster, 1, voter_change(cluster, 2, "remove"))
    assert (removed.error_code, removed.error_message) == (errors.NONE, None)
