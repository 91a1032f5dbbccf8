"""A deterministic simulator for the KRaft core, in the spirit of Kafka's ``RaftEventSimulationTest``
and etcd-io/raft's ``rafttest``.

Theory of operation
-------------------
One :class:`Simulation` holds a virtual clock and a single event heap (:mod:`.events`), seeded from one
``random.Random``. Each node (:mod:`.node`) is a :class:`~kraftwire.node.core.KRaftCore` over in-memory
storage that survives crashes, driven exactly as a real runtime would drive it: persist the quorum state
and fsync the log (taking virtual time, during which the node handles nothing else), then send, then
notify the application, then ``advance``. Ticks are scheduled at the core's own next deadline.

Messages travel through :mod:`.network` (loss, delay, duplication, reordering, partitions) and, by
default, through the generated wire codecs (:mod:`.wire`) at the versions a real client would negotiate.
The application is a replicated counter (:mod:`.counter`) that snapshots every N records; an operator
(:mod:`.admin`) adds and removes voters. After every event :mod:`.invariants` checks the safety
properties of docs/kraft.md §12 and a watchdog (:mod:`.liveness`) checks that a connected majority keeps
committing. Scenarios (:mod:`.scenarios`) are generator scripts of faults; :mod:`.runner` runs them by
seed, and ``kraftwire simulate`` (:mod:`.cli`) prints a summary line per scenario.

A failing run reports its seed and trace; the same scenario, voter count and seed replay it exactly.
The trace (:mod:`.trace`) opens with a legend and can be filtered by node, API or kind of line.

Layering: modules import strictly downward. At the bottom sit :mod:`.violation`, the clock, the
network (with the addresses), the codecs and the trace; :mod:`.host` holds the small protocols through
which the nodes, the operator, the checker and the watchdog see the simulation, so none of them imports
:mod:`.simulation`; the scenarios, the runner and the CLI sit on top.
"""

from .runner import RunResult, run_one, sweep
from .scenarios import SCENARIOS
from .simulation import SimOptions, Simulation
from .violation import Violation

__all__ = ["SCENARIOS", "RunResult", "SimOptions", "Simulation", "Violation", "run_one", "sweep"]
