"""An idle quorum's followers long-poll: the leader parks a caught-up follower's Fetch until new records
are appended, the high watermark moves or MaxWaitMs (500 ms) passes, so each follower fetches about
twice a second, not in a loop. Counted from the leader's capture, not timed."""

from __future__ import annotations

import struct
import time
from collections import Counter, defaultdict

import pytest

from kraftwire.generated import decode_request
from test_capture import read_pcapng

pytestmark = pytest.mark.timeout(180)
IDLE_S = 3.0


def fetches_to(path: str, port: int, epoch: int) -> Counter:
    """Fetch requests of leader epoch ``epoch`` received on ``port``, counted by replica id."""
    streams: dict[tuple, bytes] = defaultdict(bytes)
    for key, _seq, _flags, payload in read_pcapng(path):
        if key[3] == port:
            streams[key] += payload
    counts: Counter = Counter()
    for data in streams.values():
        pos = 0
        while pos + 4 <= len(data):
            size = struct.unpack_from(">i", data, pos)[0]
            frame = decode_request(data[pos + 4 : pos + 4 + size])
            pos += 4 + size
            if frame.api_key != 1:
                continue
            partition = frame.body.topics[0].partitions[0]
            if partition.current_leader_epoch == epoch:
                counts[frame.body.replica_state.replica_id] += 1
    return counts


def test_idle_followers_long_poll_the_leader(cluster, tmp_path):
    for node in cluster.ids:
        cluster.start(node, "--capture", str(tmp_path / f"node{node}.pcapng"))
    leader, epoch = cluster.wait_for_leader()
    time.sleep(IDLE_S)  # nothing is written: the quorum is idle
    cluster.stop_all()
    counts = fetches_to(
        str(tmp_path / f"node{leader}.pcapng"), cluster.endpoints[leader].port, epoch
    )
    followers = [n for n in cluster.ids if n != leader]
    assert set(counts) == set(followers)
    for follower in followers:
        # At 500 ms per parked fetch a follower sends ~2 a second (plus a few while it catches up
        # with the leader's first batch); answered at once, it would send hundreds.
        assert counts[follower] <= 4 * (IDLE_S + 1) + 6, counts
