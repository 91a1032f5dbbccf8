"""Network partitions on real processes through a loopback proxy the test controls: an isolated leader
resigns after check-quorum, the majority elects a new leader and keeps committing, the partition heals
and everyone converges with nothing acknowledged lost."""

from __future__ import annotations

import time

import pytest

from runtime_settings import TEST_SETTINGS
from dumps import data_records
from kraftwire.node.runtime.client import ClientError
from kraftwire.node.runtime.local_cluster import LocalCluster, free_ports
from kraftwire.node.runtime.producer import MetadataClient
from proxy import PartitionProxy

pytestmark = pytest.mark.timeout(240)


def describe(cluster, node):
    """The __cluster_metadata partition of a DescribeQuorum answered by ``node`` itself."""
    from kraftwire.generated import describe_quorum_request as dq
    from kraftwire.node.runtime.client import KafkaConnection

    request = dq.DescribeQuorumRequest(
        topics=[
            dq.TopicData(
                topic_name="__cluster_metadata", partitions=[dq.PartitionData(partition_index=0)]
            )
        ]
    )
    endpoint = cluster.endpoints[node]
    with KafkaConnection(endpoint.host, endpoint.port) as connection:
        return connection.call(request).topics[0].partitions[0]


def view(cluster, node):
    """(error code, leader id, epoch) from DescribeQuorum answered by ``node`` itself. As in Kafka, only
    a leader answers it: any other node answers NOT_LEADER_OR_FOLLOWER (6) with leader and epoch 0."""
    partition = describe(cluster, node)
    return partition.error_code, partition.leader_id, partition.leader_epoch


def leading(cluster, nodes):
    """(leader, epoch) of the one node among ``nodes`` that answers as leader, else None."""
    for node in nodes:
        error, leader, epoch = view(cluster, node)
        if error == 0 and leader == node:
            return leader, epoch
    return None


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
            wait_until(lambda: (leading(cluster, majority) or (0, -1))[1] > epoch)
            # ...and the isolated leader resigns on check-quorum (it no longer answers as leader).
            wait_until(lambda: view(cluster, old)[0] == 6)
            new, _ = leading(cluster, majority)
            client = MetadataClient(cluster.endpoints[new], deadline_s=30)
            for i in range(5):
                value = f"during-{i}".encode()
                client.produce([value], -1)
                acknowledged.append(value)
            client.close()

            proxy.heal()
            # The old leader follows the new one: the new leader sees it caught up.
            wait_until(lambda: _caught_up(cluster, new, old))
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


def _caught_up(cluster, leader, follower):
    """Whether ``leader`` reports ``follower``'s log end at its high watermark (DescribeQuorum)."""
    partition = describe(cluster, leader)
    voters = {v.replica_id: v.log_end_offset for v in partition.current_voters}
    return partition.error_code == 0 and voters.get(follower, -1) >= partition.high_watermark
