"""Voter changes on real processes with writes running: add a 4th controller, remove a follower, remove
the leader itself; nothing acknowledged is lost."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from typing import Iterator

import pytest

from dumps import data_records
from kraftwire.node.runtime.local_cluster import LocalCluster
from runtime_settings import TEST_SETTINGS
from kraftwire.node.runtime.admin import describe_quorum
from kraftwire.node.runtime.client import ClientError
from kraftwire.node.runtime.producer import MetadataClient, ProduceRefused
from kraftwire.node.storage.layout import read_meta_properties, uuid_to_str

pytestmark = pytest.mark.timeout(300)


def quorum(cluster, node=None) -> tuple[int, list[int]]:
    """(leader id, voter ids) from a running node."""
    for i in [node] if node else cluster.running():
        try:
            partition = (
                describe_quorum(cluster.endpoints[i].host, cluster.endpoints[i].port)[1]
                .topics[0]
                .partitions[0]
            )
            return partition.leader_id, sorted(v.replica_id for v in partition.current_voters)
        except ClientError:
            continue
    raise ClientError("nobody answered")


def quorum_cli(cluster, *args):
    node = cluster.running()[0]
    bootstrap = f"127.0.0.1:{cluster.endpoints[node].port}"
    return subprocess.run(
        [sys.executable, "-m", "kraftwire", "quorum", *args, "--bootstrap-controller", bootstrap],
        capture_output=True,
        text=True,
        timeout=120,
    )


def wait_voters(cluster, expected, timeout_s=60):
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        try:
            leader, voters = quorum(cluster)
            if voters == expected and leader in cluster.running():
                return leader
        except ClientError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"voters never became {expected}")


@pytest.mark.serial  # its writers must keep up with the voter changes: flaky beside other tests
def test_add_and_remove_voters_with_writes_running(tmp_path):
    # AddRaftVoter waits request.timeout.ms for the new voter's ApiVersions answer: give a loaded
    # machine more than the 1 s the other tests use.
    cluster = LocalCluster(
        str(tmp_path / "c"),
        3,
        settings={**TEST_SETTINGS, "controller.quorum.request.timeout.ms": 5000},
    )
    cluster.format()
    try:
        _add_and_remove(cluster)
    finally:
        cluster.stop_all(graceful_s=5)


def _add_and_remove(cluster):
    cluster.start_all()
    cluster.wait_for_leader()
    with _writes_running(cluster) as acknowledged:
        new = cluster.add_node()
        cluster.start(new)
        time.sleep(2)  # let it fetch as an observer
        added = quorum_cli(cluster, "add-controller", "--config", cluster.config_path(new))
        assert added.returncode == 0, added.stderr
        assert added.stdout.startswith(f"Added controller {new} with directory id ")
        wait_voters(cluster, [1, 2, 3, 4])

        leader, _ = quorum(cluster)
        follower = next(i for i in (1, 2, 3) if i != leader)
        removed, directory = _remove_controller(cluster, follower)
        assert (
            removed.stdout.strip()
            == f"Removed  KRaft controller {follower} with directory id {directory}"  # Kafka's two spaces
        )
        remaining = sorted({1, 2, 3, 4} - {follower})
        wait_voters(cluster, remaining)

        _remove_controller(cluster, leader)
        survivors = sorted(set(remaining) - {leader})
        new_leader = wait_voters(cluster, survivors)
        assert new_leader != leader
        time.sleep(1)
    _every_survivor_has_every_acknowledged_write(cluster, new_leader, survivors, acknowledged)


@contextlib.contextmanager
def _writes_running(cluster) -> Iterator[list[bytes]]:
    """Produce acks=-1 writes, one at a time, for as long as the block runs; yields the list of the
    acknowledged ones (the list grows while the block runs)."""
    acknowledged, stop = [], threading.Event()

    def write():
        n, client = 0, None
        while not stop.is_set():
            try:
                client = client or MetadataClient(
                    cluster.endpoints[cluster.running()[0]], deadline_s=5
                )
                client.produce([f"w{n:06d}".encode()], -1, timeout_ms=5000)
                acknowledged.append(f"w{n:06d}".encode())
            except (ClientError, ProduceRefused, OSError):
                client = None
            n += 1

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield acknowledged
    finally:
        stop.set()
        writer.join(timeout=30)


def _remove_controller(cluster, node_id: int) -> tuple[subprocess.CompletedProcess, str]:
    """``kraftwire quorum remove-controller`` of ``node_id``: (the finished command, its directory id)."""
    directory = uuid_to_str(read_meta_properties(cluster.log_dir(node_id)).directory_id)
    removed = quorum_cli(
        cluster,
        "remove-controller",
        "--controller-id",
        str(node_id),
        "--controller-directory-id",
        directory,
    )
    assert removed.returncode == 0, removed.stderr
    return removed, directory


def _every_survivor_has_every_acknowledged_write(cluster, leader, survivors, acknowledged) -> None:
    """A marker written last reaches every survivor's log; before it, each holds every acknowledged
    write in order."""
    marker_client = MetadataClient(cluster.endpoints[leader], deadline_s=30)
    marker_client.produce([b"end"], -1)
    marker_client.close()
    stop_at = time.monotonic() + 60
    while time.monotonic() < stop_at:
        logs = {i: [v for _, _, v in data_records(cluster.partition_dir(i))] for i in survivors}
        if all(values[-1:] == [b"end"] for values in logs.values()):
            break
        time.sleep(0.5)
    assert len(acknowledged) > 10
    for i, values in logs.items():
        assert values[-1:] == [b"end"], f"node {i} did not catch up"
        assert [
            v for v in values if v in set(acknowledged)
        ] == acknowledged, f"node {i} lost or reordered writes"
