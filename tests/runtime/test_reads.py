"""ReadOffset (API 1000) on real ``kraftwire node start`` processes on loopback: ApiVersions lists it;
a client's ReadOffset to a random follower, sent right after a write was acknowledged, answers an offset
the follower then serves that write from; requests are validated as the other APIs are; a follower cut
off from the leader by the test's proxy answers an error, never an offset; ``kraftwire consume
--linearizable`` reads from a follower up to its read offset."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest

from runtime_settings import FOLLOWER_READ_SETTINGS, formatted_cluster
from kraftwire.generated import APIS
from kraftwire.node.runtime.client import KafkaConnection
from kraftwire.node.runtime.local_cluster import LocalCluster, free_ports
from kraftwire.node.runtime.producer import MetadataClient
from kraftwire.node.runtime.read_client import ReadRefused, read_offset, read_offset_request
from proxy import PartitionProxy

pytestmark = pytest.mark.timeout(240)
NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, UNKNOWN_TOPIC_OR_PARTITION = 6, 7, 3
INCONSISTENT_CLUSTER_ID = 104


def connect(cluster, node: int, client_id: str = "kraftwire-test") -> KafkaConnection:
    endpoint = cluster.endpoints[node]
    return KafkaConnection(endpoint.host, endpoint.port, timeout_s=15, client_id=client_id)


def follower_values(cluster, node: int, up_to: int) -> list[bytes]:
    """Committed data records that ``node`` itself serves, read until ``up_to`` (exclusive)."""
    client = MetadataClient(cluster.endpoints[node], deadline_s=15, pinned=True)
    values, offset = [], 0
    try:
        while offset < up_to:
            records, next_offset = client.fetch_committed(offset)
            assert next_offset > offset, f"node {node} serves nothing at {offset} below {up_to}"
            values.extend(v for _, v in records)
            offset = next_offset
    finally:
        client.close()
    return values


def test_api_versions_lists_read_offset(cluster):
    cluster.start_all()
    cluster.wait_for_leader()
    with connect(cluster, 1) as connection:
        assert connection.versions[1000] == (APIS[1000].lowest_version, APIS[1000].highest_version)


@pytest.fixture
def follower_read_cluster(tmp_path):
    """A formatted 3-node cluster whose followers serve client Fetches; stopped after the test."""
    with formatted_cluster(tmp_path / "cluster", FOLLOWER_READ_SETTINGS) as local:
        yield local


def test_follower_reads_see_every_acknowledged_write(follower_read_cluster):
    cluster = follower_read_cluster
    cluster.start_all()
    leader, _ = cluster.wait_for_leader()
    followers = [i for i in cluster.ids if i != leader]
    writer = MetadataClient(cluster.endpoints[leader], deadline_s=30)
    rng = random.Random(13)
    try:
        for n in range(40):
            value = f"w{n}".encode()
            base = writer.produce([value], -1)
            reader = rng.choice(followers)
            with connect(cluster, reader) as connection:
                fresh = read_offset(connection)
            assert fresh > base, f"round {n}: node {reader} read offset {fresh} <= write {base}"
            assert value in follower_values(cluster, reader, fresh), f"round {n}, node {reader}"
        # The leader answers a client too, after its own quorum round.
        with connect(cluster, leader) as connection:
            assert read_offset(connection) > base
    finally:
        writer.close()


def test_read_offset_requests_are_validated(cluster):
    cluster.start_all()
    leader, epoch = cluster.wait_for_leader()
    follower = next(i for i in cluster.ids if i != leader)
    with connect(cluster, follower) as connection:
        wrong_cluster = connection.call(read_offset_request("AAAAAAAAAAAAAAAAAAAAAA"))
        assert wrong_cluster.error_code == INCONSISTENT_CLUSTER_ID
        request = read_offset_request(cluster.cluster_id)
        request.topics[0].partitions[0].partition_index = 1
        partition = connection.call(request).topics[0].partitions[0]
        assert partition.error_code == UNKNOWN_TOPIC_OR_PARTITION and partition.applied_offset == -1
        assert read_offset(connection, cluster.cluster_id) >= 0  # our own cluster id is fine
    # Another replica's raft client asks the leader only: a follower sends it there at once.
    with connect(cluster, follower, client_id="raft-client-9") as connection:
        answer = connection.call(read_offset_request(cluster.cluster_id))
    partition = answer.topics[0].partitions[0]
    assert partition.error_code == NOT_LEADER_OR_FOLLOWER
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (
        leader,
        epoch,
    )
    assert [(e.node_id, e.port) for e in answer.node_endpoints] == [
        (leader, cluster.endpoints[leader].port)
    ]


def kraftwire(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kraftwire", *args], capture_output=True, timeout=60
    )


def test_partitioned_follower_never_serves_a_stale_read(tmp_path):
    proxy_ports, real_ports = free_ports(3), free_ports(3)
    cluster = LocalCluster(
        str(tmp_path / "c"),
        3,
        settings=FOLLOWER_READ_SETTINGS,
        listen_ports=dict(zip((1, 2, 3), real_ports)),
    )
    cluster.endpoints = {
        i: type(e)(e.host, proxy_ports[i - 1]) for i, e in cluster.endpoints.items()
    }
    cluster.format()
    routes = {i: (proxy_ports[i - 1], real_ports[i - 1]) for i in (1, 2, 3)}
    with PartitionProxy(routes) as proxy:
        try:
            cluster.start_all()
            leader, _ = cluster.wait_for_leader()
            cut = next(i for i in cluster.ids if i != leader)
            writer = MetadataClient(cluster.endpoints[leader], deadline_s=30)
            writer.produce([b"before"], -1)
            proxy.isolate(cut)  # clients still reach every node; nodes no longer reach `cut`
            base = writer.produce([b"during"], -1)  # the other two still commit
            writer.close()
            for _ in range(3):
                with connect(cluster, cut) as connection, pytest.raises(ReadRefused) as refused:
                    read_offset(connection)
                assert refused.value.error_code in (REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER)
            endpoint = cluster.endpoints[cut]
            where = f"{endpoint.host}:{endpoint.port}"
            consume = kraftwire("consume", "--bootstrap-controller", where, "--linearizable")
            assert consume.returncode == 1 and consume.stdout == b""
            assert len(consume.stderr.splitlines()) == 1 and b"error 7" in consume.stderr

            proxy.heal()
            stop = time.monotonic() + 60
            while True:  # once it hears from the leader again, its reads see the write
                try:
                    with connect(cluster, cut) as connection:
                        fresh = read_offset(connection)
                    break
                except ReadRefused:
                    assert time.monotonic() < stop, "the healed follower never served a read"
            assert fresh > base and b"during" in follower_values(cluster, cut, fresh)
            consume = kraftwire(
                "consume", "--bootstrap-controller", where, "--linearizable", "--from-beginning",
                "--timeout-ms", "1000",
            )  # fmt: skip
            assert consume.returncode == 0, consume.stderr
            assert consume.stdout.split(b"\n")[:2] == [b"before", b"during"]
        finally:
            cluster.stop_all(graceful_s=5)


def test_linearizable_consume_from_a_follower_without_follower_reads_names_the_setting(cluster):
    """Issue 26: it said "no leader accepted the request within 10 s"; the follower answers every client
    Fetch NOT_LEADER_OR_FOLLOWER because kraftwire.follower.fetch.enable is off (the default)."""
    cluster.start_all()
    leader, _ = cluster.wait_for_leader()
    follower = next(i for i in cluster.ids if i != leader)
    endpoint = cluster.endpoints[follower]
    consume = kraftwire(
        "consume", "--bootstrap-controller", f"{endpoint.host}:{endpoint.port}", "--linearizable",
        "--timeout-ms", "2000",
    )  # fmt: skip
    assert consume.returncode == 1 and consume.stdout == b""
    [line] = consume.stderr.decode().splitlines()
    assert "set kraftwire.follower.fetch.enable=true" in line, line
    assert f"leader is node {leader}" in line and "no leader accepted" not in line, line
