"""Known gaps in the core that the simulator found (reported to the core's owner). Each test states the
expected behaviour and is marked ``xfail(strict=True)``: when the core is fixed it starts passing, the
marker then fails the run, and the workaround named in the reason can go."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from kraftwire.node.simulation import Simulation, run_one
from kraftwire.node.simulation.script import Until, leader_elected
from sim_helpers import run_script


@pytest.mark.xfail(
    strict=True,
    reason="core: an observer following a dead leader never looks for the new one "
    "(poll_follower keeps fetching the old leader; Kafka falls back to the bootstrap servers). "
    "Workaround: converge() restarts stuck observers unless --strict.",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="core: a RemoveRaftVoter of the leader that expires (REQUEST_TIMED_OUT) "
    "before its VotersRecord commits never triggers the resignation (it is tied to the pending "
    "RPC, not to the committed voter set), so the leader keeps leading as a non-voter. "
    "Workaround: the leader_removal scenario restarts it unless --strict.",
)
def test_removed_leader_resigns_even_after_the_request_timed_out() -> None:
    result = run_one("leader_removal", 3, 84, strict=True)
    assert result.ok, result.violation


@pytest.mark.xfail(
    strict=True,
    reason="core: RequestManager.next_wakeup() keeps expired retry backoffs, so after "
    "a failed request next_deadline_ms() stays 'now' until a later success to that node or a "
    "state change, and the driver polls every millisecond meanwhile (a busy loop, cf. KAFKA-17751).",
)
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
