"""Three real `kraftwire node start` processes on loopback: election, kill -9 of the leader, nothing
acknowledged lost (read back from every node's files with dump-log), a restart that catches up."""

from __future__ import annotations

import time

import pytest

from dumps import data_records
from kraftwire.node.runtime.producer import MetadataClient

pytestmark = pytest.mark.timeout(240)


def produce(cluster, values, acks=-1):
    node = cluster.running()[0]
    client = MetadataClient(cluster.endpoints[node], deadline_s=60)
    try:
        return [client.produce([v], acks) for v in values]
    finally:
        client.close()


def wait_until(condition, timeout_s=60.0):
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        if condition():
            return
        time.sleep(0.1)
    raise TimeoutError("condition not met in time")


def test_kill_leader_elects_new_one_and_loses_nothing(cluster):
    cluster.start_all()
    first, epoch = cluster.wait_for_leader()
    before = [f"before-{i}".encode() for i in range(30)]
    offsets = produce(cluster, before)
    assert offsets == sorted(offsets)

    cluster.kill(first)  # SIGKILL
    second, new_epoch = cluster.wait_for_leader(not_in=(first,))
    assert second != first and new_epoch > epoch
    after = [f"after-{i}".encode() for i in range(30)]
    produce(cluster, after)

    cluster.start(first)  # restarts and catches up
    wait_until(
        lambda: [v for _, _, v in data_records(cluster.partition_dir(first))] == before + after
    )
    cluster.stop_all()
    logs = {i: data_records(cluster.partition_dir(i)) for i in cluster.ids}
    for node, records in logs.items():
        values = [v for _, _, v in records]
        assert values == before + after, f"node {node}"
    assert logs[1] == logs[2] == logs[3]  # same offsets and epochs everywhere: no divergence


def test_acks_one_and_zero_are_written(cluster):
    cluster.start_all()
    cluster.wait_for_leader()
    assert produce(cluster, [b"one"], acks=1)[0] >= 0
    assert produce(cluster, [b"zero"], acks=0) == [-1]
    produce(cluster, [b"last"], acks=-1)  # sent after the others on the same log
    node = cluster.running()[0]
    client = MetadataClient(cluster.endpoints[node])
    try:
        values = [v for _, v in client.fetch_committed(0)[0]]
    finally:
        client.close()
    assert values == [b"one", b"zero", b"last"]


def test_client_fetch_sees_committed_records_only(tmp_path):
    from kraftwire.node.runtime.local_cluster import LocalCluster

    # A long fetch timeout keeps the lone leader from resigning while the test looks at it.
    settings = {
        "controller.quorum.fetch.timeout.ms": 8000,
        "controller.quorum.election.timeout.ms": 500,
    }
    cluster = LocalCluster(str(tmp_path / "c"), 3, settings=settings)
    cluster.format()
    try:
        cluster.start_all()
        leader, _ = cluster.wait_for_leader()
        client = MetadataClient(cluster.endpoints[leader], deadline_s=30)
        client.produce([b"committed"], -1)
        for node in cluster.ids:
            if node != leader:
                cluster.kill(node)
        assert (
            client.produce([b"not-committed"], 1) >= 0
        )  # taken by the leader, no quorum to commit
        values = [v for _, v in client.fetch_committed(0)[0]]
        client.close()
        assert values == [b"committed"]
        records = [v for _, _, v in data_records(cluster.partition_dir(leader))]
        assert b"not-committed" in records  # it is in the leader's log, just not visible
    finally:
        cluster.stop_all()
