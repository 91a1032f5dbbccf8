"""Liveness: with a connected majority of voters, new appends must commit within a bounded virtual time.

A watchdog runs every ``WATCHDOG_MS``. The clock restarts at every fault action (partition, heal, crash,
restart, wipe, shutdown, change of loss rate): from then on, if some majority of the current voters is
running and pairwise connected, a newly committed data record must appear within ``bound_ms``. Random
message loss does not count as disconnection, so the bound must cover elections under the heaviest
loss a scenario uses (docs/kraft.md §13: detection <= 2 s, then pre-vote, vote, and a random
[1, 2) s timeout per split vote).
"""

from __future__ import annotations

from itertools import combinations

from kraftwire.node.core import ReplicaKey

from .host import Cluster, Replica
from .invariants import Checker
from .network import Network
from .violation import Violation

WATCHDOG_MS = 500


class Liveness:
    def __init__(self, cluster: Cluster, checker: Checker, net: Network, bound_ms: int) -> None:
        self.cluster = cluster
        self.checker = checker
        self.net = net
        self.bound_ms = bound_ms
        self.disrupted_at = 0

    def disrupted(self) -> None:
        self.disrupted_at = self.cluster.queue.now

    def check(self) -> None:
        now = self.cluster.queue.now
        since = max(self.checker.data_committed_at, self.disrupted_at)
        if now - since <= self.bound_ms:
            return
        group = self.connected_majority()
        if group:
            raise Violation(
                f"Liveness: nothing new committed for {now - since} ms (bound {self.bound_ms} ms) although "
                f"voters {','.join(map(str, group))} are running and connected"
            )

    def reference_node(self) -> Replica | None:
        """The most advanced running node (highest epoch, then longest log): whose voter set counts."""
        best, best_rank = None, (-1, -1)
        for n in self.cluster.running:
            assert n.core is not None
            status = n.core.status()
            rank = (status.epoch, status.log_end_offset)
            if rank > best_rank:
                best, best_rank = n, rank
        return best

    def _alive(self, key: ReplicaKey) -> bool:
        node = self.cluster.nodes.get(key.id)
        return node is not None and node.running and not node.stopping and key.matches(node.key)

    def connected_majority(self) -> list[int]:
        """A largest set of live, pairwise-connected voters if it is a majority, else ``[]``."""
        best = self.reference_node()
        if best is None:
            return []
        assert best.core is not None
        voters = best.core.status().voters
        live = [spec.key.id for spec in voters if self._alive(spec.key)]
        need = len(voters) // 2 + 1
        net = self.net
        for size in range(len(live), need - 1, -1):
            for group in combinations(live, size):
                if all(
                    net.connected(a, b) and net.connected(b, a) for a, b in combinations(group, 2)
                ):
                    return list(group)
        return []
