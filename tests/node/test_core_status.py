"""KRaftCore.status(): a frozen snapshot that tells role, epoch, leader, voters, HW, log end and the
leader's view of every replica, without reaching into the core's internals."""

from __future__ import annotations

import dataclasses

import pytest

from wired_cores import core as built_core
from wired_cores import voter_spec as _spec
from kraft_datadriven import Command
from kraft_harness import Env
from kraftwire.generated.remove_raft_voter_request import RemoveRaftVoterRequest
from kraftwire.node.core import (
    KRaftCore,
    MemoryLog,
    Message,
    OutboundRequest,
    QuorumStatus,
    ReplicaKey,
    RequestReceived,
    ResponseReceived,
    Role,
    Tick,
)


def _key(node_id: int) -> ReplicaKey:
    return _spec(node_id).key


class Cluster:
    """Cores wired directly to each other (messages passed as objects, at their highest version)."""

    def __init__(
        self, voter_ids: list[int], observer_ids: tuple[int, ...] = (), follower_fetch: bool = False
    ) -> None:
        self.now = 0
        self.logs = {n: MemoryLog() for n in [*voter_ids, *observer_ids]}
        self.cores = {
            n: built_core(
                n,
                voter_ids,
                leader=None,
                seed=n,
                log=self.logs[n],
                append_linger_ms=0,
                follower_fetch=follower_fetch,
            )
            for n in self.logs
        }
        self.network: list[tuple[int, Message]] = []

    def drain(self) -> None:
        for n, core in self.cores.items():
            while core.has_ready():
                rd = core.ready()
                if rd.flush_log_to is not None:
                    self.logs[n].flush(rd.flush_log_to)
                self.network.extend((n, m) for m in rd.messages)
                core.advance(rd)

    def run(self, ms: int, step: int = 50) -> None:
        for _ in range(ms // step):
            self.now += step
            for core in self.cores.values():
                core.step(Tick(self.now))
            for _ in range(100):
                self.drain()
                if not self.network:
                    break
                pending, self.network = self.network, []
                for src, m in pending:
                    dest = self.cores.get(m.destination)
                    if dest is None:
                        continue
                    if isinstance(m, OutboundRequest):
                        ev = RequestReceived(
                            src, m.correlation_id, m.request.HIGHEST_VERSION, m.request, self.now
                        )
                    else:
                        ev = ResponseReceived(
                            src, m.correlation_id, m.api_version, m.response, self.now
                        )
                    dest.step(ev)

    def leader(self) -> KRaftCore:
        leaders = [c for c in self.cores.values() if c.status().role is Role.LEADER]
        assert len(leaders) == 1, [c.status().role for c in self.cores.values()]
        return leaders[0]


def test_single_voter_leads_at_once_and_reports_itself() -> None:
    cluster = Cluster([1])
    cluster.drain()
    status = cluster.cores[1].status()
    assert isinstance(status, QuorumStatus)
    assert (status.role, status.epoch, status.leader_id) == (Role.LEADER, 1, 1)
    assert status.voter_ids() == (1,) and status.is_voter(_key(1)) and not status.is_voter(_key(2))
    assert status.high_watermark == status.log_end_offset > 0  # the LeaderChange batch is committed
    assert status.committed_voters == status.voters == (_spec(1),)
    assert (
        status.voters_offset == 2
    )  # kraft.version 1: LeaderChange, KRaftVersion, then the VotersRecord
    (own,) = status.voter_progress
    assert (own.key, own.log_end_offset) == (_key(1), status.log_end_offset)
    assert status.observer_progress == ()


def test_status_follows_the_quorum() -> None:
    cluster = Cluster([1, 2, 3], observer_ids=(4,))
    cluster.run(6000)
    leader = cluster.leader()
    leader.append([b"a", b"b"], cluster.now)
    cluster.run(500)
    status = leader.status()
    assert status.role is Role.LEADER and status.leader_id in status.voter_ids()
    assert [p.key for p in status.voter_progress] == [_key(1), _key(2), _key(3)]
    assert all(p.log_end_offset == status.log_end_offset for p in status.voter_progress)
    assert all(p.last_caught_up_ms > 0 for p in status.voter_progress)
    assert [p.key for p in status.observer_progress] == [_key(4)]
    assert status.high_watermark == status.log_end_offset
    for n, core in cluster.cores.items():
        other = core.status()
        assert (other.epoch, other.leader_id) == (status.epoch, status.leader_id)
        assert (
            other.high_watermark == status.high_watermark
            and other.log_end_offset == status.log_end_offset
        )
        if core is not leader:
            assert other.role is Role.FOLLOWER and other.voter_progress == ()
            assert other.is_voter(_key(n)) is (n != 4)


def test_a_status_is_frozen_and_taken_anew_after_each_input() -> None:
    cluster = Cluster([1])
    cluster.drain()
    core = cluster.cores[1]
    before = core.status()
    assert core.status() is before  # nothing happened in between
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.epoch = 7  # type: ignore[misc]
    core.append([b"x"], 10)
    cluster.drain()
    after = core.status()
    assert after.log_end_offset == before.log_end_offset + 1
    assert before.log_end_offset == after.log_end_offset - 1  # the old snapshot did not move


def test_a_status_describes_the_state_as_the_core_does() -> None:
    cluster = Cluster([1, 2, 3])
    cluster.run(6000)
    for core in cluster.cores.values():
        status = core.status()
        assert status.describe() == core.state.describe()
        assert status.describe().startswith(
            f"{status.role.value} epoch={status.epoch} leader={status.leader_id}"
        )


def test_status_tells_what_kafkas_raft_metrics_report() -> None:
    """current-vote(-directory-id), log-end-epoch, number-of-observers and uncommitted-voter-change."""
    cluster = Cluster([1, 2, 3], observer_ids=(4,))
    cluster.run(6000)
    leader = cluster.leader()
    status = leader.status()
    own = _key(status.leader_id)
    assert status.current_vote == own  # a leader reports itself
    assert status.log_end_epoch == status.epoch  # its LeaderChange batch is the last one
    assert (status.observer_count, status.voter_change_pending) == (1, False)
    for n, core in cluster.cores.items():
        other = core.status()
        if core is not leader:
            assert (other.observer_count, other.voter_change_pending) == (None, None)  # leader only
            assert other.current_vote == (None if n == 4 else other.voted_key)
            assert other.log_end_epoch == status.log_end_epoch
    follower = next(n for n in (1, 2, 3) if cluster.cores[n] is not leader)
    request = RemoveRaftVoterRequest(
        cluster_id="cluster", voter_id=follower, voter_directory_id=_key(follower).directory_id
    )
    leader.step(RequestReceived(9, 1, 0, request, cluster.now))
    assert leader.status().voter_change_pending is True  # its VotersRecord is not committed yet
    cluster.run(500)
    status = leader.status()
    assert status.voter_change_pending is False and follower not in status.voter_ids()


def test_a_candidate_reports_its_own_vote_and_a_prospective_the_one_it_cast() -> None:
    env = Env()
    for line in ("add-nodes 3", "campaign 1", "deliver", "deliver"):
        name, *args = line.split()
        env.handle(Command(name, args, {}))
    status = env.nodes[1].core.status()
    assert status.role is Role.CANDIDATE and status.current_vote == _key(1)
    assert env.nodes[2].core.status().current_vote is None  # the vote request is not there yet
    env.handle(Command("deliver", [], {"to": "2"}))
    voter = env.nodes[2].core.status()
    assert voter.role is Role.UNATTACHED and voter.current_vote == _key(1)  # it granted the vote
