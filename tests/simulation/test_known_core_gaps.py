"""Gaps in the core that the simulator found (all fixed since); each test states the expected behaviour.

* An observer whose leader died fetches from the bootstrap servers while the leader is unreachable,
  and so learns the new leader.
* A leader resigns once the committed voter set leaves it out, even if the RemoveRaftVoter request
  that removed it expired first (seeds that showed it: leader_removal 3 voters 84, 89, 90; 5 voters 131).
* Retry backoffs that already ended never pin the next deadline to "now" (a busy poll loop).
"""

from __future__ import annotations

from typing import Any, Iterator

from kraftwire.node.simulation import Simulation, run_one
from kraftwire.node.simulation.scenarios import leader_elected
from kraftwire.node.simulation.script import Until
from sim_helpers import run_script


def test_observer_finds_the_new_leader_after_its_leader_dies() -> None:
    def script(sim: Simulation) -> Iterator[Any]:
        observer = max(sim.nodes)
        yield leader_elected(sim)
        yield Until(
            lambda: sim.nodes[observer].counter.next_offset > 0, 20_000, "the observer catches up"
        )
        old = sim.leader()
        sim.kill(old)  # and it stays down
        yield Until(lambda: sim.leader() not in (None, old), 20_000, "a new leader")
        new = sim.leader()
        yield Until(
            lambda: sim.nodes[observer].core.leader_id == new,
            30_000,
            f"observer {observer} follows {new}",
        )

    _, violation = run_script(script, seed="observer", with_converge=False, observers=1)
    assert violation is None, violation


def test_removed_leader_resigns_even_after_the_request_timed_out() -> None:
    for voters, seed in ((3, 84), (3, 89), (3, 90), (5, 131)):
        result = run_one("leader_removal", voters, seed)
        assert result.ok, result.violation


def test_a_core_with_nothing_to_do_does_not_ask_to_be_polled_now() -> None:
    sim = Simulation("idle", None)
    sim.start()
    sim.run_script(iter([900]), 60_000)  # before the first election: nodes discover each other
    now = sim.queue.now
    for node in sim.running:
        core = node.core
        core.tick(now)  # the core has just polled: whatever is due now is done
        if not core.has_ready():
            assert (
                core.next_deadline_ms() > now
            ), f"node {node.id} ({core.state.describe()}) asks for a poll at once"
