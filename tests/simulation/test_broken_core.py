"""The checker catches a broken core: each test injects one bug by monkeypatching the core and expects
the matching invariant to fire, with the seed and a trace to replay it. (These tests fail if the checker
stops noticing.)"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from kraftwire.node.core import batches
from kraftwire.node.core import dispatch, states, transitions
from kraftwire.node.core.leader import LeaderState
from kraftwire.node.simulation import Simulation, run_one
from kraftwire.node.simulation.scenarios import leader_elected
from sim_helpers import run_script, sleep


def test_decreasing_high_watermark(monkeypatch: pytest.MonkeyPatch) -> None:
    orig = LeaderState.maybe_update_high_watermark
    stuck: dict[str, int] = {}

    def buggy(self: LeaderState) -> bool:
        if "hw" in stuck:
            self.high_watermark = stuck["hw"]
            return False
        before = self.high_watermark
        moved = orig(self)
        if moved and before is not None and before > 30:
            stuck["hw"] = self.high_watermark = before - 2  # the bug: the HW goes back (and stays)
            return False
        return moved

    monkeypatch.setattr(LeaderState, "maybe_update_high_watermark", buggy)
    result = run_one("steady", 3, 0)
    assert not result.ok
    assert result.violation.startswith("MonotonicHighWatermark"), result.violation
    assert "--seed 0" in result.replay_command() and "steady" in result.replay_command()
    assert "VIOLATION" in result.trace and "<-" in result.trace


def test_two_leaders_in_one_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bug: every election needs only the candidate's own vote.
    monkeypatch.setattr(states.EpochElection, "majority", lambda self: 1)

    def script(sim: Simulation) -> Iterator[Any]:
        yield leader_elected(sim)
        sim.partition([1], [2], [3])  # every node alone: each one elects itself
        yield 6000

    _, violation = run_script(script, seed="two-leaders", with_converge=False)
    assert violation is not None and violation.startswith("SingleLeader"), violation


def test_leader_commits_without_a_majority(monkeypatch: pytest.MonkeyPatch) -> None:
    def alone(self: LeaderState) -> bool:
        # The bug: the leader takes its own end offset as the HW.
        own = self.voter_states[self.local_key.id].end_offset
        if own is None or own <= self.epoch_start_offset or (self.high_watermark or 0) >= own:
            return False
        self.high_watermark = own
        return True

    monkeypatch.setattr(LeaderState, "maybe_update_high_watermark", alone)

    def script(sim: Simulation) -> Iterator[Any]:
        yield leader_elected(sim)
        leader = sim.leader()
        sim.partition([v for v in sim.voter_ids() if v != leader])  # its followers cannot fetch
        yield 1000

    _, violation = run_script(script, seed="alone", with_converge=False)
    assert violation is not None and violation.startswith("MajorityReachedHighWatermark"), violation


def test_corrupted_replication(monkeypatch: pytest.MonkeyPatch) -> None:
    orig = batches.decode_batches
    calls = {"n": 0}

    def corrupting(data: bytes) -> list:
        batches = orig(data)
        calls["n"] += 1
        if calls["n"] == 40:
            out = []
            for b in batches:
                if b.records and not b.is_control:
                    b = type(b)(
                        b.base_offset,
                        b.epoch,
                        (b"999999",) + b.records[1:],
                        False,
                        b.append_time_ms,
                    )
                out.append(b)
            return out
        return batches

    monkeypatch.setattr(batches, "decode_batches", corrupting)
    result = run_one("steady", 3, 1)
    assert not result.ok
    assert (
        "counter jumped" in result.violation or "ConsistentCommittedData" in result.violation
    ), result.violation


def test_unpersisted_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    orig = transitions._enter

    def forgetful(core: Any, new: Any, durable: bool) -> None:
        orig(core, new, durable and new.role is not states.Role.UNATTACHED)  # the bug: no write

    monkeypatch.setattr(transitions, "_enter", forgetful)
    result = run_one("leader_isolation", 3, 0)
    assert not result.ok
    assert result.violation.startswith("MonotonicEpoch"), result.violation


def test_liveness_without_replication(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        dispatch.REQUEST_HANDLERS, 1, lambda core, ev: None
    )  # the bug: fetches vanish
    _, violation = run_script(sleep(30_000), seed="mute", liveness_bound_ms=10_000)
    assert violation is not None and violation.startswith("Liveness"), violation


def test_a_failing_seed_replays_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(states.EpochElection, "majority", lambda self: 1)
    first = run_one("split_brain", 3, 4, trace_limit=None)
    again = run_one("split_brain", 3, 4, trace_limit=None)
    assert not first.ok
    assert (first.violation, first.trace, first.virtual_ms) == (
        again.violation,
        again.trace,
        again.virtual_ms,
    )


# ---- the seeded-bug table (issue #13): one bug per row, the run that must catch it ---------------------
#
# Each row plants one bug with monkeypatch and runs seeds 0, 1, ... of one scenario until a violation
# whose text contains ``expect`` fires; the seed is printed (pytest -s) with the command that replays it.
# ``max_seeds`` bounds the search (a few past the seed that catches it today). The slow rows (over ~10 s)
# run only with KRAFTWIRE_SLOW_MUTANTS=1:
#   KRAFTWIRE_SLOW_MUTANTS=1 .venv/bin/python -m pytest tests/simulation/test_broken_core.py -s


import dataclasses
import os
from dataclasses import dataclass
from typing import Callable

from kraftwire.node.core import core as core_module
from kraftwire.node.core import (
    fetch_follower,
    fetch_leader,
    leader_ops,
    log_ops,
    poll,
    quorum_epoch,
    read_offset,
    responses,
)
from kraftwire.node.core.api import ReadReady
from kraftwire.node.core.delivery import Delivery
from kraftwire.node.core.reads import ConfirmRound

SLOW = not os.environ.get("KRAFTWIRE_SLOW_MUTANTS")


@dataclass(frozen=True)
class Bug:
    area: str
    plant: Callable[[pytest.MonkeyPatch], None]
    scenario: str
    expect: str
    max_seeds: int = 5
    voters: int = 3
    slow: bool = False


def _rejections_count_as_grants(mp: pytest.MonkeyPatch) -> None:
    record = states.EpochElection.record
    mp.setattr(
        states.EpochElection, "record", lambda self, voter, granted: record(self, voter, True)
    )


def _majority_off_by_one(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(states.EpochElection, "majority", lambda self: len(self.voters) // 2)


def _pre_vote_skipped(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(poll, "become_prospective", transitions.become_candidate)


def _pre_vote_rejections_count(mp: pytest.MonkeyPatch) -> None:
    from kraftwire.node.core import vote

    def handler(replica: Any, ev: Any) -> bool:
        if replica.state.role is states.Role.PROSPECTIVE:
            for topic in ev.response.topics:
                for p in topic.partitions:
                    p.vote_granted = True  # the bug: a refused pre-vote counts
        return vote.handle_vote_response(replica, ev)

    mp.setitem(dispatch.RESPONSE_HANDLERS, 52, handler)


def _leader_reads_one_ahead(mp: pytest.MonkeyPatch) -> None:
    read = fetch_leader._read
    mp.setattr(
        fetch_leader, "_read", lambda r, off, ep, mb: read(r, off + 1 if off else off, ep, mb)
    )


def _hw_is_the_highest_offset(mp: pytest.MonkeyPatch) -> None:
    def highest(self: LeaderState) -> bool:
        offsets = [p.end_offset for p in self.voter_states.values() if p.end_offset is not None]
        top = max(offsets, default=None)
        if top is None or top <= self.epoch_start_offset or top <= (self.high_watermark or -1):
            return False
        self.high_watermark = top
        return True

    mp.setattr(LeaderState, "maybe_update_high_watermark", highest)


def _divergence_ignored(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(fetch_follower, "_truncate", lambda replica, st, end, epoch: None)


def _truncate_to_zero(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(fetch_follower, "truncation_offset", lambda log, snaps, end, epoch: 0)


def _snapshot_value_off_by_one(mp: pytest.MonkeyPatch) -> None:
    notification = log_ops.SnapshotContents.notification

    def wrong(self: Any) -> Any:
        loaded = notification(self)
        records = tuple(str(int(r) + 1).encode() for r in loaded.records)
        return dataclasses.replace(loaded, records=records)

    mp.setattr(log_ops.SnapshotContents, "notification", wrong)


def _removed_leader_stays(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(leader_ops, "maybe_resign_removed_leader", lambda replica, st: None)


def _reads_without_quorum(mp: pytest.MonkeyPatch) -> None:
    def unconfirmed(self: LeaderState) -> Any:
        if not self.read_rounds or self.high_watermark is None:
            return None
        return self.read_rounds.pop(0)  # the bug: no majority has to answer a ping

    mp.setattr(LeaderState, "confirmed_round", unconfirmed)


def _one_ping_answer_suffices(mp: pytest.MonkeyPatch) -> None:
    def one(self: LeaderState) -> Any:
        if not self.read_rounds or self.high_watermark is None:
            return None
        if self.required_fetchers() > 0 and not self.read_rounds[0].acked:
            return None
        return self.read_rounds.pop(0)

    mp.setattr(LeaderState, "confirmed_round", one)


def _reads_before_the_epoch_commits(mp: pytest.MonkeyPatch) -> None:
    def no_commit_needed(self: LeaderState) -> Any:
        if not self.read_rounds:
            return None
        first = self.read_rounds[0]
        acked = sum(1 for n in first.acked if n in self.voter_states and n != self.local_key.id)
        return self.read_rounds.pop(0) if acked >= self.required_fetchers() else None

    def answer(replica: Any, st: LeaderState) -> None:
        while (confirmed := st.confirmed_round()) is not None:
            for read in confirmed.reads:
                offset = read.noted_hw if read.noted_hw is not None else (st.high_watermark or 0)
                leader_ops.answer_read(replica, read, offset)

    mp.setattr(LeaderState, "confirmed_round", no_commit_needed)
    for module in (leader_ops, quorum_epoch, fetch_leader):
        mp.setattr(module, "answer_confirmed_reads", answer)


def _read_offset_one_short(mp: pytest.MonkeyPatch) -> None:
    answer = leader_ops.answer_read
    mp.setattr(
        leader_ops, "answer_read", lambda r, read, off: answer(r, read, off - 1 if off else off)
    )


def _resigned_leader_answers(mp: pytest.MonkeyPatch) -> None:
    answer = leader_ops.answer_read
    mp.setattr(
        leader_ops,
        "answer_read",
        lambda r, read, off: answer(r, read, off if off is not None else read.noted_hw),
    )


def _non_leader_answers(mp: pytest.MonkeyPatch) -> None:
    def handler(replica: Any, ev: Any) -> None:
        st = replica.state
        if not isinstance(st, LeaderState) and st.high_watermark is not None:
            response = responses.read_offset_response(
                0, 0, st.high_watermark, st.leader_id, st.epoch
            )
            return replica.respond(ev, response)
        return read_offset.handle_read_offset_request(replica, ev)

    mp.setitem(dispatch.REQUEST_HANDLERS, 1000, handler)


def _served_before_applied(mp: pytest.MonkeyPatch) -> None:
    def at_once(self: Delivery, replica: Any) -> None:
        for read in [r for r in replica.local_reads.values() if r.offset is not None]:
            del replica.local_reads[read.read_id]
            replica.out.notify(ReadReady(read.read_id, read.offset))

    mp.setattr(Delivery, "deliver_reads", at_once)


def _follower_reads_locally(mp: pytest.MonkeyPatch) -> None:
    def local(replica: Any, ev: Any) -> None:
        read_offset.start_read(replica, ev)
        read = replica.local_reads.get(ev.read_id)
        if read is not None and replica.state.role is not states.Role.LEADER:
            read.offset, read.asked = replica.state.high_watermark or 0, -1

    mp.setattr(core_module, "start_read", local)


BUGS = {
    # Two leaders in one epoch; since unattached voters back off a peer that knows no leader, the
    # checker's SingleLeader sees it before a core's own InvariantViolation does.
    "elections: refused votes count as grants": Bug(
        "elections", _rejections_count_as_grants, "split_brain", "SingleLeader"
    ),
    "elections: majority is half the voters": Bug(
        "elections", _majority_off_by_one, "split_brain", "SingleLeader", voters=5
    ),
    "pre-vote: skipped, voters campaign at once": Bug(
        "pre-vote", _pre_vote_skipped, "prevote_rejoin", "illegal transition"
    ),
    "pre-vote: refused pre-votes count": Bug(
        "pre-vote", _pre_vote_rejections_count, "prevote_rejoin", "StableLeadership"
    ),
    "replication: the leader serves from one past the fetch offset": Bug(
        "replication", _leader_reads_one_ahead, "steady", "Liveness", 2, slow=True
    ),
    "high watermark: the highest end offset, not the majority's": Bug(
        "high watermark",
        _hw_is_the_highest_offset,
        "minority_partition",
        "MajorityReachedHighWatermark",
    ),
    "truncation: a follower ignores DivergingEpoch": Bug(
        "truncation", _divergence_ignored, "leader_isolation", "Liveness", slow=True
    ),
    "truncation: a follower truncates to 0": Bug(
        "truncation", _truncate_to_zero, "leader_isolation", "below our HW"
    ),
    "snapshots: a loaded snapshot's value is off by one": Bug(
        "snapshots", _snapshot_value_off_by_one, "restarts", "ConsistentCommittedData"
    ),
    "voter changes: a removed leader never resigns": Bug(
        "voter changes", _removed_leader_stays, "leader_removal", "Liveness"
    ),
    "ReadOffset: no quorum check (a deposed leader answers)": Bug(
        "ReadOffset", _reads_without_quorum, "read_partition", "Linearizability"
    ),
    # These two are caught at seeds 12 and 10 since unattached voters back off (64 s and 53 s).
    "ReadOffset: one ping answer is enough": Bug(
        "ReadOffset", _one_ping_answer_suffices, "read_partition", "Linearizability", 13, 5, True
    ),
    "ReadOffset: answers before a batch of the epoch commits": Bug(
        "ReadOffset",
        _reads_before_the_epoch_commits,
        "read_leader_isolation",
        "Linearizability",
        11,
        slow=True,
    ),
    "ReadOffset: the answer is one short": Bug(
        "ReadOffset", _read_offset_one_short, "read_message_loss", "Linearizability"
    ),
    "ReadOffset: a resigning leader answers with its noted HW": Bug(
        "ReadOffset", _resigned_leader_answers, "read_leader_isolation", "Linearizability"
    ),
    # Caught from seed 5 on (seeds 5, 18, 21, 24, ... of 0-29) since unattached voters back off.
    "ReadOffset: a non-leader answers with its own HW": Bug(
        "ReadOffset", _non_leader_answers, "read_leader_isolation", "Linearizability", max_seeds=10
    ),
    "ReadOffset: ReadReady before the batches are applied": Bug(
        "ReadOffset", _served_before_applied, "read_message_loss", "Linearizability"
    ),
    "ReadOffset: a follower serves from its own HW": Bug(
        "ReadOffset", _follower_reads_locally, "read_partition", "Linearizability"
    ),
}


@pytest.mark.parametrize("name", list(BUGS))
def test_seeded_bug_is_caught(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bug = BUGS[name]
    if bug.slow and SLOW:
        pytest.skip("slow: set KRAFTWIRE_SLOW_MUTANTS=1")
    bug.plant(monkeypatch)
    for seed in range(bug.max_seeds):
        result = run_one(bug.scenario, bug.voters, seed)
        if not result.ok:
            print(f"{name}: caught at seed {seed}: {result.replay_command()}")
            assert bug.expect in result.violation, result.violation
            return
    pytest.fail(f"{name}: not caught in seeds 0..{bug.max_seeds - 1} of {bug.scenario}")


def test_the_bug_table_spans_every_area_and_with_the_tests_above_makes_25() -> None:
    areas = {bug.area for bug in BUGS.values()}
    assert areas == {
        "elections",
        "pre-vote",
        "replication",
        "high watermark",
        "truncation",
        "snapshots",
        "voter changes",
        "ReadOffset",
    }
    assert len(BUGS) + 7 >= 25  # the seven hand-written tests above plant seven more
