"""FetchSnapshot and UpdateRaftVoter between real nodes: a voter restarted behind the leader's log start
catches up by downloading the leader's snapshot; a voter restarted on a new port tells the leader, whose
voter set (DescribeQuorum's nodes) then records the new endpoint."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from dumps import data_records
from runtime_settings import TEST_SETTINGS
from kraftwire.node.core.api import Role
from kraftwire.node.runtime import KRaftNode, load_config
from kraftwire.node.runtime.admin import describe_quorum
from kraftwire.node.runtime.client import ClientError
from kraftwire.node.runtime.local_cluster import LocalCluster, free_ports

pytestmark = pytest.mark.timeout(240)


def endpoint_in_voter_set(cluster, node_id: int) -> tuple[str, int] | None:
    """(host, port) of ``node_id`` in the leader's DescribeQuorum ``nodes``, None if nobody answers."""
    for i in cluster.running():
        try:
            response = describe_quorum(cluster.endpoints[i].host, cluster.endpoints[i].port)[1]
        except (ClientError, OSError):
            continue
        for node in response.nodes:
            if node.node_id == node_id and node.listeners:
                return node.listeners[0].host, node.listeners[0].port
    return None


def test_voter_restarted_on_a_new_port_updates_the_voter_set(cluster):
    cluster.start_all()
    leader, _ = cluster.wait_for_leader()
    mover = next(i for i in cluster.ids if i != leader)
    old = cluster.endpoints[mover]
    assert endpoint_in_voter_set(cluster, mover) == (old.host, old.port)
    cluster.kill(mover)
    new_port = free_ports(1)[0]
    cluster.move(mover, new_port)
    cluster.start(mover)
    stop = time.monotonic() + 60
    seen = None
    while time.monotonic() < stop:
        seen = endpoint_in_voter_set(cluster, mover)
        if seen == (old.host, new_port):
            break
        time.sleep(0.2)
    assert seen == (old.host, new_port)  # the leader took the node's UpdateRaftVoter
    # and the new endpoint is the one the quorum uses: the moved node serves DescribeQuorum there
    assert describe_quorum(old.host, new_port)[1].nodes


async def leader_of(nodes: dict[int, KRaftNode], timeout_s: float = 60) -> int:
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        for i, node in nodes.items():
            status = node.status()
            if status.role is Role.LEADER and status.high_watermark is not None:
                return i
        await asyncio.sleep(0.05)
    raise TimeoutError("no leader")


async def snapshot_catch_up(cluster: LocalCluster, late: int) -> tuple[int, int, list[bytes]]:
    """Nodes other than ``late`` run in this process; ``late`` is a ``kraftwire node start`` process.
    Returns (snapshot end offset, the late node's log start offset, its data records)."""
    nodes = {i: KRaftNode(load_config(cluster.config_path(i))) for i in cluster.ids if i != late}
    for node in nodes.values():
        await node.start()
    try:
        leader = await leader_of(nodes)
        for i in range(20):
            await nodes[leader].append([f"before-{i}".encode()])
        end = nodes[leader].status().high_watermark
        snapshot = await nodes[leader].create_snapshot(end, [b"state-of-20"])
        assert snapshot is not None and nodes[leader].status().log_start_offset == end
        await nodes[leader].append([b"after-snapshot"])

        cluster.start(late)  # its log ends at 0, below the leader's log start: FetchSnapshot
        checkpoint = os.path.join(
            cluster.partition_dir(late), f"{end:020d}-{snapshot.epoch:010d}.checkpoint"
        )
        stop = time.monotonic() + 60
        while time.monotonic() < stop:
            progress = {p.key.id: p.log_end_offset for p in nodes[leader].status().voter_progress}
            if (
                os.path.exists(checkpoint)
                and progress.get(late) == nodes[leader].status().log_end_offset
            ):
                break
            await asyncio.sleep(0.1)
        assert os.path.exists(checkpoint), "the late node never downloaded the snapshot"
        cluster.stop_all()
        return end, snapshot.epoch, [v for _, _, v in data_records(cluster.partition_dir(late))]
    finally:
        for node in nodes.values():
            await node.shutdown(timeout_ms=2000)


def test_node_behind_the_leaders_log_start_catches_up_by_fetch_snapshot(tmp_path):
    cluster = LocalCluster(str(tmp_path / "cluster"), 3, settings=TEST_SETTINGS)
    cluster.format()
    try:
        end, _epoch, records = asyncio.run(snapshot_catch_up(cluster, late=3))
    finally:
        cluster.stop_all(graceful_s=5)
    # The late node holds the snapshot (not the 20 records before it) and the log after it.
    assert records == [b"after-snapshot"]
    assert end >= 20
