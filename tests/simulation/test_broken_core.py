"""The checker catches a broken core: each test injects one bug by monkeypatching the core and expects
the matching invariant to fire, with the seed and a trace to replay it. (These tests fail if the checker
stops noticing.)"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from kraftwire.node import batches
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
