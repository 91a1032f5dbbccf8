"""KRaftNode.schedule_append: an append without a future, as Kafka's ``RaftClient.prepareAppend``:
the offset of the last record at once, the commit learnt from the listener. Taken even while the
leader's log fsync runs (it goes into the accumulator, not through the loop), never committed
before that fsync and the next; in call order with submit()."""

from __future__ import annotations

import asyncio

import pytest

from runtime_settings import TEST_SETTINGS
from test_disk_thread import GatedFsync
from test_embedded import Recorder, leader_of
from kraftwire.node.runtime import KRaftNode, load_config
from kraftwire.node.runtime.errors import NodeFailed, NotLeaderError
from kraftwire.node.runtime.local_cluster import LocalCluster

pytestmark = pytest.mark.timeout(120)


async def _committed_to(recorder: Recorder, offset: int, timeout_s: float = 10) -> None:
    async def reached() -> None:
        while not recorder.batches or recorder.batches[-1][1] < offset:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(reached(), timeout_s)


async def _scenario(directory: str) -> dict:
    cluster = LocalCluster(directory, 1, settings=TEST_SETTINGS)
    cluster.format()
    disk, recorder = GatedFsync(hold_s=10), Recorder()
    node = KRaftNode(load_config(cluster.config_path(1)), listener=recorder, file_ops=disk)
    await node.start()
    seen: dict = {}
    try:
        await leader_of({1: node})
        epoch = node.status().epoch
        recorder.batches.clear()
        recorder.records.clear()
        # in call order with submit(): one log, offsets as called
        first = node.schedule_append([b"a", b"b"])
        _, middle = node.submit([b"c"])
        last = node.schedule_append([b"d"], epoch)
        seen["offsets"] = (first, await middle, last)
        await _committed_to(recorder, last)
        seen["records"] = list(recorder.records)
        # while the log's fsync is held: taken at once, committed only after it
        disk.gate.clear()
        _, slow = node.submit([b"slow"])
        while not disk.held.is_set():
            await asyncio.sleep(0.01)
        during = [node.schedule_append([b"during %d" % i]) for i in range(5)]
        await asyncio.sleep(0.2)
        seen["committed_during_fsync"] = recorder.batches[-1][1] >= during[0] or slow.done()
        disk.gate.set()
        await _committed_to(recorder, during[-1])
        seen["during"] = (await slow, during)
        seen["tail"] = recorder.records[-6:]
        with pytest.raises(NotLeaderError):
            node.schedule_append([b"x"], epoch + 1)
        with pytest.raises(ValueError, match="at least one record"):
            node.schedule_append([])
    finally:
        disk.gate.set()
        await node.shutdown(timeout_ms=2000)
    with pytest.raises(NodeFailed):
        node.schedule_append([b"after"])
    return seen


def test_schedule_append_returns_offsets_at_once_and_commits_through_the_listener(tmp_path):
    seen = asyncio.run(_scenario(str(tmp_path)))
    first, middle, last = seen["offsets"]
    assert (middle, last) == (first + 1, first + 2)
    assert seen["records"] == [b"a", b"b", b"c", b"d"]
    assert not seen["committed_during_fsync"]
    slow, during = seen["during"]
    assert during == list(range(slow + 1, slow + 6))
    assert seen["tail"] == [b"slow"] + [b"during %d" % i for i in range(5)]
