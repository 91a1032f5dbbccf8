"""``KRaftNode.read`` on three in-process nodes: a linearizable read on a random follower, started right
after the leader acknowledged a write, sees that write in the follower's own state; a stale read may
miss it (which is also what shows the freshness check can fail); reads fail cleanly on a stopped node
and with a typed timeout when no leader can confirm them."""

from __future__ import annotations

import asyncio
import random

import pytest

from runtime_settings import TEST_SETTINGS
from kraftwire.node.runtime import KRaftNode, NodeFailed, NotLeaderError, load_config
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.runtime.reads import ReadTimeoutError

pytestmark = pytest.mark.timeout(240)


class Register:
    """The application: the last value written, and the offset after the last batch it handled."""

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.applied = 0

    def handle_commit(self, batch) -> None:
        self.values.extend(batch.records)
        self.applied = batch.last_offset + 1

    def handle_load_snapshot(self, snapshot) -> None:
        self.values = list(snapshot.records)
        self.applied = snapshot.snapshot_id.end_offset

    def handle_leader_change(self, leader) -> None:
        pass


async def leader_of(nodes, timeout_s: float = 30.0) -> int:
    loop = asyncio.get_running_loop()
    stop = loop.time() + timeout_s
    while loop.time() < stop:
        for node_id, node in nodes.items():
            status = node.status()
            if status.role.value == "leader" and status.high_watermark is not None:
                return node_id
        await asyncio.sleep(0.05)
    raise TimeoutError("no leader")


async def acknowledged_write(nodes, value: bytes) -> int | None:
    """Append ``value`` on whichever node leads (following leader changes, which a loaded machine
    causes); its offset once acknowledged, or None if its outcome is unknown (it counts as unwritten).
    """
    for _ in range(100):
        try:
            return await nodes[await leader_of(nodes)].append([value])
        except NotLeaderError:
            await asyncio.sleep(0.05)  # refused: certainly not written
        except NodeFailed:
            return None  # lost to a leader change before it committed
    raise TimeoutError(f"could not write {value!r}")


async def write_then_read(nodes, registers, consistency: str, rounds: int, seed: int) -> list[str]:
    """Each round: an acknowledged write on the leader, then a read on a random follower; the follower's
    state must hold the write. Returns the rounds where it did not."""
    rng = random.Random(seed)
    leader = await leader_of(nodes)
    followers = [i for i in nodes if i != leader]
    misses = []
    for n in range(rounds):
        value = f"w{n}".encode()
        offset = await acknowledged_write(nodes, value)
        if offset is None:
            continue
        reader = rng.choice(followers)
        fresh = await nodes[reader].read(consistency)
        state = registers[reader]
        if value not in state.values:
            misses.append(f"round {n}: node {reader} read at {fresh} without offset {offset}")
        else:
            assert fresh > offset and state.applied >= fresh
    return misses


async def with_cluster(directory: str, body) -> None:
    cluster = LocalCluster(directory, 3, settings=TEST_SETTINGS)
    cluster.format()
    registers = {i: Register() for i in cluster.ids}
    nodes = {
        i: KRaftNode(load_config(cluster.config_path(i)), listener=registers[i])
        for i in cluster.ids
    }
    try:
        for node in nodes.values():
            await node.start()
        await body(nodes, registers)
    finally:
        for node in nodes.values():
            await node.shutdown(timeout_ms=2000)


def test_linearizable_follower_reads_see_every_acknowledged_write(tmp_path):
    async def body(nodes, registers):
        assert await write_then_read(nodes, registers, "linearizable", 150, seed=13) == []
        # The leader reads its own writes too, after its own quorum round.
        offset = await acknowledged_write(nodes, b"last")
        leader = await leader_of(nodes)
        fresh = await nodes[leader].read()
        assert (offset is None or fresh > offset) and registers[leader].applied >= fresh

    asyncio.run(with_cluster(str(tmp_path / "c"), body))


def test_stale_follower_reads_may_miss_acknowledged_writes(tmp_path):
    """The same check with ``"stale"``: a follower learns of a commit only on its next fetch, so some
    reads right after an acknowledgement miss it. This is the freshness check failing as it must."""

    async def body(nodes, registers):
        misses = await write_then_read(nodes, registers, "stale", 150, seed=13)
        assert misses, "stale reads never lagged: the freshness check could not tell"

    asyncio.run(with_cluster(str(tmp_path / "c"), body))


def test_reads_time_out_without_a_leader_and_fail_on_a_stopped_node(tmp_path):
    async def body(nodes, registers):
        leader = await leader_of(nodes)
        follower = next(i for i in nodes if i != leader)
        for other in [i for i in nodes if i != follower]:
            await nodes[other].abort()  # no quorum is left to confirm anything
        applied = await nodes[follower].read("stale")
        assert applied == registers[follower].applied  # a stale read still answers at once
        with pytest.raises(ReadTimeoutError) as timed_out:
            await nodes[follower].read("linearizable", timeout_ms=1500)
        assert "1500 ms" in str(timed_out.value) and timed_out.value.error_code == 7
        with pytest.raises(ValueError):
            await nodes[follower].read("eventual")
        await nodes[follower].abort()
        with pytest.raises(NodeFailed):
            await nodes[follower].read()

    asyncio.run(with_cluster(str(tmp_path / "c"), body))


def test_concurrent_reads_see_every_write_acknowledged_before_they_began(tmp_path):
    """Readers on every node race a writer: reads share confirmations (one in flight per node), yet
    each read's offset covers every write acknowledged before it began (not only those acknowledged
    before its group was sent), and the node's state holds them."""

    async def body(nodes, registers):
        acknowledged: list[tuple[int, bytes]] = []
        misses: list[str] = []
        done = asyncio.Event()

        async def writer() -> None:
            for n in range(150):
                value = f"c{n}".encode()
                offset = await acknowledged_write(nodes, value)
                if offset is not None:
                    acknowledged.append((offset, value))
            done.set()

        async def reader(node_id: int) -> None:
            while not done.is_set():
                before = list(acknowledged)
                fresh = await nodes[node_id].read("linearizable")
                seen = set(registers[node_id].values)
                misses.extend(
                    f"node {node_id}: offset {offset} {value!r} not below read offset {fresh}"
                    for offset, value in before
                    if offset >= fresh or value not in seen
                )

        readers = [reader(i) for i in nodes for _ in range(4)]
        await asyncio.gather(writer(), *readers)
        assert misses == []

    asyncio.run(with_cluster(str(tmp_path / "c"), body))
