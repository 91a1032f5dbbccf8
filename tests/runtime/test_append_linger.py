"""Appends submitted while the leader's accumulator lingers do not wake the node's loop one by one
(KRaftNode.submit): they go into its accumulator, which drains when the loop next runs, at the linger
deadline at the latest, so they are in the same batch as the append that started the linger, and
they commit."""

from __future__ import annotations

import asyncio

import pytest

from runtime_settings import TEST_SETTINGS
from test_embedded import Recorder, leader_of
from kraftwire.node.runtime import KRaftNode, load_config
from kraftwire.node.runtime.local_cluster import LocalCluster

pytestmark = pytest.mark.timeout(120)
LINGER_MS = 300


async def _appends_during_one_linger(
    directory: str,
) -> tuple[list[int], list[tuple[int, int]], bool]:
    cluster = LocalCluster(
        directory, 1, settings={**TEST_SETTINGS, "controller.quorum.append.linger.ms": LINGER_MS}
    )
    cluster.format()
    recorder = Recorder()
    node = KRaftNode(load_config(cluster.config_path(1)), listener=recorder)
    await node.start()
    try:
        await leader_of({1: node})
        recorder.batches.clear()
        first = node.submit([b"first"])[1]
        await asyncio.sleep(0.05)  # fed: the linger runs
        lingering = node._started_core().appends_lingering()
        later = [node.submit([b"later %d" % n])[1] for n in range(50)]
        offsets = await asyncio.wait_for(asyncio.gather(first, *later), 10)
        return offsets, list(recorder.batches), lingering
    finally:
        await node.shutdown()


def test_appends_during_the_linger_join_its_batch_and_commit(tmp_path):
    offsets, batches, lingering = asyncio.run(_appends_during_one_linger(str(tmp_path)))
    assert lingering
    assert offsets == list(range(offsets[0], offsets[0] + 51))
    assert (offsets[0], offsets[-1]) in batches, batches
