"""The log fsync runs on the node's disk thread: while it is under way the node keeps answering requests
on its sockets, and nothing waiting for that fsync (an append's acknowledgement) is released early.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from runtime_settings import TEST_SETTINGS
from kraftwire.node.runtime import KRaftNode, load_config
from kraftwire.node.runtime.client import KafkaConnection
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.storage import FileOps

pytestmark = pytest.mark.timeout(120)


class GatedFsync(FileOps):
    """fsync blocks while the gate is closed (at most ``hold_s``), as a slow disk would."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self.gate = threading.Event()
        self.gate.set()
        self.held = threading.Event()
        self.released = threading.Event()

    def fsync(self, f) -> None:
        if not self.gate.is_set():
            self.held.set()
            self.gate.wait(self.hold_s)
            self.released.set()
        super().fsync(f)


async def served_during_fsync(directory: str) -> tuple[bool, bool, int]:
    cluster = LocalCluster(directory, 1, settings=TEST_SETTINGS)
    cluster.format()
    disk = GatedFsync(hold_s=10)
    node = KRaftNode(load_config(cluster.config_path(1)), file_ops=disk)
    await node.start()
    try:
        while node.status().high_watermark is None:
            await asyncio.sleep(0.02)
        disk.gate.clear()
        appended, committed = node.submit([b"slow-disk"])
        while not disk.held.is_set():
            await asyncio.sleep(0.01)
        endpoint = cluster.endpoints[1]
        # A new connection's ApiVersions exchange, answered while the fsync is still held.
        connection = await asyncio.to_thread(KafkaConnection, endpoint.host, endpoint.port, 5)
        connection.close()
        answered_during_fsync = not disk.released.is_set()
        acked_before_fsync = appended.done() or committed.done()
        disk.gate.set()
        return answered_during_fsync, acked_before_fsync, await committed
    finally:
        disk.gate.set()
        await node.shutdown(timeout_ms=2000)


def test_node_answers_requests_while_its_log_fsync_is_under_way(tmp_path):
    answered_during_fsync, acked_before_fsync, offset = asyncio.run(
        served_during_fsync(str(tmp_path))
    )
    assert answered_during_fsync
    assert not acked_before_fsync  # the append is acknowledged only once the fsync returned
    assert offset >= 0
