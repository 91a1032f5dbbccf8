"""Snapshots across implementations: a kraftwire follower that fell behind a Kafka leader's log start
loads the leader's snapshot through FetchSnapshot, and a Kafka controller that fell behind a kraftwire
leader's log start loads kraftwire's snapshot the same way. Both kinds snapshot every second and keep
small segments (Kafka's names: metadata.log.max.snapshot.interval.ms, and metadata.log.segment.bytes
for kraftwire, Kafka's test-only internal.metadata.log.segment.bytes for Kafka), so their log starts
move within seconds."""

from __future__ import annotations

import re
import signal

import pytest

from quorum import MixedQuorum, wait_until
from test_tools import assert_same_batches

pytestmark = pytest.mark.timeout(300)

SNAPSHOTS = {"metadata.log.max.snapshot.interval.ms": 1000}
KAFKA_SNAPSHOTS = {
    "internal.metadata.log.segment.bytes": 4096,
    "metadata.log.segment.ms": 1000,
    "metadata.max.retention.ms": 1000,
    "internal.metadata.delete.delay.millis": 0,
}
KRAFTWIRE_SNAPSHOTS = {
    "metadata.log.segment.bytes": 4096,
    # This test makes kraftwire lead a Kafka metadata log on purpose; by default it would resign.
    "kraftwire.metadata.leadership": "keep",
}


def log_start(quorum: MixedQuorum, node: int) -> int:
    """The first offset of the node's oldest segment (its log start once older ones are deleted)."""
    segments = sorted(quorum.partition_dir(node).glob("*.log"))
    return int(segments[0].name.split(".")[0]) if segments else 0


def log_end(quorum: MixedQuorum, node: int) -> int:
    """The node's log end offset as the leader last reported it (-1 when unknown)."""
    answer = quorum.describe()
    if answer is None:
        return -1
    partition = answer.topics[0].partitions[0]
    for replica in list(partition.current_voters) + list(partition.observers):
        if replica.replica_id == node:
            return replica.log_end_offset
    return -1


def snapshots(quorum: MixedQuorum, node: int) -> dict[str, bytes]:
    """The node's snapshot files above offset 0 (the bootstrap checkpoint is not fetched)."""
    found = sorted(quorum.partition_dir(node).glob("*.checkpoint"))
    return {p.name: p.read_bytes() for p in found if not p.name.startswith("00000000000000000000-")}


def fall_behind_and_catch_up(quorum: MixedQuorum, behind: int, leader: int) -> str:
    """Stop ``behind``, wait until ``leader`` deleted the segments holding its log end, restart it,
    wait until it caught up; the name of the leader's snapshot it now holds, byte for byte."""
    end = log_end(quorum, behind)
    quorum.kill(behind, signal.SIGTERM)
    wait_until(lambda: log_start(quorum, leader) > end, 90, f"node {leader}'s log start past {end}")
    quorum.start(behind, *(["--capture", str(quorum.root / "again.pcapng")] if behind == 2 else []))
    wait_until(lambda: log_end(quorum, behind) >= log_start(quorum, leader), 90, "catch-up")
    fetched = set(snapshots(quorum, behind)) & set(snapshots(quorum, leader))
    assert fetched, f"node {behind} holds none of node {leader}'s snapshots"
    name = min(fetched)
    assert snapshots(quorum, behind)[name] == snapshots(quorum, leader)[name]
    return name


def test_snapshots_cross_between_kafka_and_kraftwire(tmp_path):
    quorum = MixedQuorum(
        tmp_path,
        {1: "kafka", 2: "kraftwire", 3: "kafka"},
        dynamic=True,
        extra=SNAPSHOTS,
        kafka_extra=KAFKA_SNAPSHOTS,
        kraftwire_extra=KRAFTWIRE_SNAPSHOTS,
    )
    quorum.format()
    try:
        quorum.start(1)
        quorum.start(3)
        kafka_leader = quorum.wait_for_leader(timeout_s=90, kind="kafka")[0]
        quorum.start(2, "--capture", str(tmp_path / "node2.pcapng"))
        wait_until(lambda: log_end(quorum, 2) > 0, 60, "kraftwire following")
        # A kraftwire follower behind a Kafka leader's log start loads the Kafka snapshot.
        fall_behind_and_catch_up(quorum, behind=2, leader=kafka_leader)

        # A Kafka controller behind a kraftwire leader's log start loads the kraftwire snapshot: the
        # other Kafka controller steps away, so the kraftwire node (whose log is the longer) leads.
        other = 3 if kafka_leader == 1 else 1
        end = log_end(quorum, other)
        quorum.kill(other, signal.SIGTERM)
        wait_until(lambda: log_start(quorum, 2) > end, 90, "kraftwire's log start past the lagger")
        quorum.kill(kafka_leader, signal.SIGTERM)
        # It keeps what it fetches: with the second-long retention Kafka deletes a snapshot as soon
        # as it has written a newer one of its own.
        quorum.node_extra[other] = {"metadata.max.retention.ms": 3_600_000}
        quorum.write_config(other)
        quorum.start(other)
        assert quorum.wait_for_leader(timeout_s=90)[0] == 2
        wait_until(lambda: log_end(quorum, other) >= log_start(quorum, 2), 90, "Kafka catch-up")
        # kraftwire, leading, soon writes a newer snapshot and deletes the one the Kafka controller
        # fetched: what it wrote is read back from its log line, the file from the Kafka side.
        kafka_log = quorum.output(other).read_text(errors="replace")
        loaded = re.findall(
            r"Fetching snapshot OffsetAndEpoch\[offset=(\d+), epoch=(\d+)\] from "
            r"Fetch response from leader 2",
            kafka_log,
        )
        assert loaded, "the Kafka controller fetched no snapshot from kraftwire"
        offset, epoch = (int(x) for x in loaded[-1])
        written = f"snapshot SnapshotId(end_offset={offset}, epoch={epoch})"
        assert written in quorum.output(2).read_text(errors="replace")
        name = f"{offset:020d}-{epoch:010d}.checkpoint"
        assert f"handleLoadSnapshot({name[:-len('.checkpoint')]})" in kafka_log
        kept = quorum.partition_dir(other) / name
        assert kept.exists() and assert_same_batches(kept) > 2  # header, data, footer
        assert "FATAL" not in kafka_log
    finally:
        quorum.stop_all()
