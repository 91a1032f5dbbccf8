"""KRaftCore.resign(epoch), Kafka's RaftClient.resign: the leader of that epoch gives it up, sends
EndQuorumEpoch, and another voter leads the next epoch; any other epoch, or a non-leader, is ignored.
"""

from __future__ import annotations

from test_core_status import Cluster

from kraftwire.generated.end_quorum_epoch_request import EndQuorumEpochRequest
from kraftwire.node.core import OutboundRequest, Role


def test_a_resigned_leader_hands_the_epoch_on() -> None:
    cluster = Cluster([1, 2, 3])
    cluster.run(6000)
    leader = cluster.leader()
    old_id, old_epoch = leader.status().leader_id, leader.status().epoch

    leader.resign(old_epoch, cluster.now)
    assert leader.status().role is Role.RESIGNED
    sent = []
    while leader.has_ready():
        ready = leader.ready()
        sent += [m for m in ready.messages if isinstance(m, OutboundRequest)]
        cluster.network.extend((old_id, m) for m in ready.messages)
        leader.advance(ready)
    assert sorted(m.destination for m in sent if isinstance(m.request, EndQuorumEpochRequest)) == [
        n for n in (1, 2, 3) if n != old_id
    ]
    cluster.run(3000)
    new = cluster.leader().status()
    assert new.epoch > old_epoch and new.leader_id != old_id


def test_resign_of_another_epoch_or_by_a_follower_changes_nothing() -> None:
    cluster = Cluster([1, 2, 3])
    cluster.run(6000)
    leader = cluster.leader()
    status = leader.status()
    leader.resign(status.epoch - 1, cluster.now)
    follower = next(c for c in cluster.cores.values() if c is not leader)
    follower.resign(status.epoch, cluster.now)
    cluster.run(1000)
    assert cluster.leader() is leader and leader.status().epoch == status.epoch
    assert follower.status().role is Role.FOLLOWER
