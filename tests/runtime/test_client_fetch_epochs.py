"""A replica -1 Fetch is validated as a Kafka controller validates it.

Found by hand against Apache Kafka's own KafkaRaftClient (a mixed quorum of kraftwire and Kafka voters):
Kafka answers any Fetch whose LastFetchedEpoch is negative, or above CurrentLeaderEpoch, with
INVALID_REQUEST, and fences a CurrentLeaderEpoch that is not its own; kraftwire's client path ignored both
fields, and ``kraftwire consume`` sent the defaults (-1, -1), so it could not read from a Kafka leader.
These tests talk to a real node process over TCP.
"""

from __future__ import annotations

import pytest

from runtime_settings import cluster_holding
from kraftwire.generated.errors import FENCED_LEADER_EPOCH, INVALID_REQUEST, UNKNOWN_LEADER_EPOCH
from kraftwire.node.runtime.client import KafkaConnection
from kraftwire.node.runtime.producer import MetadataClient, client_fetch_request

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def leader(tmp_path_factory):
    """One running cluster with a leader holding a few committed records: (endpoint, epoch)."""
    with cluster_holding(tmp_path_factory.mktemp("fetch-epochs") / "c", (b"a", b"b", b"c")) as q:
        cluster, node, epoch = q
        yield cluster.endpoints[node], epoch


def client_fetch(endpoint, current_leader_epoch: int, last_fetched_epoch: int, offset: int = 0):
    with KafkaConnection(endpoint.host, endpoint.port) as connection:
        version = connection.version_for(1)
        assert version >= 13
        request = client_fetch_request(version, offset, current_leader_epoch, last_fetched_epoch)
        return connection.call(request, version).responses[0].partitions[0]


def test_unset_epochs_are_an_invalid_request(leader):
    endpoint, _ = leader
    assert client_fetch(endpoint, -1, -1).error_code == INVALID_REQUEST


def test_last_fetched_epoch_above_current_is_an_invalid_request(leader):
    endpoint, epoch = leader
    assert client_fetch(endpoint, epoch, epoch + 1).error_code == INVALID_REQUEST


def test_stale_and_future_epochs_are_fenced_naming_the_leader(leader):
    endpoint, epoch = leader
    stale = client_fetch(endpoint, epoch - 1, 0)
    assert stale.error_code == FENCED_LEADER_EPOCH
    assert stale.current_leader.leader_epoch == epoch
    future = client_fetch(endpoint, epoch + 1, 0)
    assert future.error_code == UNKNOWN_LEADER_EPOCH
    assert future.current_leader.leader_epoch == epoch


def test_the_leaders_epoch_reads_committed_records(leader):
    endpoint, epoch = leader
    answer = client_fetch(endpoint, epoch, epoch)
    assert answer.error_code == 0 and answer.records


def test_metadata_client_learns_the_epoch_and_reads_everything(leader):
    endpoint, _ = leader
    client = MetadataClient(endpoint, deadline_s=30)
    try:
        values = [v for _, v in client.fetch_committed(0)[0]]
    finally:
        client.close()
    assert values == [b"a", b"b", b"c"]
