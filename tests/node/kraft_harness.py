"""An interactive cluster for the transcript tests: nodes, a scripted network and the commands.

Time is global (``tick``). Election jitter is pinned per node ((id - 1) x 150 ms), so timeouts are
exact: election = T + jitter, fetch = F. ``campaign N`` fires node N's election/fetch timer at once,
like etcd's ``campaign``. Messages wait on the network until ``deliver``/``stabilize``; a partition drops
them. A peer whose highest version of an API is below a request's ``min_version`` (``versions``)
answers with a synthetic ``UNSUPPORTED_VERSION`` failure, as Kafka's network layer does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import kraft_fmt as fmt
from kraft_datadriven import Command
from kraftwire.node.core import (
    Config,
    Endpoint,
    KRaftCore,
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    ReplicaKey,
    VoterSpec,
)
from kraftwire.node.core.api import (
    CommittedBatch,
    LeaderChanged,
    OutboundRequest,
    ReadFailed,
    ReadReady,
    OutboundResponse,
    QuorumStatus,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    Shutdown,
    SnapshotLoaded,
    Tick,
)
from kraftwire.generated import errors
import kraft_requests as requests_dsl

LISTENER = "CONTROLLER"


def _wire(msg: Any, version: int) -> Any:
    """Every message really crosses the wire: encode at the negotiated version and decode again."""
    return type(msg).decode(msg.encode(version), version)


class FixedJitter:
    """Pins election jitter to a fixed per-node value ((id - 1) x 150 ms) so transcripts are exact and
    simultaneous timeouts (endless split votes) cannot happen."""

    def __init__(self, node_id: int) -> None:
        self.jitter = max(0, node_id - 1) * 150

    def randrange(self, stop: int) -> int:
        return min(self.jitter, stop - 1)


def _status_line(status: QuorumStatus) -> str:
    leader = "-" if status.leader_id is None else status.leader_id
    hw = "-" if status.high_watermark is None else status.high_watermark
    return (
        f"{status.role.value} epoch={status.epoch} leader={leader} hw={hw} "
        f"leo={status.log_end_offset} voters={','.join(map(str, status.voter_ids()))}"
    )


def dir_id(node_id: int) -> uuid.UUID:
    return uuid.UUID(int=node_id)


def endpoint(node_id: int) -> Endpoint:
    return Endpoint(f"n{node_id}", 9000 + node_id)


def voter_spec(node_id: int) -> VoterSpec:
    return VoterSpec(ReplicaKey(node_id, dir_id(node_id)), {LISTENER: endpoint(node_id)}, (0, 1))


@dataclass
class Node:
    id: int
    cfg_kwargs: dict
    log: MemoryLog = field(default_factory=MemoryLog)
    qs: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    snaps: MemorySnapshotStore = field(default_factory=MemorySnapshotStore)
    core: KRaftCore | None = None
    committed: list[tuple[int, bytes]] = field(default_factory=list)


class Env:
    def __init__(self) -> None:
        self.now = 0
        self.nodes: dict[int, Node] = {}
        self.net: list[tuple[int, Any]] = []
        self.groups: dict[int, int] = {}  # partition group per node (absent = 0)
        self.versions: dict[int, dict[str, int]] = {}
        self.voter_ids: list[int] = []
        self.kraft = 1
        self.base_kwargs: dict = {}
        self.injected = 0

    # -- node lifecycle ------------------------------------------------------------------------------

    def _config(self, nid: int, **kw: Any) -> Config:
        voters = [voter_spec(i) for i in self.voter_ids]
        args = dict(
            node_id=nid,
            directory_id=dir_id(nid),
            cluster_id="cluster",
            voters=voters,
            rng=FixedJitter(nid),
            start_ms=self.now,
            kraft_version=self.kraft,
            listeners={LISTENER: endpoint(nid)},
            append_linger_ms=0,
            pre_vote_jitter_ms=0,  # transcripts that show it set it (add-nodes jitter=)
        )
        args.update(self.base_kwargs)
        args.update(kw)
        return Config(**args)

    def start(self, nid: int, out: list[str]) -> None:
        node = self.nodes[nid]
        node.core = KRaftCore(self._config(nid, **node.cfg_kwargs), node.log, node.qs, node.snaps)
        self.process(nid, out)

    # -- driving -------------------------------------------------------------------------------------

    def process(self, nid: int, out: list[str]) -> None:
        """The driver loop: persist, flush, send, notify, advance."""
        node = self.nodes[nid]
        core = node.core
        assert core is not None
        while core.has_ready():
            rd = core.ready()
            if rd.quorum_state is not None:
                node.qs.write(rd.quorum_state)
                out.append(f"{nid}: persist {fmt.election_state(rd.quorum_state)}")
            if rd.log_truncated_to is not None:
                out.append(f"{nid}: truncate to {rd.log_truncated_to}")
            for b in rd.log_appended:
                out.append(f"{nid}: append {fmt.batch_summary(b)}")
            if rd.flush_log_to is not None:
                node.log.flush(rd.flush_log_to)
            for w in rd.snapshot_writes:
                out.append(f"{nid}: snapshot {w.kind} ({w.snapshot_id.end_offset},{w.snapshot_id.epoch})")
            for m in rd.messages:
                out.append(fmt.message(m, nid))
                self.net.append((nid, m))
            for n in rd.notifications:
                out.append(f"{nid}: {self._notification(node, n)}")
            for line in rd.refused:
                out.append(f"{nid}: {line}")
            if rd.shutdown_complete:
                out.append(f"{nid}: shutdown complete")
            core.advance(rd)

    def _notification(self, node: Node, n: Any) -> str:
        if isinstance(n, CommittedBatch):
            node.committed.extend((n.base_offset + i, r) for i, r in enumerate(n.records))
            what = ",".join(r.decode() for r in n.records) if n.records else "ctl"
            return f"commit {n.base_offset}..{n.last_offset}@e{n.epoch} {what}"
        if isinstance(n, SnapshotLoaded):
            node.committed = [
                (int(o), r.encode()) for o, r in (x.split(":", 1) for x in b"".join(n.records).decode().split(",") if x)
            ]
            return f"load snapshot ({n.snapshot_id.end_offset},{n.snapshot_id.epoch}) {','.join(r.decode() for r in n.records)}"
        if isinstance(n, ReadReady):
            return f"read {n.read_id} ready offset={n.offset}"
        if isinstance(n, ReadFailed):
            return f"read {n.read_id} failed {errors.name(n.error_code)}"
        assert isinstance(n, LeaderChanged)
        lid = "-" if n.leader.leader_id is None else n.leader.leader_id
        return f"leader-change leader={lid} epoch={n.leader.epoch}"

    def step(self, nid: int, event: Any, out: list[str]) -> None:
        node = self.nodes[nid]
        before = node.core.status().describe().split(" hw=")[0]  # an HW change is no transition
        node.core.step(event)
        after = node.core.status().describe().split(" hw=")[0]
        if before != after:
            out.append(f"{nid}: {before} -> {after}")
        self.process(nid, out)

    def connected(self, a: int, b: int) -> bool:
        return self.groups.get(a, 0) == self.groups.get(b, 0)

    def max_version(self, nid: int, cls: Any) -> int:
        name = type(cls).__name__.replace("Request", "")
        return self.versions.get(nid, {}).get(name, cls.HIGHEST_VERSION)

    def deliver_one(self, src: int, m: Any, out: list[str]) -> None:
        dst = m.destination
        if dst not in self.nodes or self.nodes[dst].core is None:
            return
        if not self.connected(src, dst):
            return
        if isinstance(m, OutboundRequest):
            version = min(m.request.HIGHEST_VERSION, self.max_version(dst, m.request))
            if version < m.min_version:
                out.append(f"{src}: {type(m.request).__name__} to {dst} fails: UNSUPPORTED_VERSION")
                self.step(src, RequestFailed(dst, m.correlation_id, errors.UNSUPPORTED_VERSION, self.now), out)
                return
            req = _wire(m.request, version)
            self.step(dst, RequestReceived(src, m.correlation_id, version, req, self.now), out)
        else:
            resp = _wire(m.response, m.api_version)
            self.step(dst, ResponseReceived(src, m.correlation_id, m.api_version, resp, self.now), out)

    def deliver(self, cmd: Command, out: list[str]) -> None:
        src_f = cmd.kwargs.get("from")
        dst_f = cmd.kwargs.get("to")
        drop = cmd.kwargs.get("drop") == "true"
        pending, self.net = self.net, []
        for src, m in pending:
            if (src_f and int(src_f) != src) or (dst_f and int(dst_f) != m.destination):
                self.net.append((src, m))
                continue
            if drop:
                out.append(f"dropped {fmt.message(m, src)}")
                continue
            self.deliver_one(src, m, out)

    # -- commands ------------------------------------------------------------------------------------

    def handle(self, cmd: Command) -> str:
        out: list[str] = []
        getattr(self, "cmd_" + cmd.name.replace("-", "_"))(cmd, out)
        return "\n".join(out)

    def cmd_add_nodes(self, cmd: Command, out: list[str]) -> None:
        n = cmd.int_arg(0)
        self.kraft = int(cmd.kwargs.get("kraft", "1"))
        for key, name in (
            ("election", "election_timeout_ms"),
            ("fetch", "fetch_timeout_ms"),
            ("backoff", "election_backoff_max_ms"),
            ("snapmax", "fetch_snapshot_max_bytes"),
            ("linger", "append_linger_ms"),
            ("reqtimeout", "request_timeout_ms"),
            ("jitter", "pre_vote_jitter_ms"),
        ):
            if key in cmd.kwargs:
                self.base_kwargs[name] = int(cmd.kwargs[key])
        if cmd.kwargs.get("prevote") == "false":
            self.base_kwargs["pre_vote"] = False
        # start=<ms>: the clock starts there instead of 0 (Kafka's MockTime starts at the wall clock)
        self.now = int(cmd.kwargs.get("start", self.now))
        self.voter_ids = list(range(1, n + 1))
        for i in self.voter_ids:
            self.nodes[i] = Node(i, {})
        down = {int(x) for x in cmd.kwargs.get("down", "").split(",") if x}
        for i in self.voter_ids:
            if i not in down:  # a configured voter that never runs (a stand-in for scripted peers)
                self.start(i, out)

    def cmd_bootstrap(self, cmd: Command, out: list[str]) -> None:
        """bootstrap <n> [leader=<id>] [add-nodes options]: ``add-nodes <n>``, ``campaign <leader>``
        (default 1) and ``stabilize``, showing only where that leaves each node: the quorum with an
        elected leader and its first batch committed everywhere that most transcripts start from
        (election.txt spells the same steps out)."""
        leader = cmd.kwargs.pop("leader", "1")
        hidden: list[str] = []
        self.cmd_add_nodes(cmd, hidden)
        self.cmd_campaign(Command("campaign", [leader], {}), hidden)
        self.cmd_stabilize(Command("stabilize", [], {}), hidden)
        if "(did not stabilize)" in hidden:
            out.append("(did not stabilize)")
        for nid, node in sorted(self.nodes.items()):
            if node.core is not None:
                out.append(f"{nid}: {_status_line(node.core.status())}")

    def cmd_add_observer(self, cmd: Command, out: list[str]) -> None:
        """add-observer 4 auto_join=true dir=44: start node 4 outside the voter set; ``auto_join`` sets
        ``controller.quorum.auto.join.enable``, ``dir`` its directory id (default: its node id), e.g.
        a voter id coming back on a replaced disk."""
        nid = cmd.int_arg(0)
        kw: dict = {}
        if "auto_join" in cmd.kwargs:
            kw["auto_join"] = cmd.kwargs["auto_join"] == "true"
        if "dir" in cmd.kwargs:
            kw["directory_id"] = uuid.UUID(int=int(cmd.kwargs["dir"]))
        self.nodes[nid] = Node(nid, kw)
        self.start(nid, out)

    def cmd_versions(self, cmd: Command, out: list[str]) -> None:
        """versions 2 Vote=1: node 2 speaks at most Vote v1."""
        nid = cmd.int_arg(0)
        self.versions[nid] = {k: int(v) for k, v in cmd.kwargs.items()}

    def cmd_tick(self, cmd: Command, out: list[str]) -> None:
        self.now += int(cmd.kwargs.get("ms", cmd.arg(0, "0")))
        for nid, node in sorted(self.nodes.items()):
            if node.core is not None:
                self.step(nid, Tick(self.now), out)

    def cmd_run(self, cmd: Command, out: list[str]) -> None:
        """run <ms> step=<ms> show=A,B: repeat (tick step; stabilize); print only state changes and
        persists, plus every line containing one of the ``show`` substrings (e.g. ``show=RaftVoter``)."""
        total, step = cmd.int_arg(0), int(cmd.kwargs.get("step", "100"))
        show = [x for x in cmd.kwargs.get("show", "").split(",") if x]
        lines: list[str] = []
        for _ in range(total // step):
            self.cmd_tick(Command("tick", [str(step)], {}), lines)
            self.cmd_stabilize(Command("stabilize", [], {"rounds": "50"}), lines)
        out.extend(
            l for l in lines if " -> " in l or ": persist " in l or "did not" in l or any(x in l for x in show)
        )

    def cmd_campaign(self, cmd: Command, out: list[str]) -> None:
        nid = cmd.int_arg(0)
        st = self.nodes[nid].core.state
        for attr in ("election_deadline", "fetch_deadline"):
            if hasattr(st, attr):
                setattr(st, attr, self.now)
        self.step(nid, Tick(self.now), out)

    def cmd_deliver(self, cmd: Command, out: list[str]) -> None:
        self.deliver(cmd, out)

    def cmd_stabilize(self, cmd: Command, out: list[str]) -> None:
        """stabilize [rounds=N]: deliver everything, and what that sends, until the network is quiet.
        Nodes that know no leader keep asking each other (a refusal is no cause for backoff, docs/kraft.md §4.9),
        which never ends at one instant; ``rounds`` then bounds the delivery rounds shown."""
        rounds = int(cmd.kwargs.get("rounds", "200"))
        for _ in range(rounds):
            if not self.net:
                return
            pending, self.net = self.net, []
            for src, m in pending:
                self.deliver_one(src, m, out)
        if "rounds" not in cmd.kwargs:
            out.append("(did not stabilize)")

    def cmd_partition(self, cmd: Command, out: list[str]) -> None:
        """partition 3: node(s) 3 (comma separated) cut off from the rest."""
        for x in cmd.arg(0).split(","):
            self.groups[int(x)] = 1

    def cmd_heal(self, cmd: Command, out: list[str]) -> None:
        self.groups.clear()

    def cmd_state(self, cmd: Command, out: list[str]) -> None:
        ids = [int(x) for x in cmd.args] or sorted(i for i, n in self.nodes.items() if n.core is not None)
        for nid in ids:
            c = self.nodes[nid].core
            st = c.status()
            out.append(f"{nid}: {st.describe()} leo={st.log_end_offset} start={st.log_start_offset}")

    def cmd_deadline(self, cmd: Command, out: list[str]) -> None:
        """deadline 1 2: when each node asks to be polled next, relative to now ("now" = at once)."""
        ids = [int(x) for x in cmd.args] or sorted(i for i, n in self.nodes.items() if n.core is not None)
        for nid in ids:
            d = self.nodes[nid].core.next_deadline_ms() - self.now
            out.append(f"{nid}: next poll {'now' if d <= 0 else f'in {d} ms'}")

    def cmd_log(self, cmd: Command, out: list[str]) -> None:
        log = self.nodes[cmd.int_arg(0)].log
        out.append(" ".join(fmt.batch_summary(b) for b in log.batches()) or "(empty)")

    def cmd_append(self, cmd: Command, out: list[str]) -> None:
        nid = cmd.int_arg(0)
        try:
            res = self.nodes[nid].core.append([a.encode() for a in cmd.args[1:]], self.now)
            out.append(f"{nid}: appended last_offset={res.last_offset} epoch={res.epoch}")
        except Exception as exc:  # NotLeaderError
            out.append(f"{nid}: {type(exc).__name__}")
        self.process(nid, out)

    def cmd_snapshot(self, cmd: Command, out: list[str]) -> None:
        nid, offset = cmd.int_arg(0), cmd.int_arg(1)
        node = self.nodes[nid]
        data = [f"{o}:{r.decode()}" for o, r in node.committed if o < offset]
        sid = node.core.create_snapshot(offset, [",".join(data).encode() or b","], self.now)
        out.append(f"{nid}: snapshot id={sid and (sid.end_offset, sid.epoch)}")
        self.process(nid, out)

    def cmd_read(self, cmd: Command, out: list[str]) -> None:
        """read <node> <read id> timeout=<ms>: the application asks for a linearizable read (issue #13)."""
        nid, read_id = cmd.int_arg(0), cmd.int_arg(1)
        from kraftwire.node.core.api import ReadIndex

        self.step(nid, ReadIndex(read_id, int(cmd.kwargs.get("timeout", "5000")), self.now), out)

    def cmd_shutdown(self, cmd: Command, out: list[str]) -> None:
        nid = cmd.int_arg(0)
        self.step(nid, Shutdown(int(cmd.kwargs.get("timeout", "5000")), self.now), out)

    def cmd_crash(self, cmd: Command, out: list[str]) -> None:
        nid = cmd.int_arg(0)
        node = self.nodes[nid]
        node.log.crash(cmd.kwargs.get("lose") == "true")
        node.snaps.crash()
        node.core = None
        # connections die with the process: nothing sent by or to it before the crash arrives later
        self.net = [(s, m) for s, m in self.net if s != nid and m.destination != nid]

    def cmd_restart(self, cmd: Command, out: list[str]) -> None:
        self.start(cmd.int_arg(0), out)

    def cmd_request(self, cmd: Command, out: list[str]) -> None:
        """request <to> <Api> from=<src> v=<version> field=value...: inject one request."""
        dst, api = cmd.int_arg(0), cmd.arg(1)
        src = int(cmd.kwargs.pop("from", "9"))
        version = cmd.kwargs.pop("v", None)
        req = requests_dsl.build(api, self, dst, src, cmd.kwargs)
        v = int(version) if version is not None else req.HIGHEST_VERSION
        self.injected += 1
        cid = 100000 + self.injected
        self.step(dst, RequestReceived(src, cid, v, req, self.now), out)
        # answers to an injected request are shown, never delivered
        self.net = [(s, m) for s, m in self.net if not (isinstance(m, OutboundResponse) and m.correlation_id == cid)]

    def cmd_respond(self, cmd: Command, out: list[str]) -> None:
        """respond <to> <Api> from=<src> field=value...: answer the request in flight from <to> to <src>."""
        dst, api = cmd.int_arg(0), cmd.arg(1)
        src = int(cmd.kwargs.pop("from"))
        cid = self._take_in_flight(dst, src)
        resp = requests_dsl.build_response(api, self, dst, src, cmd.kwargs)
        self.step(dst, ResponseReceived(src, cid, resp.HIGHEST_VERSION, resp, self.now), out)

    def cmd_fail(self, cmd: Command, out: list[str]) -> None:
        """fail <node> to=<dst> error=NAME: the request in flight to dst fails at the network level."""
        nid, dst = cmd.int_arg(0), int(cmd.kwargs["to"])
        cid = self._take_in_flight(nid, dst)
        code = getattr(errors, cmd.kwargs.get("error", "BROKER_NOT_AVAILABLE"))
        self.step(nid, RequestFailed(dst, cid, code, self.now), out)

    def _take_in_flight(self, nid: int, dst: int) -> int:
        """The correlation id of ``nid``'s request in flight to ``dst`` (-1: none); whatever ``nid`` had
        queued on that link is dropped, since the command stands in for the link's answer."""
        flight = self.nodes[nid].core.requests.in_flight_to(dst)
        self.net = [(s, m) for s, m in self.net if not (s == nid and m.destination == dst)]
        return flight.correlation_id if flight is not None else -1

    def cmd_upgrade(self, cmd: Command, out: list[str]) -> None:
        """upgrade <node> version=<v> [epoch=<e>] [validate=true]: the kraft.version upgrade call."""
        nid = cmd.int_arg(0)
        epoch = int(cmd.kwargs["epoch"]) if "epoch" in cmd.kwargs else None
        try:
            appended = self.nodes[nid].core.upgrade_kraft_version(
                int(cmd.kwargs.get("version", "1")), epoch, cmd.kwargs.get("validate") == "true", self.now
            )
            out.append(f"{nid}: upgrade {'appended' if appended else 'appended nothing'}")
        except Exception as exc:  # NotLeaderError, KRaftVersionUpgradeError
            out.append(f"{nid}: {type(exc).__name__}: {exc}")
        self.process(nid, out)

    def cmd_fail_log_reads(self, cmd: Command, out: list[str]) -> None:
        """fail-log-reads <node> [on=false]: reading the node's log raises OSError (a disk error)."""
        log = self.nodes[cmd.int_arg(0)].log
        if cmd.kwargs.get("on") == "false":
            log.__dict__.pop("read", None)
            return

        def broken_read(*_args: Any) -> Any:
            raise OSError("injected: disk read error")

        log.read = broken_read  # type: ignore[method-assign]

    def cmd_voters(self, cmd: Command, out: list[str]) -> None:
        """voters <node>: the node's current voter set (key, listeners, supported kraft.version range)."""
        nid = cmd.int_arg(0)
        core = self.nodes[nid].core
        for spec in core.voters():
            eps = ",".join(f"{name}={ep.host}:{ep.port}" for name, ep in spec.listeners.items())
            lo, hi = spec.kraft_version_range
            d = spec.key.directory_id
            out.append(f"{nid}: voter {spec.key.id} dir={'-' if d is None else d.int} {eps} kraft=[{lo},{hi}]")
        out.append(f"{nid}: kraft.version {core.status().kraft_version}")
