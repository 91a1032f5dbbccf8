"""A client's Fetch (replica id -1) over TCP, answered by the core like any Fetch (tests/node/
test_client_fetch.py has the core's side): committed records from the leader below its high watermark,
an empty answer at it, OFFSET_OUT_OF_RANGE above it, and a follower naming the leader and its endpoint.
Real node processes on 127.0.0.1, stopped by the fixture.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime_settings import cluster_holding
from kraftwire.generated.errors import NONE, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE
from kraftwire.generated.records import decode_batches
from kraftwire.node.runtime.client import KafkaConnection
from kraftwire.node.runtime.producer import client_fetch_request

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    """A running cluster whose leader holds three committed records: (cluster, leader id, epoch)."""
    with cluster_holding(
        tmp_path_factory.mktemp("client-fetch-core") / "c", (b"a", b"b", b"c")
    ) as q:
        yield q


def fetch(endpoint: Any, offset: int, epoch: int) -> tuple[int, Any]:
    """(version, FetchResponse) of a client Fetch at ``offset`` that waits for nothing."""
    with KafkaConnection(endpoint.host, endpoint.port) as connection:
        version = connection.version_for(1)
        request = client_fetch_request(version, offset, epoch, epoch)
        return version, connection.call(request, version)


def values(partition: Any) -> list[bytes]:
    batches, _ = decode_batches(partition.records or b"")
    return [r.value for b in batches if not b.is_control for r in b.records]


def test_the_leader_answers_below_at_and_above_its_high_watermark(quorum):
    cluster, leader, epoch = quorum
    _, below = fetch(cluster.endpoints[leader], 0, epoch)
    p = below.responses[0].partitions[0]
    assert p.error_code == NONE and values(p) == [b"a", b"b", b"c"]
    hw = p.high_watermark
    assert hw > 0 and below.node_endpoints == []

    _, at = fetch(cluster.endpoints[leader], hw, epoch)
    p = at.responses[0].partitions[0]
    assert (p.error_code, p.records, p.high_watermark) == (NONE, b"", hw)

    _, above = fetch(cluster.endpoints[leader], hw + 1, epoch)
    p = above.responses[0].partitions[0]
    assert (p.error_code, p.high_watermark, p.records) == (OFFSET_OUT_OF_RANGE, -1, None)


def test_a_follower_names_the_leader_and_its_endpoint(quorum):
    cluster, leader, epoch = quorum
    follower = next(n for n in cluster.endpoints if n != leader)
    version, answer = fetch(cluster.endpoints[follower], 0, epoch)
    p = answer.responses[0].partitions[0]
    assert (p.error_code, p.high_watermark) == (NOT_LEADER_OR_FOLLOWER, -1)
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, epoch)
    if version >= 16:
        [endpoint] = answer.node_endpoints
        expected = cluster.endpoints[leader]
        assert (endpoint.node_id, endpoint.host, endpoint.port) == (
            leader,
            expected.host,
            expected.port,
        )
