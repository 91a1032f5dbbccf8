"""The simulated cluster: nodes, network, workload, admin, invariant checks and the event loop.

Everything random comes from one ``random.Random(seed)`` (network fates, per-run parameters, each
process's election jitter), and time is the virtual clock of :class:`.events.EventQueue`, so a seed
replays a run exactly. Scenarios drive it through the fault methods at the bottom (``isolate``,
``kill``, ``wipe``, ``add_voter``, ...), each of which is written to the trace.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

from kraftwire.generated import api_keys, errors
from kraftwire.node.core import Config, Endpoint, ReplicaKey, Role, VoterSpec

from .admin import AdminClient, VoterChange
from .events import EventQueue
from .host import Disk, Failure, Party
from .invariants import Checker
from .linearizability import History
from .linearizability import check as check_history
from .liveness import WATCHDOG_MS, Liveness
from .network import ADMIN_ID, HOSTILE_ID, LISTENER, LinkFaults, Network, endpoint_of
from .node import SimNode
from .script import ScriptRunner
from .trace import Trace, TraceFilter
from .violation import Violation
from .wire import Envelope, WireCodec

EXPLAINED_REFUSALS = (" is not a voter", ": names this node leader of epoch ")
"""Refusals honest peers cause too (see :meth:`Simulation.refused`)."""


@dataclass
class SimOptions:
    voters: int = 3
    observers: int = 0
    encode: bool = True
    """Send every message through the generated wire codecs (frames, at negotiated versions)."""
    pre_vote: bool = True
    vote_max_version: int | None = None
    """Cap the Vote API (1 models Kafka 3.9 peers: no pre-vote)."""
    trace_limit: int | None = 400
    trace_filter: tuple[str, ...] = ()
    """``--trace-filter`` terms (see :class:`.trace.TraceFilter`): only matching entries are kept."""
    liveness_bound_ms: int = 60_000
    max_events: int = 5_000_000
    append_interval_ms: tuple[int, int] = (20, 100)
    kraft_version: int = 1
    """0 starts from static ``controller.quorum.voters`` (the upgrade scenario raises it to 1)."""
    reads: bool = False
    """Run the linearizable-read workload (issue #13) and check the history at the end."""
    read_interval_ms: tuple[int, int] = (5, 40)
    read_timeout_ms: int = 5000
    hostile: bool = False
    """A hostile peer is on the network: refused messages are expected, not a violation."""


class Simulation:
    def __init__(self, seed: int | str, options: SimOptions | None = None) -> None:
        self.seed = seed
        self.options = opts = options or SimOptions()
        self.rng = rng = random.Random(seed)
        self.queue = EventQueue()
        self.net = Network(rng, exempt=(ADMIN_ID, HOSTILE_ID))
        self.codec = WireCodec(opts.encode)
        self.trace = Trace(
            opts.trace_limit, TraceFilter(opts.trace_filter) if opts.trace_filter else None
        )
        self.checker = Checker(self)
        self.liveness = Liveness(self, self.checker, self.net, opts.liveness_bound_ms)
        self.admin = AdminClient(self)
        self.core_events = 0
        self.history = History()
        # the read workload's own random stream: the other scenarios' draws stay as they were
        self.read_rng = random.Random(f"{seed}/reads")
        self.next_read_id = 0
        self.observations: dict[str, Any] = {}  # what a scenario measured, for tests and reports
        self.cluster_id = "sim-" + format(rng.getrandbits(32), "08x")
        # Per-run parameters: small fetch and snapshot chunk sizes force multi-round catch-up and
        # chunked FetchSnapshot; the snapshot interval decides how often followers fall behind a snapshot.
        self.snapshot_every = rng.randint(5, 30)
        node_config = dict(
            fetch_max_bytes=rng.choice((512, 4096, 1 << 20)),
            fetch_snapshot_max_bytes=rng.choice((64, 200, 1 << 20)),
            pre_vote=opts.pre_vote,
        )
        self.nodes: dict[int, SimNode] = {}
        self.endpoints: dict[int, Party] = {ADMIN_ID: self.admin}
        for nid in range(1, opts.voters + opts.observers + 1):
            disk = Disk(self._new_directory_id())
            node = SimNode(self, nid, disk, dict(node_config), self.snapshot_every)
            node.fsync_ms = rng.choice((0, 1, 1, 2))
            if opts.vote_max_version is not None:
                node.versions[api_keys.VOTE] = opts.vote_max_version
            self.nodes[nid] = self.endpoints[nid] = node
        self.bootstrap_voters = [
            VoterSpec(self.nodes[i].key, {LISTENER: endpoint_of(i)}, (0, 1))
            for i in range(1, opts.voters + 1)
        ]
        # controller.quorum.bootstrap.servers: the initial voters' addresses, as for a cluster
        # formatted with --initial-controllers
        self.by_endpoint = {endpoint_of(nid): nid for nid in self.nodes}
        for node in self.nodes.values():
            node.config["bootstrap_servers"] = tuple(
                endpoint_of(i) for i in range(1, opts.voters + 1)
            )
        self.trace.note(
            0,
            "setup",
            "setup",
            f"seed={seed}",
            f"voters={opts.voters}",
            f"observers={opts.observers}",
            f"snapshot_every={self.snapshot_every}",
            " ".join(f"{k}={v}" for k, v in node_config.items()),
        )

    def _new_directory_id(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128) | 1)

    # -- running ---------------------------------------------------------------------------------------

    def start(self) -> None:
        for node in self.nodes.values():
            node.start()
        self.queue.after(self.rng.randint(*self.options.append_interval_ms), self._workload)
        self.queue.after(WATCHDOG_MS, self._watchdog)
        if self.options.reads:
            self.queue.after(
                self.read_rng.randint(*self.options.read_interval_ms), self._read_workload
            )

    def run_script(self, script: Iterator[Any], limit_ms: int) -> None:
        """Run events until ``script`` (a generator yielding sleeps and waits) is finished."""
        runner = ScriptRunner(self.queue, script)
        deadline = self.queue.now + limit_ms
        self.queue.after(0, runner.resume)
        queue, check, max_events = self.queue, self.checker.after_event, self.options.max_events
        while not runner.done:
            popped = queue.pop()
            if popped is None:
                raise Violation("the event queue ran dry")
            action, arg = popped
            action(arg)
            check()
            if queue.now > deadline:
                raise Violation(f"the scenario did not finish within {limit_ms} ms of virtual time")
            if self.core_events > max_events:
                raise Violation(f"event budget of {max_events} core events exceeded (a busy loop?)")

    def _workload(self, _: Any) -> None:
        for node in self.running:
            if node.writable and node.pending is None and not node.stopping:
                node.append_next()
        self.queue.after(self.rng.randint(*self.options.append_interval_ms), self._workload)

    def _read_workload(self, _: Any) -> None:
        """One linearizable read on a random running node (leader, follower or observer)."""
        ready = [n for n in self.running if n.pending is None and not n.stopping]
        if ready:
            self.next_read_id += 1
            self.read_rng.choice(ready).read(self.next_read_id, self.options.read_timeout_ms)
        interval = self.options.read_interval_ms
        self.queue.after(self.read_rng.randint(*interval), self._read_workload)

    def check_linearizable(self) -> None:
        """The read workload's history must be linearizable (raises :class:`Violation`)."""
        history = self.history
        ops = history.operations()
        self.observations.update(
            reads=len(history.reads), failed_reads=history.failed_reads, writes=len(history.writes)
        )
        problem = check_history(ops)
        if problem is not None:
            raise Violation(f"Linearizability ({len(ops)} operations): {problem}")

    def _watchdog(self, _: Any) -> None:
        self.liveness.check()
        self.queue.after(WATCHDOG_MS, self._watchdog)

    # -- the host of the nodes and the admin client (see .node.NodeHost and .admin.AdminHost) ---------

    @property
    def running(self) -> list[SimNode]:
        """The running processes in id order."""
        return [node for node in self.nodes.values() if node.core is not None]

    def core_config(self, node: SimNode) -> Config:
        return Config(
            node_id=node.id,
            directory_id=node.disk.directory_id,
            cluster_id=self.cluster_id,
            voters=self.bootstrap_voters,
            rng=random.Random(self.rng.getrandbits(64)),
            start_ms=self.queue.now,
            listeners={LISTENER: endpoint_of(node.id)},
            kraft_version=self.options.kraft_version,
            **node.config,
        )

    def core_event(self, node: SimNode) -> None:
        self.core_events += 1
        self.checker.touched[node.id] = node

    def running_voters(self) -> list[int]:
        return [n.id for n in self.running if n.status().is_voter(n.key)]

    def replica_key(self, node_id: int) -> ReplicaKey | None:
        node = self.nodes.get(node_id)
        return None if node is None else node.key

    def exited(self, node: SimNode) -> None:
        node.stop(lose_unflushed=False)
        self.liveness.disrupted()

    def refused(self, node: SimNode, line: str) -> None:
        """Among honest peers a refusal means a node lied, i.e. a bug, unless it is one the faults
        explain: a voter set not yet caught up (a voter change) or a node whose disk was wiped being
        named leader of an epoch it led before."""
        self.observations["refused"] = self.observations.get("refused", 0) + 1
        if self.options.hostile or any(reason in line for reason in EXPLAINED_REFUSALS):
            return
        raise Violation(f"HonestPeers: node {node.id} {line}")

    def crash_mid_fsync(self, node: SimNode) -> None:
        self.trace.note(
            self.queue.now, "crash", f"n{node.id}", "CRASH during fsync (unflushed data lost)"
        )
        node.stop(lose_unflushed=True)
        self.liveness.disrupted()

    # -- the network -----------------------------------------------------------------------------------

    def send_request(
        self,
        src: Party,
        dest_id: int,
        cid: int,
        request: Any,
        min_version: int,
        endpoint: Endpoint | None = None,
    ) -> None:
        dst = self.endpoints.get(dest_id)
        api_key = request.API_KEY
        if dst is None:
            # not a node id (a bootstrap server's synthetic id): connect by address
            node = None if endpoint is None else self.nodes.get(self.by_endpoint.get(endpoint, 0))
            if node is None or not isinstance(src, SimNode):
                failure = (dest_id, cid, api_key, errors.BROKER_NOT_AVAILABLE)
                return self._fail_later(src, src.inc, failure, 1)
            src.alias(node.id, cid, dest_id)
            dest_id, dst = node.id, node
        version = WireCodec.request_version(request, dst.versions)
        if version < min_version:
            failure = (dest_id, cid, api_key, errors.UNSUPPORTED_VERSION)
            return self._fail_later(src, src.inc, failure, 1)
        if not dst.running:  # connection refused
            failure = (dest_id, cid, api_key, errors.BROKER_NOT_AVAILABLE)
            return self._fail_later(src, src.inc, failure, self.rng.randint(1, 5))
        payload = self.codec.pack_request(request, version, cid)
        self._transmit(
            Envelope(src.id, dest_id, src.inc, dst.inc, True, api_key, version, cid, payload)
        )

    def send_response(
        self,
        src: SimNode,
        dest_id: int,
        dest_inc: int | None,
        cid: int,
        version: int,
        response: Any,
    ) -> None:
        if dest_inc is None:
            return  # the requester's connection is gone
        payload = self.codec.pack_response(response, version, cid)
        self._transmit(
            Envelope(
                src.id, dest_id, src.inc, dest_inc, False, response.API_KEY, version, cid, payload
            )
        )

    def _transmit(self, env: Envelope) -> None:
        net = self.net
        if not net.connected(env.src, env.dst):
            self._dropped(env, "partitioned")
            return
        delays = net.fate()
        if not delays:
            self._dropped(env, "lost")
            if net.notices_loss():  # the connection broke: the requester learns it
                requester = self.endpoints[env.src if env.is_request else env.dst]
                inc = env.src_inc if env.is_request else env.dst_inc
                other = env.dst if env.is_request else env.src
                failure = (other, env.correlation_id, env.api_key, errors.BROKER_NOT_AVAILABLE)
                self._fail_later(requester, inc, failure, self.rng.randint(1, 5))
            return
        for d in delays:
            self.queue.after(d, self._deliver, env)

    def _deliver(self, env: Envelope) -> None:
        if not self.net.connected(env.src, env.dst):
            self._dropped(env, "partitioned in flight")
            return
        dst, src = self.endpoints[env.dst], self.endpoints[env.src]
        if dst.inc != env.dst_inc or not dst.running or src.inc != env.src_inc or not src.running:
            # the connection died with one end; a live requester sees the disconnect
            if env.is_request and src.running and src.inc == env.src_inc:
                failure = (env.dst, env.correlation_id, env.api_key, errors.BROKER_NOT_AVAILABLE)
                self._fail_later(src, src.inc, failure, 1)
            return
        dst.receive(env)

    def _dropped(self, env: Envelope, why: str) -> None:
        self.trace.add((self.queue.now, "drop", env.src, env.dst, env.api_key, env.is_request, why))

    def _fail_later(self, requester: Party, inc: int, failure: Failure, delay: int) -> None:
        """``requester`` (incarnation ``inc``) learns after ``delay`` ms that its request failed."""
        self.queue.after(delay, self._fail, (requester, inc, failure))

    def _fail(self, arg: tuple[Party, int, Failure]) -> None:
        src, inc, failure = arg
        if src.running and src.inc == inc:
            src.request_failed(failure)

    # -- queries for scenarios -------------------------------------------------------------------------

    def leader(self) -> int | None:
        """The running leader of the highest epoch, if any."""
        best, best_epoch = None, -1
        for n in self.running:
            status = n.status()
            if status.role is Role.LEADER and status.epoch > best_epoch:
                best, best_epoch = n.id, status.epoch
        return best

    def elected_leader(self) -> int:
        """The leader a script has just waited for with :func:`.scenarios.leader_elected`."""
        lid = self.leader()
        if lid is None:
            raise Violation("no leader right after one was elected")
        return lid

    def voter_ids(self) -> list[int]:
        ref = self.liveness.reference_node()
        if ref is None:  # nothing runs: the voters as configured
            return [spec.key.id for spec in self.bootstrap_voters]
        assert ref.core is not None
        return list(ref.core.status().voter_ids())

    def epoch(self) -> int:
        return max((n.status().epoch for n in self.running), default=0)

    # -- faults (each one is traced and restarts the liveness clock) ----------------------------------

    def _fault(self, *words: Any) -> None:
        self.trace.note(self.queue.now, "fault", "FAULT", *words)
        self.liveness.disrupted()

    def add_party(self, party: Party, *what: Any) -> None:
        """Put another party on the network (the hostile peer); traced as a fault."""
        self.endpoints[party.id] = party
        self._fault("party joins:", *what)

    def inject(self, *what: Any) -> None:
        """A fault a party of the scenario's own injects (traced; restarts the liveness clock)."""
        self._fault(*what)

    def set_faults(self, **changes: Any) -> None:
        f = self.net.faults
        self.net.faults = LinkFaults(**{**f.__dict__, **changes})
        self._fault("link faults", self.net.faults.describe())

    def isolate(self, node_id: int) -> None:
        self.net.isolate(node_id)
        self._fault("isolate", f"n{node_id}", "->", self.net.describe())

    def partition(self, *groups: list[int]) -> None:
        self.net.partition(*groups)
        self._fault("partition", self.net.describe())

    def block(self, src: int, dst: int) -> None:
        self.net.block(src, dst)
        self._fault("block", self.net.describe())

    def heal(self) -> None:
        self.net.heal()
        self._fault("heal")

    def kill(self, node_id: int, lose_unflushed: bool = False) -> None:
        node = self.nodes[node_id]
        if node.running:
            self._fault("kill", f"n{node_id}", "(unflushed data lost)" if lose_unflushed else "")
            node.stop(lose_unflushed)

    def kill_during_next_fsync(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.running:
            self._fault("arm crash during the next fsync of", f"n{node_id}")
            node.kill_on_next_fsync = True

    def restart(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if not node.running:
            self._fault("restart", f"n{node_id}")
            node.start()

    def wipe(self, node_id: int, auto_join: bool = True) -> None:
        """Crash and lose the whole disk: the node comes back (on :meth:`restart`) with a new directory
        id, i.e. as an observer, and with ``auto_join`` replaces its old voter entry by itself."""
        node = self.nodes[node_id]
        old = node.key
        self.kill(node_id, lose_unflushed=True)
        node.disk = Disk(self._new_directory_id())
        node.config = {**node.config, "auto_join": auto_join}
        self.checker.on_wipe(node_id, old)
        self._fault(
            "wipe disk of", f"n{node_id}", f"new directory {str(node.disk.directory_id)[:8]}"
        )

    def shutdown(self, node_id: int, timeout_ms: int = 5000) -> None:
        node = self.nodes[node_id]
        if node.running and not node.stopping:
            self._fault("graceful shutdown of", f"n{node_id}")
            node.shutdown(timeout_ms)

    def add_voter(self, node_id: int) -> VoterChange:
        self._fault("admin: add voter", f"n{node_id}")
        return self.admin.submit(VoterChange("add", node_id))

    def remove_voter(self, node_id: int) -> VoterChange:
        self._fault("admin: remove voter", f"n{node_id}")
        return self.admin.submit(VoterChange("remove", node_id, self.nodes[node_id].key))

    def upgrade_kraft_version(self, version: int = 1) -> bool:
        """The operator's ``kafka-features upgrade --feature kraft.version``: asks the current leader;
        True once the leader runs at ``version`` (it appended the upgrade now or earlier)."""
        lid = self.leader()
        if lid is None:
            return False
        node = self.nodes[lid]
        outcome = node.upgrade_kraft_version(version)
        self._fault("admin: upgrade kraft.version", f"n{lid}", outcome)
        return node.running and node.status().kraft_version >= version

    def restart_all(self) -> None:
        for nid, node in self.nodes.items():
            if not node.running:
                self.restart(nid)
