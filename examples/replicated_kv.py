"""A replicated key-value store on three in-process KRaft nodes that survives losing its leader.

    .venv/bin/python examples/replicated_kv.py [--dir DIR]

Each node runs the same state machine (a dict) fed by committed batches; writes go to the leader with
``await node.append``, which resolves once the quorum has committed them. Reads are served by the
followers from their own dict after ``await node.read("linearizable")``, so each sees every write
acknowledged before it. Halfway through, the leader is stopped abruptly (no resignation); the other two
elect a new leader and carry on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile

from kraftwire.node.core.api import CommittedBatch, LeaderAndEpoch, SnapshotLoaded
from kraftwire.node.runtime import KRaftNode, NotLeaderError, load_config
from kraftwire.node.runtime.local_cluster import LocalCluster


class KeyValueStore:
    """The application's state machine: applies committed ``{"key": k, "value": v}`` records."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.applied = 0  # offset after the last applied record

    def handle_commit(self, batch: CommittedBatch) -> None:
        for record in batch.records:
            entry = json.loads(record)
            self.data[entry["key"]] = entry["value"]
        self.applied = batch.last_offset + 1

    def handle_load_snapshot(self, snapshot: SnapshotLoaded) -> None:
        self.data = json.loads(snapshot.records[0]) if snapshot.records else {}
        self.applied = snapshot.snapshot_id.end_offset

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        pass


async def wait_for_leader(nodes: dict[int, KRaftNode], timeout_s: float = 30.0) -> int:
    loop = asyncio.get_running_loop()
    stop = loop.time() + timeout_s
    while loop.time() < stop:
        for node_id, node in nodes.items():
            if node.status().role.value == "leader" and node.status().high_watermark is not None:
                return node_id
        await asyncio.sleep(0.05)
    raise TimeoutError("no leader elected")


async def put(nodes: dict[int, KRaftNode], key: str, value: str) -> int:
    """Write through whichever node leads, following NotLeaderError to the leader it names."""
    target = await wait_for_leader(nodes)
    for _ in range(50):
        try:
            return await nodes[target].append([json.dumps({"key": key, "value": value}).encode()])
        except NotLeaderError as exc:
            leader = exc.leader.leader_id
            target = leader if leader in nodes else await wait_for_leader(nodes)
            await asyncio.sleep(0.05)
    raise RuntimeError(f"could not write {key}")


async def get(node: KRaftNode, store: KeyValueStore, key: str) -> str | None:
    """A linearizable read served by any node, follower or leader, from its own state."""
    await node.read("linearizable")
    return store.data.get(key)


async def put_and_read_everywhere(
    nodes: dict[int, KRaftNode], stores: dict[int, KeyValueStore], key: str, value: str
) -> bool:
    """Write, then read the key back on every follower right after the write is acknowledged."""
    await put(nodes, key, value)
    leader = await wait_for_leader(nodes)
    followers = [i for i in nodes if i != leader]
    return all([await get(nodes[i], stores[i], key) == value for i in followers])


async def main(directory: str) -> int:
    cluster = LocalCluster(
        directory,
        3,
        settings={
            "controller.quorum.election.timeout.ms": 500,
            "controller.quorum.fetch.timeout.ms": 1000,
        },
    )
    cluster.format()
    stores = {i: KeyValueStore() for i in cluster.ids}
    nodes = {
        i: KRaftNode(load_config(cluster.config_path(i)), listener=stores[i]) for i in cluster.ids
    }
    for node in nodes.values():
        await node.start()
    try:
        first = await wait_for_leader(nodes)
        print(f"leader is node {first}")
        fresh = [await put_and_read_everywhere(nodes, stores, f"k{i}", f"v{i}") for i in range(10)]
        end = max(s.applied for s in stores.values())
        await nodes[first].create_snapshot(end, [json.dumps(stores[first].data).encode()])
        print(f"wrote k0..k9, snapshot at offset {end}; stopping leader {first} abruptly")
        await nodes.pop(first).abort()
        second = await wait_for_leader(nodes)
        print(f"new leader is node {second}")
        for i in range(10, 20):
            fresh.append(await put_and_read_everywhere(nodes, stores, f"k{i}", f"v{i}"))
        print(f"followers read every write right after its acknowledgement: {all(fresh)}")
        for i in nodes:  # a linearizable read brings each survivor's state up to date
            await nodes[i].read("linearizable")
        states = [stores[i].data for i in nodes]
        expected = {f"k{i}": f"v{i}" for i in range(20)}
        ok = all(state == expected for state in states)
        print(f"survivors {sorted(nodes)} agree on {len(expected)} keys: {ok}")
        return 0 if ok and all(fresh) else 1
    finally:
        for node in nodes.values():
            await node.shutdown(timeout_ms=2000)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir", help="where the nodes keep their files (default: a temporary directory)"
    )
    args = parser.parse_args()
    if args.dir:
        raise SystemExit(asyncio.run(main(args.dir)))
    with tempfile.TemporaryDirectory() as tmp:
        raise SystemExit(asyncio.run(main(tmp)))
