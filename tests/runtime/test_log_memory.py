"""A node holds its log once: the encoded batches (what it serves and what is on disk), not a second
copy of every record decoded (bench/raft.py's memory goal: a node at most a quarter of a Kafka
controller's resident memory; a follower's decoded records were as big as the log itself).

Three in-process nodes replicate a known volume of distinct 256-byte records; on every node the
bytes of all objects reachable from its log must stay within a bound tied to the log's encoded size,
and the records read back from it must be the ones appended. The same holds for a log opened from
its files (a restart).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from runtime_settings import TEST_SETTINGS
from kraftwire.node.runtime import KRaftNode, load_config
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.storage import open_directory

# The bench's measure of what a log holds, so the test and bench/raft_memory.py count alike.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _raft_memory_probe import reachable_bytes  # noqa: E402

pytestmark = pytest.mark.timeout(120)

CALLS, PER_CALL, SIZE = 20, 100, 256
# Per batch a node holds a few small objects besides its bytes (the batch, its index entries):
# a few hundred bytes against a batch of 100 records of 256 bytes (~26 KB), hence 10% in all.
# Each record decoded as well would take about as much again as its encoded bytes.
BOUND = 1.10


def held_and_encoded(log: Any) -> tuple[int, int]:
    encoded = sum(batch.size_in_bytes() for batch in log.batches())
    return reachable_bytes(log), encoded


def records_in(log: Any) -> list[bytes]:
    return [r for b in log.read(log.start_offset(), 1 << 30) if not b.is_control for r in b.records]


async def replicate(directory: str, records: list[bytes]) -> dict[int, tuple[int, int, list]]:
    cluster = LocalCluster(directory, 3, settings=TEST_SETTINGS)
    cluster.format()
    nodes = {i: KRaftNode(load_config(cluster.config_path(i))) for i in cluster.ids}
    try:
        for node in nodes.values():
            await node.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        leader = None
        while leader is None and loop.time() < deadline:
            await asyncio.sleep(0.05)
            leader = next(
                (
                    i
                    for i, n in nodes.items()
                    if n.status().role.value == "leader" and n.status().high_watermark is not None
                ),
                None,
            )
        assert leader is not None, "no leader in 60 s"
        for call in range(CALLS):
            await nodes[leader].append(records[call * PER_CALL : (call + 1) * PER_CALL])
        end = nodes[leader].status().log_end_offset
        while loop.time() < deadline and any(
            (n.status().high_watermark or 0) < end for n in nodes.values()
        ):
            await asyncio.sleep(0.05)
        found = {}
        for node_id, node in nodes.items():
            log = node.running_storage().log
            held, encoded = held_and_encoded(log)
            found[node_id] = (held, encoded, records_in(log))
        return found
    finally:
        for node in nodes.values():
            await node.shutdown(timeout_ms=2000)


def distinct_records() -> list[bytes]:
    return [(b"%06d" % i) * (SIZE // 6) + b"x" * (SIZE % 6) for i in range(CALLS * PER_CALL)]


def test_every_node_holds_its_log_once_encoded(tmp_path):
    records = distinct_records()
    found = asyncio.run(replicate(str(tmp_path), records))
    for node_id, (held, encoded, read_back) in found.items():
        assert read_back == records, f"node {node_id} reads back other records"
        assert encoded > len(records) * SIZE
        assert held <= BOUND * encoded, (
            f"node {node_id} holds {held} bytes for a log of {encoded} encoded bytes "
            f"({held / encoded:.2f}x, bound {BOUND}x)"
        )


def test_a_log_opened_from_its_files_holds_it_once(tmp_path):
    records = distinct_records()
    asyncio.run(replicate(str(tmp_path), records))
    storage = open_directory(str(tmp_path / "node1"))  # LocalCluster's folder for node 1
    try:
        held, encoded = held_and_encoded(storage.log)
        assert records_in(storage.log) == records
        assert held <= BOUND * encoded, f"{held} bytes held for {encoded} encoded"
    finally:
        storage.close()
