"""Snapshots of nodes without an application (``metadata.log.max.record.bytes.between.snapshots``), with
real processes: the leader writes them under Kafka's names and deletes the segments below, and a
follower that was stopped meanwhile catches up through FetchSnapshot with every record there."""

from __future__ import annotations

import os
import re
import time

import pytest

from kraftwire.node.runtime.producer import MetadataClient
from kraftwire.node.runtime.snapshotting import snapshot_records
from kraftwire.node.storage import open_directory
from runtime_settings import TEST_SETTINGS, formatted_cluster

pytestmark = pytest.mark.timeout(180)

SETTINGS = {
    **TEST_SETTINGS,
    "metadata.log.max.record.bytes.between.snapshots": 2000,
    "metadata.log.segment.bytes": 1024,
}
CHECKPOINT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
SEGMENT = re.compile(r"(\d{20})\.log")


def _files(directory: str) -> tuple[list[tuple[int, int]], list[int]]:
    names = os.listdir(directory)
    snapshots = sorted((int(m[1]), int(m[2])) for m in map(CHECKPOINT.fullmatch, names) if m)
    segments = sorted(int(m[1]) for m in map(SEGMENT.fullmatch, names) if m)
    return snapshots, segments


def _wait(predicate, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _data_records(log_dir: str) -> list[bytes]:
    storage = open_directory(log_dir)
    try:
        records = snapshot_records(storage, storage.log.end_offset())
        assert records is not None
        return records
    finally:
        storage.close()


def test_a_stopped_follower_catches_up_from_the_leaders_snapshot(tmp_path) -> None:
    values = [b"value-%04d-" % i + b"x" * 20 for i in range(300)]
    with formatted_cluster(tmp_path / "c", settings=SETTINGS) as cluster:
        cluster.start_all()
        leader, _ = cluster.wait_for_leader()
        lagging = next(i for i in cluster.ids if i != leader)
        cluster.kill(lagging)
        stopped_end = _log_end(cluster.log_dir(lagging))
        client = MetadataClient(cluster.endpoints[leader])
        try:
            for value in values:
                client.produce([value])
        finally:
            client.close()
        leader_dir = cluster.partition_dir(leader)
        snapshots, segments = _files(leader_dir)
        assert [s for s in snapshots if s[0] > 0], "the leader wrote no snapshot"
        assert segments[0] > stopped_end, "the leader kept the segments the follower needs"
        cluster.start(lagging)
        follower_dir = cluster.partition_dir(lagging)
        _wait(
            lambda: any(s[0] > stopped_end for s in _files(follower_dir)[0]),
            "the follower to load a snapshot",
        )
        _wait(lambda: _end_of(cluster, lagging) == _end_of(cluster, leader), "catch-up")
        cluster.stop_all(graceful_s=5)
    assert _data_records(cluster.log_dir(lagging)) == values
    assert _data_records(cluster.log_dir(leader)) == values


def _log_end(log_dir: str) -> int:
    storage = open_directory(log_dir)
    try:
        return storage.log.end_offset()
    finally:
        storage.close()


def _end_of(cluster, node_id: int) -> int | None:
    described = cluster.describe()
    if described is None:
        return None
    partition = described[1].topics[0].partitions[0]
    for replica in [*partition.current_voters, *partition.observers]:
        if replica.replica_id == node_id:
            return replica.log_end_offset
    return None
