"""The simulated network: per-message loss, delay, duplication and reordering, plus partitions.

Faults are drawn from the simulation's single seeded ``random.Random``. A message's fate is decided
when it is sent (dropped, or delivered once or twice after random delays); a partition is checked both
at send and at delivery, so a message in flight when a partition starts is lost too. Links in a
partition fail silently (the sender's request times out, as over a real partitioned TCP link); a
message lost to random loss is, with probability ``disconnect``, noticed by the sender as a broken
connection (``RequestFailed``), which exercises the core's failure path as well as its timeouts.

Addresses live here too (the listener name and each node's endpoint), so the nodes, the admin client
and the simulation all import them from below.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable

from kraftwire.node.core import Endpoint

LISTENER = "CONTROLLER"
ADMIN_ID = 100
HOSTILE_ID = 99
"""The hostile peer of the hostile_peer scenario (:mod:`.hostile`): no member, reaches everyone."""
"""The operator's client (:mod:`.admin`): a network id no node uses."""


def endpoint_of(node_id: int) -> Endpoint:
    """The address node ``node_id`` listens on (what ``controller.quorum.bootstrap.servers`` names)."""
    return Endpoint(f"node{node_id}", 9000 + node_id)


@dataclass
class LinkFaults:
    """Random per-message faults. Delays are in virtual milliseconds."""

    loss: float = 0.0
    duplicate: float = 0.0
    min_delay_ms: int = 1
    max_delay_ms: int = 5
    reorder: float = 0.0
    """Probability that a message gets an extra delay of up to ``reorder_ms`` (later ones overtake it)."""
    reorder_ms: int = 50
    disconnect: float = 0.75
    """Share of lost messages the sender notices as a broken connection (over TCP most losses surface
    as a reset connection; the rest time out, which with Kafka's defaults also expires the follower's
    fetch timeout)."""

    def describe(self) -> str:
        return (
            f"loss={self.loss:.3f} dup={self.duplicate:.3f} delay={self.min_delay_ms}-{self.max_delay_ms}ms "
            f"reorder={self.reorder:.3f}/{self.reorder_ms}ms"
        )


class Network:
    """Connectivity (partition groups plus one-way blocked links) and per-message fates."""

    __slots__ = ("rng", "faults", "_group", "_blocked", "_exempt")

    def __init__(self, rng: random.Random, exempt: Iterable[int] = ()) -> None:
        self.rng = rng
        self.faults = LinkFaults()
        self._group: dict[int, int] = {}
        self._blocked: set[tuple[int, int]] = set()
        self._exempt = frozenset(exempt)  # e.g. the admin client: reaches everyone

    # -- connectivity ------------------------------------------------------------------------------------

    def connected(self, src: int, dst: int) -> bool:
        if src in self._exempt or dst in self._exempt:
            return True
        g = self._group
        if g and g.get(src, 0) != g.get(dst, 0):
            return False
        return not self._blocked or (src, dst) not in self._blocked

    def partition(self, *groups: Iterable[int]) -> None:
        """Split into ``groups`` (nodes not listed stay together in a group of their own)."""
        self._group = {}
        for i, members in enumerate(groups, start=1):
            for n in members:
                self._group[n] = i

    def isolate(self, node_id: int) -> None:
        """Cut ``node_id`` off from everyone else (existing groups are kept)."""
        self._group[node_id] = max(self._group.values(), default=0) + 1

    def block(self, src: int, dst: int) -> None:
        """Drop everything from ``src`` to ``dst`` (one way)."""
        self._blocked.add((src, dst))

    def heal(self) -> None:
        self._group = {}
        self._blocked = set()

    def describe(self) -> str:
        parts = []
        if self._group:
            groups: dict[int, list[int]] = {}
            for n, g in sorted(self._group.items()):
                groups.setdefault(g, []).append(n)
            parts.append(
                " | ".join(",".join(map(str, m)) for _, m in sorted(groups.items())) + " | rest"
            )
        if self._blocked:
            parts.append(" ".join(f"{a}-x->{b}" for a, b in sorted(self._blocked)))
        return "; ".join(parts) or "fully connected"

    # -- fates ---------------------------------------------------------------------------------------------

    def fate(self) -> tuple[int, ...]:
        """Delays for the copies of one message: ``()`` lost, one delay, or two (duplicated)."""
        f, rng = self.faults, self.rng
        if f.loss and rng.random() < f.loss:
            return ()
        delay = (
            f.min_delay_ms
            if f.max_delay_ms <= f.min_delay_ms
            else rng.randint(f.min_delay_ms, f.max_delay_ms)
        )
        if f.reorder and rng.random() < f.reorder:
            delay += rng.randint(1, f.reorder_ms)
        if f.duplicate and rng.random() < f.duplicate:
            return (delay, delay + rng.randint(0, f.reorder_ms))
        return (delay,)

    def notices_loss(self) -> bool:
        f = self.faults
        return f.disconnect > 0 and self.rng.random() < f.disconnect
