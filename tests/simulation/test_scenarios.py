"""Every named scenario, for a few seeds and both quorum sizes, with all invariants and liveness on.

CI keeps this small (a few seconds per scenario); ``kraftwire simulate --scenario all --runs 1000`` is
the full sweep.
"""

from __future__ import annotations

import os

import pytest

from kraftwire.node.simulation import SCENARIOS, run_one

SEEDS = range(int(os.environ.get("KRAFTWIRE_SIM_SEEDS", "3")))
CASES = [(name, voters, seed) for name in SCENARIOS for voters in (3, 5) for seed in SEEDS]


@pytest.mark.parametrize("scenario,voters,seed", CASES, ids=[f"{n}-{v}v-s{s}" for n, v, s in CASES])
def test_scenario(scenario: str, voters: int, seed: int) -> None:
    result = run_one(scenario, voters, seed)
    assert (
        result.ok
    ), f"{result.violation}\nreplay: {result.replay_command()}\n{result.trace[-6000:]}"
    assert result.core_events > 0 and result.frames > 0  # it really ran, through the wire codecs


def test_prevote_keeps_a_stable_leader() -> None:
    """A voter partitioned for several election timeouts heals without bumping the epoch or the leader."""
    for seed in range(2):
        r = run_one("prevote_rejoin", 3, seed)
        assert r.ok, r.violation
        o = r.observations
        assert (o["leader_after"], o["epoch_after"]) == (o["leader_before"], o["epoch_before"])
        assert o["leader_changes"] == 0  # not even a change and a change back


def test_without_prevote_the_healed_voter_disrupts() -> None:
    """Vote v1 peers (Kafka 3.9): the classic behaviour, the isolated voter's epoch bumps unseat the leader."""
    for seed in range(2):
        r = run_one("classic_rejoin", 3, seed)
        assert r.ok, r.violation
        assert r.observations["epoch_after"] > r.observations["epoch_before"], r.observations
        assert r.observations["leader_changes"] >= 1, r.observations


def test_a_hostile_peer_changes_nothing_it_can_be_caught_at() -> None:
    """Issue 26: lies a node can detect (stranger votes and leaders, epochs up to 2^31-1, this node or
    a second leader named, replays) are refused, no node dies, no leader moves; once the peer stops
    spoofing voters a leader is back within a few election timeouts (the scenario's own checks)."""
    for seed in range(2):
        r = run_one("hostile_peer", 3, seed)
        assert r.ok, f"{r.violation}\nreplay: {r.replay_command()}"
        o = r.observations
        assert o["hostile_sent"] > 200 and o["leader_changes_unexplained"] == 0, o
        assert o["refused"] > 0 and o["hostile_answers"].get(94, 0) > 0, o  # INCONSISTENT_VOTER_SET
        assert o["hostile_answers"].get(42, 0) > 0, o  # INVALID_REQUEST: 2^31-1, lies about leaders
