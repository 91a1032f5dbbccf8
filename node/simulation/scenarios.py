"""The named scenarios. Each is a generator over a :class:`Simulation` (see :mod:`.script`): it waits
for a leader, injects faults, and the runner then appends :func:`converge`. Invariants are checked
after every event and liveness by the watchdog, whatever the scenario does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .hostile import INT32_MAX, HostilePeer
from .script import Until
from .simulation import Simulation
from .violation import Violation

Script = Iterator[Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Simulation], Script]
    doc: str
    options: dict[str, Any] = field(default_factory=dict)


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    **options: Any,
) -> Callable[[Callable[[Simulation], Script]], Callable[[Simulation], Script]]:
    def register(fn: Callable[[Simulation], Script]) -> Callable[[Simulation], Script]:
        SCENARIOS[fn.__name__] = Scenario(
            fn.__name__, fn, (fn.__doc__ or "").strip().splitlines()[0], options
        )
        return fn

    return register


# -- helpers -------------------------------------------------------------------------------------------


def leader_elected(sim: Simulation, timeout_ms: int = 30_000) -> Until:
    """Wait for a leader whose application has been told it leads (it is appending)."""

    def ready() -> bool:
        lid = sim.leader()
        return lid is not None and sim.nodes[lid].writable

    return Until(ready, timeout_ms, "a leader is elected and accepts appends")


def converge(sim: Simulation, timeout_ms: int = 60_000) -> Iterator[Any]:
    """Heal everything, restart every process, then require: a leader, a freshly appended record
    committed, and every node's application caught up to the leader's high watermark."""
    for node in sim.nodes.values():
        node.kill_on_next_fsync = False
    yield Until(
        lambda: not any(n.running and n.stopping for n in sim.nodes.values()),
        15_000,
        "shutdowns complete",
    )
    sim.set_faults(loss=0.0, duplicate=0.0, reorder=0.0)
    sim.heal()
    sim.restart_all()
    healed_at = sim.queue.now
    yield leader_elected(sim, timeout_ms)
    yield Until(
        lambda: sim.checker.data_committed_at > healed_at,
        timeout_ms,
        "a new append commits after healing",
    )
    target = sim.checker.committed_end

    def caught_up() -> bool:
        return all(n.applied_offset >= target for n in sim.running)

    yield Until(caught_up, timeout_ms, f"every node's application reaches offset {target}")


def minority_size(sim: Simulation) -> int:
    return (len(sim.voter_ids()) - 1) // 2


def followers(sim: Simulation) -> list[int]:
    lid = sim.leader()
    return [v for v in sim.voter_ids() if v != lid and sim.nodes[v].running]


def new_leader(sim: Simulation, not_id: int, timeout_ms: int = 30_000) -> Until:
    def ok() -> bool:
        lid = sim.leader()
        return lid is not None and lid != not_id and sim.nodes[lid].writable

    return Until(ok, timeout_ms, f"a leader other than {not_id} is elected")


def progress(sim: Simulation, timeout_ms: int = 30_000) -> Until:
    before = sim.checker.committed_end
    return Until(
        lambda: sim.checker.committed_end > before, timeout_ms, "the majority keeps committing"
    )


def done(change: Any, timeout_ms: int = 60_000) -> Until:
    return Until(
        lambda: change.result is not None,
        timeout_ms,
        f"admin {change.kind} of node {change.node_id} finishes",
    )


# -- scenarios -----------------------------------------------------------------------------------------


@scenario()
def steady(sim: Simulation) -> Script:
    """No faults: elect a leader, replicate, snapshot."""
    yield leader_elected(sim)
    yield sim.rng.randint(2000, 5000)


@scenario()
def message_loss(sim: Simulation) -> Script:
    """Random loss (0-20%), duplication, delay and reordering throughout."""
    r = sim.rng
    sim.set_faults(
        loss=r.uniform(0, 0.2),
        duplicate=r.uniform(0, 0.05),
        reorder=r.uniform(0, 0.2),
        max_delay_ms=r.randint(5, 20),
    )
    yield leader_elected(sim, 60_000)
    yield r.randint(4000, 9000)
    sim.set_faults(loss=r.uniform(0, 0.2))
    yield r.randint(2000, 5000)


@scenario()
def leader_isolation(sim: Simulation) -> Script:
    """The leader is cut off; the rest elect a new one; the old leader rejoins (with light loss)."""
    r = sim.rng
    sim.set_faults(loss=r.uniform(0, 0.05))
    for _ in range(r.randint(1, 3)):
        yield leader_elected(sim)
        old = sim.elected_leader()
        sim.isolate(old)
        yield new_leader(sim, old)
        yield r.randint(500, 5000)
        sim.heal()
        yield r.randint(1000, 4000)


@scenario()
def minority_partition(sim: Simulation) -> Script:
    """A random minority (sometimes with the leader) is partitioned away; the majority keeps committing."""
    r = sim.rng
    for _ in range(r.randint(1, 3)):
        yield leader_elected(sim)
        voters = sim.voter_ids()
        cut = r.sample(voters, r.randint(1, minority_size(sim)))
        sim.partition(cut)
        yield r.randint(500, 3000)
        yield progress(sim)
        sim.heal()
        yield r.randint(500, 3000)


@scenario()
def split_brain(sim: Simulation) -> Script:
    """Repeated splits: minority/majority (either side holding the leader) and no-majority splits."""
    r = sim.rng
    yield leader_elected(sim)
    for _ in range(r.randint(3, 6)):
        voters = sim.voter_ids()
        r.shuffle(voters)
        if r.random() < 0.3 and len(voters) >= 3:  # nobody has a majority
            a, b = sorted(r.sample(range(1, len(voters)), 2))
            sim.partition(voters[:a], voters[a:b])
        else:
            k = r.randint(1, minority_size(sim))
            sim.partition(voters[:k])
        yield r.randint(200, 4000)
        if r.random() < 0.5:
            sim.heal()
            yield r.randint(200, 3000)


@scenario()
def one_way_links(sim: Simulation) -> Script:
    """Asymmetric partitions: messages flow one way only between the leader and a follower."""
    r = sim.rng
    for _ in range(r.randint(1, 3)):
        yield leader_elected(sim)
        lid = sim.elected_leader()
        other = r.choice(followers(sim) or [lid])
        src, dst = (lid, other) if r.random() < 0.5 else (other, lid)
        sim.block(src, dst)
        yield r.randint(1000, 6000)
        sim.heal()
        yield r.randint(500, 2000)


@scenario()
def restarts(sim: Simulation) -> Script:
    """Crash and restart a minority at a time, the leader included, with and without unflushed loss."""
    r = sim.rng
    yield leader_elected(sim)
    for _ in range(r.randint(2, 5)):
        voters = sim.voter_ids()
        lid = sim.leader()
        victims = r.sample(voters, r.randint(1, minority_size(sim)))
        if lid is not None and r.random() < 0.4:
            victims = [lid]
        for v in victims:
            sim.kill(v, lose_unflushed=r.random() < 0.5)
        yield r.randint(200, 4000)
        for v in victims:
            sim.restart(v)
        yield r.randint(500, 3000)


@scenario()
def unflushed_loss(sim: Simulation) -> Script:
    """Crashes in the middle of an fsync (losing the unflushed log suffix), then a whole-cluster power loss."""
    r = sim.rng
    yield leader_elected(sim)
    for _ in range(r.randint(2, 4)):
        lid = sim.leader()
        target = lid if lid is not None and r.random() < 0.6 else r.choice(sim.voter_ids())
        sim.kill_during_next_fsync(target)
        yield r.randint(500, 3000)
        sim.restart(target)
        yield leader_elected(sim)
    for nid in list(sim.nodes):
        sim.kill(nid, lose_unflushed=True)
    yield r.randint(100, 2000)
    order = list(sim.nodes)
    r.shuffle(order)
    for nid in order:
        sim.restart(nid)
        yield r.randint(0, 1500)


@scenario()
def disk_loss(sim: Simulation) -> Script:
    """A minority loses its disks; each comes back with a new directory id and auto-joins (KIP-853)."""
    r = sim.rng
    yield leader_elected(sim)
    yield r.randint(500, 3000)
    victims = r.sample(sim.voter_ids(), r.randint(1, minority_size(sim)))
    for v in victims:
        sim.wipe(v)
    yield r.randint(500, 4000)
    for v in victims:
        sim.restart(v)
    keys = {v: sim.nodes[v].key for v in victims}

    def rejoined() -> bool:
        lid = sim.leader()
        return lid is not None and all(sim.nodes[lid].status().is_voter(k) for k in keys.values())

    yield Until(
        rejoined, 90_000, f"wiped nodes {sorted(keys)} rejoin as voters under new directory ids"
    )


@scenario()
def leader_removal(sim: Simulation) -> Script:
    """The admin removes the leader (it resigns once the removal commits), then adds it back; light loss."""
    r = sim.rng
    sim.set_faults(loss=r.uniform(0, 0.1))
    yield leader_elected(sim)
    old = sim.elected_leader()
    change = sim.remove_voter(old)
    yield done(change)
    if change.result not in ("NONE", "VOTER_NOT_FOUND"):
        raise Violation(f"removing leader {old} ended with {change.result}")
    yield Until(lambda: old not in sim.voter_ids(), 30_000, f"node {old} leaves the voter set")
    yield new_leader(sim, old)  # it resigns once its removal commits, even if the request expired
    yield r.randint(500, 3000)
    change = sim.add_voter(old)
    yield done(change)
    yield Until(lambda: old in sim.voter_ids(), 30_000, f"node {old} is a voter again")


@scenario(observers=1)
def voter_add_partitioned(sim: Simulation) -> Script:
    """An observer is added as a voter while one follower is partitioned away."""
    r = sim.rng
    new = max(sim.nodes)
    yield leader_elected(sim)
    yield Until(lambda: sim.nodes[new].applied_offset > 0, 30_000, f"observer {new} catches up")
    cut = r.choice(followers(sim))
    sim.isolate(cut)
    yield r.randint(0, 2000)
    change = sim.add_voter(new)
    yield done(change)
    if change.result != "NONE" and change.result != "DUPLICATE_VOTER":
        raise Violation(f"adding node {new} ended with {change.result}")
    yield progress(sim)
    yield r.randint(500, 3000)
    sim.heal()
    yield r.randint(500, 3000)


@scenario()
def graceful_shutdown(sim: Simulation) -> Script:
    """Graceful shutdowns (mostly of the leader: EndQuorumEpoch hands over quickly), then restarts."""
    r = sim.rng
    for _ in range(r.randint(2, 4)):
        yield leader_elected(sim)
        lid = sim.elected_leader()
        target = lid if r.random() < 0.7 else r.choice(sim.voter_ids())
        sim.shutdown(target)
        yield Until(
            lambda: not sim.nodes[target].running, 10_000, f"node {target} completes its shutdown"
        )
        if target == lid:
            yield new_leader(sim, lid, 10_000)
        yield r.randint(200, 3000)
        sim.restart(target)


class LeaderWatch:
    """Counts leader changes: every change of the (leader, epoch) the cluster shows, polled each
    ``every_ms`` virtual ms (read-only, so a watched run is the run unwatched)."""

    def __init__(self, sim: Simulation, every_ms: int = 10) -> None:
        self.sim, self.every_ms = sim, every_ms
        self.last = (sim.leader(), sim.epoch())
        self.changes: list[str] = []
        self.highest_epoch = self.last[1]
        self.stopped = False
        sim.queue.after(every_ms, self._poll)

    def _poll(self, _: Any = None) -> None:
        if self.stopped:
            return
        now = (self.sim.leader(), self.sim.epoch())
        self.highest_epoch = max(self.highest_epoch, now[1])
        if now != self.last:
            self.changes.append(f"{self.last} -> {now} at {self.sim.queue.now} ms")
            self.last = now
        self.sim.queue.after(self.every_ms, self._poll)

    def stop(self) -> list[str]:
        self.stopped = True
        return self.changes


def _rejoin(sim: Simulation) -> Script:
    r = sim.rng
    yield leader_elected(sim)
    yield 1000
    lid, epoch = sim.leader(), sim.epoch()
    cut = r.choice(followers(sim))
    watch = LeaderWatch(sim)
    sim.isolate(cut)
    yield r.randint(4000, 10000)  # several election timeouts
    sim.heal()
    yield 3000
    changes = watch.stop()
    sim.observations.update(
        leader_before=lid, epoch_before=epoch, leader_after=sim.leader(), epoch_after=sim.epoch()
    )
    sim.observations["leader_changes"] = len(changes)
    if sim.epoch() > epoch:
        sim.observations["epoch_bumped"] = 1


@scenario()
def prevote_rejoin(sim: Simulation) -> Script:
    """Pre-vote: a partitioned voter heals without bumping the epoch or unseating the leader."""
    yield from _rejoin(sim)
    o = sim.observations
    changed = (o["leader_after"], o["epoch_after"]) != (o["leader_before"], o["epoch_before"])
    if changed or o["leader_changes"]:
        raise Violation(
            f"StableLeadership: healed voter disrupted leader {o['leader_before']} epoch {o['epoch_before']} "
            f"(now leader {o['leader_after']} epoch {o['epoch_after']})"
        )


@scenario(pre_vote=False, vote_max_version=1)
def classic_rejoin(sim: Simulation) -> Script:
    """Without pre-vote (3.9 peers on Vote v1) a healed voter bumps the epoch (observed, not an error)."""
    yield from _rejoin(sim)


@scenario(kraft_version=0)
def kraft_upgrade(sim: Simulation) -> Script:
    """Static voters (kraft.version 0) upgraded to 1, then a follower removed and re-added under light loss."""
    r = sim.rng
    # Reordering and duplicates, but no loss while the followers report: a silently lost Fetch expires
    # the fetch timeout, and each new follower state starts the report period (2 x fetch timeout) over.
    sim.set_faults(duplicate=r.uniform(0, 0.05), reorder=r.uniform(0, 0.2))
    yield leader_elected(sim)
    # Each follower reports its directory id once per leader (UpdateRaftVoter, one period after it
    # starts following); the leader refuses the upgrade until all have.
    deadline = sim.queue.now + 120_000
    while not sim.upgrade_kraft_version(1):
        if sim.queue.now > deadline:
            raise Violation("Liveness: kraft.version was not upgraded within 120000 ms")
        yield r.randint(200, 1000)
    yield Until(
        lambda: all(n.status().kraft_version == 1 for n in sim.running),
        30_000,
        "every running node reads kraft.version 1",
    )
    sim.set_faults(loss=r.uniform(0, 0.05))
    target = r.choice(followers(sim))
    change = sim.remove_voter(target)
    yield done(change)
    if change.result not in ("NONE", "VOTER_NOT_FOUND"):
        raise Violation(f"removing node {target} after the upgrade ended with {change.result}")
    yield r.randint(500, 2000)
    change = sim.add_voter(target)
    yield done(change)
    yield Until(lambda: target in sim.voter_ids(), 30_000, f"node {target} is a voter again")


@scenario(observers=1)
def chaos(sim: Simulation) -> Script:
    """Everything at once: loss, partitions, crashes, fsync crashes, shutdowns, a disk loss, voter changes."""
    r = sim.rng
    sim.set_faults(loss=r.uniform(0, 0.2), duplicate=r.uniform(0, 0.03), reorder=r.uniform(0, 0.1))
    yield leader_elected(sim, 60_000)
    wipes = 0
    for _ in range(r.randint(4, 10)):
        action = r.choice(
            (
                "isolate",
                "partition",
                "heal",
                "kill",
                "restart",
                "fsync",
                "shutdown",
                "wipe",
                "change",
                "loss",
            )
        )
        voters = sim.voter_ids()
        down = [n for n in sim.nodes if not sim.nodes[n].running]
        if action == "isolate":
            sim.isolate(r.choice(list(sim.nodes)))
        elif action == "partition" and len(voters) >= 3:
            sim.partition(r.sample(voters, r.randint(1, minority_size(sim))))
        elif action == "heal":
            sim.heal()
        elif action == "kill" and len(down) < minority_size(sim):
            sim.kill(r.choice(voters), lose_unflushed=r.random() < 0.5)
        elif action == "restart" and down:
            sim.restart(r.choice(down))
        elif action == "fsync":
            sim.kill_during_next_fsync(r.choice(voters))
        elif action == "shutdown":
            sim.shutdown(r.choice(list(sim.nodes)))
        elif action == "wipe" and wipes == 0 and not down:
            wipes += 1
            victim = r.choice(voters)
            sim.wipe(victim)
            sim.queue.after(r.randint(100, 3000), sim.restart, victim)
        elif action == "change" and sim.admin.idle():
            obs = max(sim.nodes)
            (sim.remove_voter if obs in voters else sim.add_voter)(obs)
        elif action == "loss":
            sim.set_faults(loss=r.uniform(0, 0.2))
        yield r.randint(200, 4000)


# -- linearizable reads (issue #13): the read workload runs on every node throughout ------------------


@scenario(reads=True, observers=1)
def read_steady(sim: Simulation) -> Script:
    """Reads on the leader, followers and an observer while the counter grows; no faults."""
    yield leader_elected(sim)
    yield sim.rng.randint(2000, 5000)


@scenario(reads=True, observers=1)
def read_leader_isolation(sim: Simulation) -> Script:
    """Reads continue while the leader is cut off (a deposed leader must not answer), then rejoins."""
    r = sim.rng
    for _ in range(r.randint(1, 3)):
        yield leader_elected(sim)
        old = sim.elected_leader()
        sim.isolate(old)
        yield new_leader(sim, old)
        yield r.randint(500, 3000)
        sim.heal()
        yield r.randint(500, 2000)


@scenario(reads=True, observers=1)
def read_partition(sim: Simulation) -> Script:
    """A random minority, sometimes with the leader, is cut off while reads run everywhere."""
    r = sim.rng
    for _ in range(r.randint(1, 3)):
        yield leader_elected(sim)
        cut = r.sample(sim.voter_ids(), r.randint(1, minority_size(sim)))
        sim.partition(cut)
        yield r.randint(500, 3000)
        yield progress(sim)
        sim.heal()
        yield r.randint(500, 2000)


@scenario(reads=True, observers=1)
def read_message_loss(sim: Simulation) -> Script:
    """Reads under loss, duplication, delay and reordering (ReadOffset requests and pings get lost)."""
    r = sim.rng
    sim.set_faults(
        loss=r.uniform(0, 0.2),
        duplicate=r.uniform(0, 0.05),
        reorder=r.uniform(0, 0.2),
        max_delay_ms=r.randint(5, 20),
    )
    yield leader_elected(sim, 60_000)
    yield r.randint(3000, 6000)


@scenario(reads=True, observers=1)
def read_restarts(sim: Simulation) -> Script:
    """Nodes, the leader among them, crash and restart while reads wait on them and on others."""
    r = sim.rng
    for _ in range(r.randint(1, 3)):
        yield leader_elected(sim)
        victim = r.choice([sim.elected_leader(), *followers(sim)])
        sim.kill(victim)
        yield r.randint(200, 2000)
        sim.restart(victim)
        yield r.randint(500, 2000)


ELECTION_TIMEOUT_MS = 1000  # the nodes' controller.quorum.election.timeout.ms (the core's default)


@scenario(hostile=True)
def hostile_peer(sim: Simulation) -> Script:
    """A non-member lies (any epoch up to 2^31-1, leader claims, stranger votes, replays), then spoofs voters."""
    r = sim.rng
    yield leader_elected(sim)
    yield 1000
    peer = HostilePeer(sim)
    sim.add_party(peer, f"hostile peer n{peer.id}")
    watch = LeaderWatch(sim)
    peer.start(r.randint(5000, 15000))
    yield Until(lambda: not peer.active(), 20_000, "the hostile peer to stop")
    unexplained = watch.stop()
    if unexplained:  # nothing but lies a node can detect: no leader may have moved
        raise Violation(f"UnexplainedLeaderChange: {len(unexplained)}, first {unexplained[0]}")
    sim.inject("hostile peer now claims voters' identities")
    sim.checker.trust_persisted_leaders = False  # a node may now persist a spoofed leader
    watch = LeaderWatch(sim)
    peer.start(r.randint(2000, 6000), spoof=True)
    yield Until(lambda: not peer.active(), 20_000, "the hostile peer to stop")
    sim.inject("hostile peer stops")
    yield leader_elected(sim, 5 * 2 * ELECTION_TIMEOUT_MS)  # a few election timeouts
    spoofed = watch.stop()
    epochs = [watch.highest_epoch] + [n.status().epoch for n in sim.running]
    if max(epochs) >= INT32_MAX:
        raise Violation(f"EpochInRange: epoch {max(epochs)} reached")
    sim.observations.update(
        hostile_sent=sum(peer.sent.values()),
        leader_changes_unexplained=0,
        leader_changes_spoofed=len(spoofed),
        hostile_answers=dict(sorted(peer.answers.items())),
    )
