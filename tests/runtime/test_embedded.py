"""The embedding API: in-process nodes, a listener, append resolving on commit, NotLeaderError naming
the leader, snapshots, restart from a snapshot, clean shutdown; and the replicated_kv example."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_settings import TEST_SETTINGS
from kraftwire.node.runtime import (
    KRaftNode,
    NodeFailed,
    NotLeaderError,
    config_from_properties,
    load_config,
)
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.storage import FileOps

pytestmark = pytest.mark.timeout(180)
ROOT = Path(__file__).resolve().parents[2]


class Recorder:
    def __init__(self) -> None:
        self.records: list[bytes] = []
        self.batches: list[tuple[int, int]] = []
        self.snapshots: list = []
        self.leaders: list = []

    def handle_commit(self, batch) -> None:
        self.batches.append((batch.base_offset, batch.last_offset))
        self.records.extend(batch.records)

    def handle_load_snapshot(self, snapshot) -> None:
        self.snapshots.append(snapshot)
        self.records = list(snapshot.records)

    def handle_leader_change(self, leader) -> None:
        self.leaders.append(leader)


async def leader_of(nodes, timeout_s=30.0) -> int:
    loop = asyncio.get_running_loop()
    stop = loop.time() + timeout_s
    while loop.time() < stop:
        for node_id, node in nodes.items():
            status = node.status()
            if status.role.value == "leader" and status.high_watermark is not None:
                return node_id
        await asyncio.sleep(0.05)
    raise TimeoutError("no leader")


async def scenario(directory: str) -> None:
    cluster = LocalCluster(directory, 3, settings=TEST_SETTINGS)
    cluster.format()
    listeners = {i: Recorder() for i in cluster.ids}
    nodes = {
        i: KRaftNode(load_config(cluster.config_path(i)), listener=listeners[i])
        for i in cluster.ids
    }
    try:
        for node in nodes.values():
            await node.start()
        leader = await leader_of(nodes)
        follower = next(i for i in nodes if i != leader)
        with pytest.raises(NotLeaderError) as refused:
            await nodes[follower].append([b"nope"])
        assert refused.value.leader.leader_id == leader
        assert refused.value.endpoint == cluster.endpoints[leader]

        offsets = [await nodes[leader].append([f"r{i}".encode()]) for i in range(5)]
        assert offsets == sorted(offsets) and len(set(offsets)) == 5
        assert listeners[leader].records == [
            f"r{i}".encode() for i in range(5)
        ]  # delivered before resolving
        assert any(change.leader_id == leader for change in listeners[leader].leaders)

        end = offsets[-1] + 1
        snapshot = await nodes[leader].create_snapshot(end, [b"state:r0-r4"])
        assert snapshot.end_offset == end
        assert os.path.exists(
            os.path.join(
                cluster.partition_dir(leader), f"{end:020d}-{snapshot.epoch:010d}.checkpoint"
            )
        )

        await nodes[leader].shutdown()  # resigns: the others elect quickly
        del nodes[leader]
        new_leader = await leader_of(nodes)
        assert new_leader != leader
        await nodes[new_leader].append([b"after"])

        restarted = Recorder()
        nodes[leader] = KRaftNode(load_config(cluster.config_path(leader)), listener=restarted)
        await nodes[leader].start()
        for _ in range(400):
            if restarted.records[-1:] == [b"after"]:
                break
            await asyncio.sleep(0.05)
        # The restarted node starts from its snapshot, then the batches committed after it.
        assert restarted.snapshots and restarted.snapshots[0].records == (b"state:r0-r4",)
        assert restarted.records == [b"state:r0-r4", b"after"]
    finally:
        for node in nodes.values():
            await node.shutdown(timeout_ms=2000)


def test_embedding_api(tmp_path):
    asyncio.run(scenario(str(tmp_path)))


def test_a_node_not_yet_started_says_so_instead_of_crashing(tmp_path):
    """Its core exists only from start(): asking before is a NodeFailed, not an AttributeError."""
    node = KRaftNode(
        config_from_properties(
            {
                "node.id": "1",
                "process.roles": "controller",
                "listeners": "CONTROLLER://127.0.0.1:19093",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.bootstrap.servers": "127.0.0.1:19093",
                "metadata.log.dir": str(tmp_path),
            }
        )
    )
    for ask in (node.status, node.leader_endpoint, node.running_storage):
        with pytest.raises(NodeFailed, match="not been started|not running"):
            ask()


def test_replicated_kv_example_survives_leader_kill(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "replicated_kv.py"), "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agree on 20 keys: True" in result.stdout
    assert "followers read every write right after its acknowledgement: True" in result.stdout
    assert len((ROOT / "examples" / "replicated_kv.py").read_text().splitlines()) < 150


class FullDisk(FileOps):
    """File operations whose writes start failing with ENOSPC after ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget

    def write(self, f, data: bytes) -> None:
        if len(data) > self.budget:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.budget -= len(data)
        super().write(f, data)


async def full_disk_scenario(directory: str) -> tuple[list[int], str]:
    from kraftwire.node.runtime import NodeFailed

    cluster = LocalCluster(directory, 1, settings=TEST_SETTINGS)
    cluster.format()
    node = KRaftNode(load_config(cluster.config_path(1)), file_ops=FullDisk(20_000))
    await node.start()
    acknowledged = []
    try:
        for i in range(1000):
            try:
                acknowledged.append(
                    await asyncio.wait_for(node.append([f"rec-{i:04d}".encode() * 4]), 20)
                )
            except (NodeFailed, NotLeaderError):
                break
        await asyncio.wait_for(node.wait_stopped(), 20)
        return acknowledged, node.failure or ""
    finally:
        await node.shutdown(timeout_ms=1000)


def test_full_disk_stops_the_node_cleanly_and_keeps_what_was_acknowledged(tmp_path):
    acknowledged, failure = asyncio.run(full_disk_scenario(str(tmp_path)))
    assert acknowledged and "No space left on device" in failure
    # Restart on a healthy disk: every acknowledged record is there, in order, nothing torn.
    from kraftwire.node.storage import open_directory

    storage = open_directory(str(tmp_path / "node1"))
    try:
        assert storage.repairs == []
        values = [r for b in storage.log.batches() if not b.is_control for r in b.records]
    finally:
        storage.close()
    assert values[: len(acknowledged)] == [
        f"rec-{i:04d}".encode() * 4 for i in range(len(acknowledged))
    ]


async def broken_loop_scenario(directory: str) -> tuple[str | None, bool]:
    cluster = LocalCluster(directory, 1, settings=TEST_SETTINGS)
    cluster.format()
    node = KRaftNode(load_config(cluster.config_path(1)))
    await node.start()
    await leader_of({1: node})

    def defect(*args, **kwargs):
        raise RuntimeError("a defect inside the node")

    node._snapshots.maybe_snapshot = defect  # the step the loop runs after every Ready
    node._wakeup.set()
    for _ in range(100):
        if node.failure is not None:
            break
        await asyncio.sleep(0.05)
    with pytest.raises(NodeFailed):
        await node.append([b"after"])
    await node.shutdown()
    return node.failure, node._stopped.is_set()


def test_an_unexpected_error_in_the_loop_stops_the_node_instead_of_leaving_it_deaf(tmp_path):
    """A defect in the node's own loop stops the node with the reason (the process then exits), where
    it used to leave a node that accepted connections and answered no request."""
    failure, stopped = asyncio.run(broken_loop_scenario(str(tmp_path / "c")))
    assert stopped and failure is not None and "RuntimeError: a defect inside the node" in failure
