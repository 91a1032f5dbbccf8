"""Group commit: appends that queue up while the leader's loop is busy become one batch and one fsync,
with no linger, and each caller still learns the offset of its own records."""

from __future__ import annotations

import asyncio

import pytest

from runtime_settings import TEST_SETTINGS
from kraftwire.node.runtime import KRaftNode, load_config
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.storage import FileOps

pytestmark = pytest.mark.timeout(120)


class CountingFsyncs(FileOps):
    def __init__(self) -> None:
        self.fsyncs = 0

    def fsync(self, f) -> None:
        self.fsyncs += 1
        super().fsync(f)


async def concurrent_single_record_appends(directory: str, count: int):
    cluster = LocalCluster(
        directory, 1, settings={**TEST_SETTINGS, "controller.quorum.append.linger.ms": 0}
    )
    cluster.format()
    files = CountingFsyncs()
    node = KRaftNode(load_config(cluster.config_path(1)), file_ops=files)
    await node.start()
    try:
        while node.status().high_watermark is None:
            await asyncio.sleep(0.02)
        await node.append([b"warm-up"])
        start_offset, fsyncs_before = node.status().log_end_offset, files.fsyncs
        # Every submit is queued before the loop runs again, as requests arriving during an fsync are.
        submitted = [node.submit([f"r{i}".encode()]) for i in range(count)]
        offsets = await asyncio.gather(*(committed for _, committed in submitted))
        fsyncs = files.fsyncs - fsyncs_before
        batches = [b for b in node.storage.log.read(start_offset, 1 << 30) if not b.is_control]
        return start_offset, offsets, batches, fsyncs
    finally:
        await node.shutdown(timeout_ms=2000)


def test_queued_single_record_appends_share_one_batch_and_one_fsync(tmp_path):
    start, offsets, batches, fsyncs = asyncio.run(
        concurrent_single_record_appends(str(tmp_path), 100)
    )
    assert offsets == list(range(start, start + 100))  # each caller gets its own record's offset
    records = [r for b in batches for r in b.records]
    assert records == [f"r{i}".encode() for i in range(100)]  # in submission order, once each
    assert len(batches) == 1  # one core append for everything queued: one batch ...
    assert fsyncs <= 2  # ... and one log fsync (a second only if the loop woke up in between)


def test_an_empty_append_in_a_group_fails_alone(tmp_path):
    async def scenario():
        cluster = LocalCluster(str(tmp_path), 1, settings=TEST_SETTINGS)
        cluster.format()
        node = KRaftNode(load_config(cluster.config_path(1)))
        await node.start()
        try:
            while node.status().high_watermark is None:
                await asyncio.sleep(0.02)
            good_before, (_, empty), good_after = (
                node.submit([b"a"]),
                node.submit([]),
                node.submit([b"b"]),
            )
            with pytest.raises(ValueError, match="at least one record"):
                await empty
            return await good_before[1], await good_after[1]
        finally:
            await node.shutdown(timeout_ms=2000)

    first, second = asyncio.run(scenario())
    assert second == first + 1
