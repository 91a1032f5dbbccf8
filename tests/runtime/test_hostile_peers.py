"""Issue 26 on real processes: the frames that used to end a node or the quorum, sent over TCP to a
running 3-node quorum. One BeginQuorumEpoch naming another voter leader of the current epoch raised
``two leaders in epoch N`` and the process exited; a Vote at epoch 2^31-1 moved every node past the
int32 range for good; a BeginQuorumEpoch from a replica that is not a voter made the voters follow it.
Now each is refused with an error answer and one log line, every node stays up and the leader stays.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from kraftwire.generated import errors
from kraftwire.node.core.api import Endpoint, ReplicaKey
from kraftwire.node.core.messages import begin_quorum_epoch_request, vote_request
from kraftwire.node.runtime.client import KafkaConnection
from kraftwire.node.runtime.producer import MetadataClient
from kraftwire.node.storage.layout import read_meta_properties

pytestmark = pytest.mark.timeout(180)

INT32_MAX = (1 << 31) - 1
NOT_A_VOTER = 99


def _send(cluster, node_id: int, request):
    endpoint = cluster.endpoints[node_id]
    with KafkaConnection(endpoint.host, endpoint.port, timeout_s=20) as connection:
        return connection.call(request)


def _partition_error(response) -> int:
    return response.topics[0].partitions[0].error_code


def _key(cluster, node_id: int) -> ReplicaKey:
    return ReplicaKey(node_id, read_meta_properties(cluster.log_dir(node_id)).directory_id)


def _killer_frames(cluster, leader: int, epoch: int):
    """(target, request) for every frame the issue reports, and the partition error each gets."""
    others = [i for i in cluster.ids if i != leader]
    fake = {"CONTROLLER": Endpoint("127.0.0.1", 1)}
    cid = cluster.cluster_id
    frames = []
    for target in cluster.ids:
        rival = next(i for i in cluster.ids if i not in (target, leader))
        if target != leader:  # another voter named leader of the target's current epoch
            frames.append(
                (target, begin_quorum_epoch_request(cid, _key(cluster, target), rival, epoch, fake))
            )
        candidate = _key(cluster, others[0] if target != others[0] else others[1])
        for pre_vote in (False, True):
            frames.append(
                (
                    target,
                    vote_request(cid, _key(cluster, target), INT32_MAX, candidate, 0, 0, pre_vote),
                )
            )
        frames.append(
            (
                target,
                begin_quorum_epoch_request(
                    cid, _key(cluster, target), NOT_A_VOTER, epoch + 5, fake
                ),
            )
        )
    expected = {
        "two leaders": errors.INVALID_REQUEST,
        "epoch limit": errors.INVALID_REQUEST,
        "not a voter": errors.INCONSISTENT_VOTER_SET,
    }
    return frames, expected


def test_lying_frames_are_refused_and_the_quorum_keeps_its_leader(cluster):
    cluster.start_all()
    leader, epoch = cluster.wait_for_leader()
    frames, expected = _killer_frames(cluster, leader, epoch)
    answers = [(target, request, _send(cluster, target, request)) for target, request in frames]
    for target, request, response in answers:
        partition = request.topics[0].partitions[0]
        claimed_epoch = getattr(partition, "leader_epoch", None)
        if claimed_epoch is None:
            claimed_epoch = partition.replica_epoch
        if claimed_epoch == INT32_MAX:
            want = expected["epoch limit"]
        elif getattr(partition, "leader_id", None) == NOT_A_VOTER:
            want = expected["not a voter"]
        else:
            want = expected["two leaders"]
        assert (target, _partition_error(response)) == (target, want), request
        # every answer names the real leader and epoch
        answered = response.topics[0].partitions[0]
        assert (answered.leader_id, answered.leader_epoch) == (leader, epoch)

    time.sleep(3)  # several fetch timeouts (1 s): a node that had followed a lie would have moved
    assert all(cluster.processes[i].poll() is None for i in cluster.ids), "a node exited"
    assert cluster.wait_for_leader(timeout_s=10) == (leader, epoch)
    client = MetadataClient(cluster.endpoints[leader], deadline_s=30)
    try:
        client.produce([b"still-serving"], -1)
    finally:
        client.close()
    for i in cluster.ids:
        with open(os.path.join(cluster.directory, f"node{i}.log"), encoding="utf-8") as f:
            text = f.read()
        assert "Traceback" not in text and "stopping" not in text, f"node {i}:\n{text[-2000:]}"
        assert "refused Vote from" in text and "epoch 2147483647 is outside" in text, i
        assert "refused BeginQuorumEpoch from" in text and "99 is not a voter" in text, i


def test_a_quorum_state_beyond_int32_is_reported_on_start_in_one_line(cluster):
    """What nodes hit by the old 2^31-1 Vote wrote (e.g. epoch 2147483714) stops the start with one
    line naming the file and the value, exit status 1 as for other storage errors."""
    path = os.path.join(cluster.partition_dir(1), "quorum-state")
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"leaderId":-1,"leaderEpoch":2147483714,"votedId":-1,"data_version":1}')
    started = subprocess.run(
        [sys.executable, "-m", "kraftwire", "node", "start", "--config", cluster.config_path(1)],
        capture_output=True,
        timeout=60,
    )
    assert started.returncode == 1 and started.stdout == b""
    [line] = started.stderr.decode().splitlines()
    assert line.startswith("kraftwire node start: ") and path in line, line
    assert "leaderEpoch 2147483714 is outside int32" in line, line
