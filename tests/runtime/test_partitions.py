"""Network partitions on real processes through a loopback proxy the test controls: an isolated leader
resigns after check-quorum, the majority elects a new leader and keeps committing, the partition heals
and everyone converges with nothing acknowledged lost."""

from __future__ import annotations

import time

import pytest

from runtime_settings import TEST_SETTINGS
from dumps import data_records
from kraftwire.node.runtime.admin import find_leader
from kraftwire.node.runtime.client import ClientError
from kraftwire.node.runtime.local_cluster import LocalCluster, free_ports
from kraftwire.node.runtime.producer import MetadataClient
from proxy import PartitionProxy

pytestmark = pytest.mark.timeout(240)


def view(cluster, node):
    """(error, leader id, epoch) of DescribeQuorum answered by ``node`` itself: error 0 and its own id and
    epoch when it leads; a non-leader answers NOT_LEADER_OR_FOLLOWER naming no leader (0, 0), as Kafka's.
    """
    from kraftwire.node.runtime.admin import describe_quorum_request
    from kraftwire.node.runtime.client import KafkaConnection

    endpoint = cluster.endpoints[node]
    with KafkaConnection(endpoint.host, endpoint.port) as connection:
        partition = connection.call(describe_quorum_request()).topics[0].partitions[0]
    return partition.error_code, partition.leader_id, partition.leader_epoch


def leading_epoch(cluster, node) -> int | None:
    """The epoch ``node`` leads in, or None while it does not lead."""
    error, _, epoch = view(cluster, node)
    return epoch if error == 0 else None


def followed_leader(cluster, node) -> int:
    """Whom ``node`` names as the leader in its own DescribeCluster answer."""
    endpoint = cluster.endpoints[node]
    return find_leader(endpoint.host, endpoint.port)[1].broker_id


def wait_until(condition, timeout_s=60.0):
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        try:
            if condition():
                return
        except ClientError:
            pass
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_isolated_leader_resigns_and_majority_carries_on(tmp_path):
    proxy_ports, real_ports = free_ports(3), free_ports(3)
    cluster = LocalCluster(
        str(tmp_path / "c"),
        3,
        settings=TEST_SETTINGS,
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
            old, epoch = cluster.wait_for_leader()
            client = MetadataClient(cluster.endpoints[old], deadline_s=30)
            acknowledged = [b"before"]
            client.produce(acknowledged[0:1], -1)
            client.close()

            proxy.isolate(old)
            majority = [i for i in (1, 2, 3) if i != old]
            # The majority elects a new leader in a higher epoch...
            wait_until(lambda: any((leading_epoch(cluster, i) or 0) > epoch for i in majority))
            # ...and the isolated leader resigns on check-quorum (it no longer answers as leader).
            wait_until(lambda: leading_epoch(cluster, old) is None)
            new = next(i for i in majority if leading_epoch(cluster, i) is not None)
            client = MetadataClient(cluster.endpoints[new], deadline_s=30)
            for i in range(5):
                value = f"during-{i}".encode()
                client.produce([value], -1)
                acknowledged.append(value)
            client.close()

            proxy.heal()
            wait_until(lambda: followed_leader(cluster, old) == new)  # the old leader follows
            client = MetadataClient(cluster.endpoints[new], deadline_s=30)
            client.produce([b"after"], -1)
            acknowledged.append(b"after")
            client.close()
            wait_until(
                lambda: all(
                    [v for _, _, v in data_records(cluster.partition_dir(i))] == acknowledged
                    for i in (1, 2, 3)
                )
            )
            logs = [data_records(cluster.partition_dir(i)) for i in (1, 2, 3)]
            assert logs[0] == logs[1] == logs[2]
        finally:
            cluster.stop_all(graceful_s=5)
