"""KRaftNode: one KRaft controller on TCP and disk, driven by one asyncio loop, and the embedding API.

The loop feeds the core one input at a time (requests from the server, responses and failures from
peer channels, application appends, the clock) and after each input handles the core's Ready in the
order the contract demands: the quorum state written (temp file, fsync, rename, directory fsync), then
the log flushed, only then the messages released, then the application notified, then ``advance``.
The writes and fsyncs of a Ready run on the node's disk thread while the loop coroutine waits for
them, as Kafka's raft thread blocks in them: the core is not stepped meanwhile, which is the ordering
it relies on. The event loop itself keeps reading and answering sockets (as Kafka's network threads
do), so requests arriving during an fsync are decoded and queued, and fed together afterwards.

Embedding, in the manner of Kafka's ``RaftClient``::

    node = KRaftNode(load_config("node1.properties"), listener=my_state_machine)
    await node.start()
    offset = await node.append([b"record"])      # resolves once committed; NotLeaderError otherwise
    last = node.schedule_append([b"record"])     # no future: the listener's handle_commit reaches it
    fresh = await node.read("linearizable")      # state below this offset reflects every acked write
    await node.shutdown()
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import time
from typing import Any, Callable, Sequence, TypeVar, TypeVarTuple

from kraftwire.generated import api_keys
from kraftwire.node.core import KRaftCore
from kraftwire.node.core.api import (
    AppendResult,
    CommittedBatch,
    Endpoint,
    InvariantViolation,
    LeaderAndEpoch,
    LeaderChanged,
    Listener,
    Notification,
    NotLeaderError as CoreNotLeaderError,
    OutboundRequest,
    QuorumStatus,
    Role,
    RequestFailed,
    RequestReceived,
    Resign,
    ResponseReceived,
    SnapshotId,
    SnapshotLoaded,
    Tick,
    VoterSpec,
)
from kraftwire.node.storage import FileOps, NodeStorage, StorageError, open_directory
from kraftwire.node.storage.kafka_metadata import KafkaMetadataLogDetector
from kraftwire.synthetic_capture import CaptureFile

from . import client_path, local_apis, reads, recovery_notice
from .local_routes import local_routes
from .snapshotting import AutoSnapshots
from .core_config import core_config
from .appends import CommitWatchers, PendingAppends, fail, resolve
from .errors import NodeFailed, NotLeaderError
from .inbox import InboxItem, ReadCall, ShutdownCall, SnapshotCall, Wakeup
from .metrics import RaftMetrics
from .metadata_leadership import MetadataLeadership
from .config import NodeConfig
from .peers import PeerNetwork
from .limits import ServerLimits
from .server import InboundRequest, RequestServer
from .tls import client_context, server_context

log = logging.getLogger("kraftwire.node")
# Inputs fed before a Ready is handled, so that one flood cannot delay an fsync unboundedly.
MAX_FEED = 1024
_Result = TypeVar("_Result")
_Args = TypeVarTuple("_Args")


class KRaftNode:
    def __init__(
        self,
        config: NodeConfig,
        listener: Listener | None = None,
        file_ops: FileOps | None = None,
        capture_path: str | None = None,
    ) -> None:
        self.config = config
        self.capture_path = capture_path  # --capture: every frame sent and received, as pcapng
        self.capture: CaptureFile | None = None
        self.listener = listener
        self.file_ops = file_ops
        self.storage: NodeStorage | None = None
        self.core: KRaftCore | None = None
        self.failure: str | None = None
        self.served = local_apis.served_versions(extra=(api_keys.PRODUCE, api_keys.READ_OFFSET))
        self._kafka_log = KafkaMetadataLogDetector()
        self._snapshots = AutoSnapshots.for_node(config, int(time.time() * 1000))
        self._inbox: collections.deque[InboxItem] = collections.deque()
        self._wakeup = Wakeup()
        self._lingering = False  # the loop waits out a linger (see schedule_append)
        self._answers: dict[tuple[int, int], asyncio.Future[tuple[int, Any]]] = {}
        self._appends = PendingAppends()
        self._commit_watchers = CommitWatchers()  # wait_for_commit's callers
        self._disk = concurrent.futures.ThreadPoolExecutor(1, f"kraftwire-disk-{config.node_id}")
        self._disk_busy: asyncio.Future[None] | None = None  # the disk thread's current write
        self._reads = reads.ReadTracker(self._leader, lambda: self._post(ReadCall()))
        self._endpoints: dict[int, Endpoint] = {}  # voter id -> where to reach it
        self._endpoints_from: tuple[VoterSpec, ...] | None = None  # the voters they were read from
        self._last_state: tuple[Role, int, int | None] | None = None
        self._last_ms = 0
        self._loop_task: asyncio.Task[None] | None = None
        self._closing: asyncio.Task[None] | None = None  # the close after a failure
        self._stopped = asyncio.Event()
        self.metrics: RaftMetrics | None = None  # set by enable_metrics()
        self._shutdown_done = False
        self._leadership = MetadataLeadership(config.node_id, config.metadata_leadership)
        self._local = local_routes(self, self._to_core)  # the rest goes to the core
        self.server = RequestServer(
            self._handle_request,
            self._is_served,
            lambda: local_apis.unsupported_api_versions(self.served),
            ServerLimits.of(config),
        )
        self.network = self._peer_network()
        # ReadOffset to the leader has connections of its own: on the shared one it would wait behind a
        # Fetch the leader parks for up to its max wait (a connection answers one request at a time).
        self._read_network = self._peer_network()

    def _peer_network(self) -> PeerNetwork:
        """Outbound connections feeding the node's inbox; TLS when the controller listener uses SSL."""
        config = self.config
        return PeerNetwork(
            lambda src, cid, version, body: self._post(
                ResponseReceived(src, cid, version, body, 0)
            ),
            lambda dst, cid, error: self._post(RequestFailed(dst, cid, error, 0)),
            config.request_timeout_ms,
            config.max_frame_bytes,
            f"raft-client-{config.node_id}",
            tls=client_context(config.tls) if config.tls and config.peer_tls else None,
        )

    # -- lifecycle ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open (and lock) the log directory, build the core, listen, start the loop."""
        cfg = self.config
        self.storage = storage = open_directory(cfg.log_dir, self.file_ops, cfg.segment_bytes)
        try:
            for line in storage.repairs:
                log.warning("node %s: log recovery: %s", cfg.node_id, line)
            for line in storage.losses:
                log.error("node %s: log recovery: %s", cfg.node_id, line)
            if storage.meta.node_id != cfg.node_id:
                raise StorageError(
                    f"{cfg.log_dir} was formatted for node.id {storage.meta.node_id}, not {cfg.node_id}"
                )
            self.core = KRaftCore(
                core_config(cfg, storage, self._now()),
                storage.log,
                storage.quorum_state,
                storage.snapshots,
            )
            if self.metrics is not None:
                self.metrics.directory_id = storage.meta.directory_id
            if self.capture_path is not None:
                self.capture = self.server.capture = self.network.capture = CaptureFile(
                    self.capture_path
                )
                self._read_network.capture = self.capture
            for name, endpoint in cfg.bind.items():
                tls = server_context(cfg.tls) if cfg.tls and name in cfg.ssl_listeners else None
                await self.server.listen(endpoint.host, endpoint.port, tls)
        except BaseException:
            storage.close()
            raise
        self._loop_task = asyncio.ensure_future(self._run())
        log.info("node %s: listening on %s, log %s", cfg.node_id, _fmt(cfg.bind), cfg.log_dir)

    async def shutdown(self, timeout_ms: int = 5000) -> None:
        """Graceful stop: a leader resigns (EndQuorumEpoch), then the node closes its sockets and files."""
        if self.core is not None and self.failure is None and not self._stopped.is_set():
            self._post(ShutdownCall(timeout_ms))
            try:
                await asyncio.wait_for(self._stopped.wait(), timeout_ms / 1000 + 1)
            except asyncio.TimeoutError:
                pass
        await self._close()

    async def abort(self) -> None:
        """Stop at once, as a crash would: no resignation, sockets and files just closed (a test and
        demo tool; flushed data is on disk, anything unflushed is as a kill -9 would leave it)."""
        await self._close()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def _close(self) -> None:
        self._stopped.set()
        if self._loop_task is not None and self._loop_task is not asyncio.current_task():
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        if self._disk_busy is not None:  # never close files under a running fsync
            await asyncio.gather(self._disk_busy, return_exceptions=True)
        self._disk.shutdown(wait=True)
        await self.server.close()
        self.network.close()
        self._read_network.close()
        stopped = NodeFailed(self.failure or "the node shut down")
        self._appends.fail_all(stopped)
        self._reads.fail_all(stopped)
        self._commit_watchers.wake_all()
        if self.storage is not None:
            self.storage.close()
            self.storage = None
        if self.capture is not None:
            self.capture.close()
            self.capture = None

    # -- embedding API -----------------------------------------------------------------------------------

    def enable_metrics(self) -> RaftMetrics:
        """Keep Kafka's raft metrics (see :mod:`.metrics`); call before :meth:`start`."""
        self.metrics = RaftMetrics(self.config.node_id)
        return self.metrics

    def register_listener(self, listener: Listener) -> None:
        self.listener = listener

    async def append(self, records: Sequence[bytes]) -> int:
        """Append on the leader; resolves with the offset of the last record once it is committed."""
        _, committed = self.submit(records)
        return await committed

    def submit(
        self, records: Sequence[bytes]
    ) -> tuple[asyncio.Future[AppendResult], asyncio.Future[int]]:
        """Append without waiting: (future of the AppendResult, resolved once the records are in the
        leader's log and fsynced; future of the last offset, resolved once committed). Both fail with
        :class:`NotLeaderError` on a node that does not lead."""
        self._require_running()
        loop = asyncio.get_running_loop()
        appended: asyncio.Future[AppendResult] = loop.create_future()
        committed: asyncio.Future[int] = loop.create_future()
        try:
            last = self.schedule_append(records)
        except (NotLeaderError, ValueError) as exc:
            fail(appended, exc)
            fail(committed, exc)
        else:
            result = AppendResult(last, self._started_core().epoch)
            self._appends.add(result, appended, committed)
        return appended, committed

    def schedule_append(self, records: Sequence[bytes], epoch: int | None = None) -> int:
        """Append on the leader without a future, as Kafka's ``RaftClient.prepareAppend`` does: the
        offset of the last record, at once. The records are committed when the listener's
        ``handle_commit`` is given a batch of the same epoch whose last offset reaches it (the listener
        of a leader sees every batch it commits); they never are if the leadership ends first (its
        ``handle_leader_change`` says so). ``epoch``, when given, must be the epoch this node leads.
        Raises :class:`NotLeaderError` on a node that does not lead (that epoch), ``ValueError`` for
        no records. In call order with :meth:`submit` and :meth:`append`: all go straight into the
        leader's accumulator. Call it on the node's event loop, as every method of the node (Kafka's
        may be called from any thread)."""
        # Into the accumulator on the caller's turn of the loop, even while the loop sits in a
        # Ready's fsync (``KRaftCore.accept_append`` allows that). The loop is woken only when a
        # linger starts or the batch is full: the appends of a linger go into its batch without
        # waking it each (its wait ends at the linger deadline at the latest; a loop busy
        # elsewhere looks at the deadline before it waits). While the accumulator holds records
        # the clock is not read either: the time of this append is not its linger's start.
        core = self.core
        if core is None or self._stopped.is_set():
            self._require_running()
            core = self._started_core()
        lingering = self._lingering or core.appends_lingering()
        try:
            last = core.accept_append(records, self._last_ms if lingering else self._now(), epoch)
        except CoreNotLeaderError:
            raise self.not_leader_error() from None
        if not lingering or core.next_deadline_ms() <= self._last_ms:
            self._wakeup.set()
        return last

    async def create_snapshot(self, end_offset: int, records: Sequence[bytes]) -> SnapshotId | None:
        """Snapshot the application's state as of committed ``end_offset`` (exclusive)."""
        self._require_running()
        future: asyncio.Future[SnapshotId | None] = asyncio.get_running_loop().create_future()
        self._post(SnapshotCall(end_offset, tuple(records), future))
        return await future

    async def read(self, consistency: str = "linearizable", timeout_ms: int | None = None) -> int:
        """The offset (exclusive) below which the listener has been given every batch, such that state
        read now is fresh: for ``"linearizable"``, it reflects every write acknowledged anywhere before
        this call (confirmed through the leader; :class:`~.reads.ReadTimeoutError` after
        ``timeout_ms``); ``"stale"`` answers at once and may lag (see :mod:`.reads`)."""
        if consistency not in reads.CONSISTENCIES:
            raise ValueError(
                f"consistency must be one of {reads.CONSISTENCIES}, not {consistency!r}"
            )
        if self._stopped.is_set() or self.core is None:
            raise NodeFailed(self.failure or "the node is not running")
        if consistency == "stale":
            return self._reads.applied
        cfg = self.config
        if timeout_ms is None:
            timeout_ms = reads.default_timeout_ms(cfg.fetch_timeout_ms, cfg.request_timeout_ms)
        try:
            return await asyncio.wait_for(self._reads.join(timeout_ms), timeout_ms / 1000)
        except asyncio.TimeoutError:
            raise self._reads.timed_out(timeout_ms) from None

    def status(self) -> QuorumStatus:
        return self._started_core().status()

    async def wait_for_commit(self, timeout_s: float) -> None:
        """Return once records commit, a snapshot loads or the leader changes; at the latest after
        ``timeout_s`` (or when the node stops)."""
        await self._commit_watchers.wait(timeout_s)

    def leader_endpoint(self) -> Endpoint | None:
        status = self.status()
        return None if status.leader_id is None else self._endpoint_of(status.leader_id)

    def is_kafka_metadata_log(self) -> bool:
        """Whether the quorum's log is a Kafka metadata log, which Produce must not write into."""
        storage = self.running_storage()
        return self._kafka_log.check(storage.snapshots, storage.log)

    def _require_running(self) -> None:
        """A call after the loop stopped fails at once: nothing would ever take it from the inbox."""
        if self._stopped.is_set():
            raise NodeFailed(self.failure or "the node is not running")

    def cluster_id(self) -> str:
        """The cluster id the log directory was formatted with."""
        return self.running_storage().meta.cluster_id

    def running_storage(self) -> NodeStorage:
        """The open log directory, for the request handlers (the node closes it when it stops)."""
        if self.storage is None:
            raise NodeFailed(self.failure or "the node is not running")
        return self.storage

    def _started_core(self) -> KRaftCore:
        """The core, built by :meth:`start` (and kept after a stop, for :meth:`status`)."""
        if self.core is None:
            raise NodeFailed("the node has not been started")
        return self.core

    # -- inputs ------------------------------------------------------------------------------------------

    def _post(self, item: InboxItem) -> None:
        self._inbox.append(item)
        self._wakeup.set()

    async def _handle_request(self, request: InboundRequest) -> tuple[int, Any] | None:
        local = self._local.get(request.api_key)
        return await (self._to_core(request) if local is None else local(request))

    async def _to_core(self, request: InboundRequest) -> tuple[int, Any] | None:
        future: asyncio.Future[tuple[int, Any]] = asyncio.get_running_loop().create_future()
        key = (request.connection, request.correlation_id)
        self._answers[key] = future
        self._post(
            RequestReceived(
                request.connection, request.correlation_id, request.api_version, request.body, 0
            )
        )
        # A Fetch may be parked for its MaxWaitMs (a client's as long as it asks) before its answer.
        parked_s = (
            max(0, request.body.max_wait_ms) / 1000 if request.api_key == api_keys.FETCH else 0
        )
        try:
            reply = await asyncio.wait_for(
                future, max(30.0, self.config.request_timeout_ms / 250) + parked_s
            )
        finally:
            self._answers.pop(key, None)
        if request.api_key == api_keys.DESCRIBE_QUORUM and self.storage is not None:
            recovery_notice.attach(reply[1], self.storage.kept_cuts, self.config.node_id)
        return reply

    def _is_served(self, api_key: int, version: int) -> bool:
        versions = self.served.get(api_key)
        return versions is not None and versions[0] <= version <= versions[1]

    def _now(self) -> int:
        self._last_ms = max(self._last_ms, int(time.time() * 1000))
        return self._last_ms

    # -- the loop ----------------------------------------------------------------------------------------

    async def _run(self) -> None:
        core = self._started_core()
        try:
            await self._drain()
            while not self._stopped.is_set():
                if not self._inbox:
                    delay = max(0, core.next_deadline_ms() - self._now()) / 1000
                    idle_from = time.monotonic()
                    # While the leader's accumulator holds records, this wait ends at their linger
                    # deadline at the latest: an append meanwhile joins the same batch without a
                    # wakeup of its own (one per append call cost more than the append; the first
                    # append of a batch still wakes the loop, to start the linger).
                    self._lingering = core.appends_lingering()
                    await self._wakeup.wait(min(delay, 0.5))
                    self._lingering = False
                    if self.metrics is not None:
                        self.metrics.on_poll_idle(time.monotonic() - idle_from)
                self.network.expire()
                self._read_network.expire()
                if self._inbox:
                    self._feed_queued()
                else:
                    core.step(Tick(self._now()))
                await self._drain()
                if self.listener is None and self._snapshots.maybe_snapshot(
                    core, self.running_storage(), self._now(), self.is_kafka_metadata_log()
                ):
                    await self._drain()
                self._log_state()
                if self._shutdown_done:
                    break
        except (InvariantViolation, StorageError) as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            log.error("node %s stopping: %s", self.config.node_id, self.failure)
        except asyncio.CancelledError:
            return
        except (
            Exception
        ) as exc:  # a defect of the node itself: stop, never serve on with a dead loop
            self.failure = f"internal error {type(exc).__name__}: {exc}"
            log.exception("node %s stopping: %s", self.config.node_id, self.failure)
        self._stopped.set()
        self._closing = asyncio.ensure_future(self._close())  # held: the loop keeps only weak refs

    def _feed_queued(self) -> None:
        """Feed everything queued (up to ``MAX_FEED``) before the next Ready is handled: inputs that
        arrived while the loop sat in an fsync share the next one."""
        for _ in range(min(len(self._inbox), MAX_FEED)):
            self._feed(self._inbox.popleft())

    def _feed(self, item: InboxItem) -> None:
        core, now = self._started_core(), self._now()
        if isinstance(item, ReadCall):
            group = self._reads.start_group()
            if group is not None:
                core.read_index(group[0], group[1], now)
        elif isinstance(item, SnapshotCall):
            _settle(item.future, lambda: core.create_snapshot(item.end_offset, item.records, now))
        elif isinstance(item, ShutdownCall):
            core.shutdown(item.timeout_ms, now)
        else:
            item.now_ms = now
            core.step(item)

    def _leader(self) -> LeaderAndEpoch:
        status = self.status()
        return LeaderAndEpoch(status.leader_id, status.epoch)

    def not_leader_error(self) -> NotLeaderError:
        leader = self._leader()
        return NotLeaderError(
            leader, None if leader.leader_id is None else self._endpoint_of(leader.leader_id)
        )

    async def _on_disk(self, action: Callable[[*_Args], None], *args: *_Args) -> None:
        """Run a blocking write or fsync on the disk thread and wait for it (see the module doc)."""
        self._disk_busy = asyncio.get_running_loop().run_in_executor(self._disk, action, *args)
        await asyncio.shield(self._disk_busy)

    async def _drain(self) -> None:
        core, storage = self._started_core(), self.running_storage()
        while core.has_ready():
            ready = core.ready()
            if ready.quorum_state is not None:
                await self._on_disk(storage.quorum_state.write, ready.quorum_state)
            if ready.flush_log_to is not None:
                await self._on_disk(storage.log.flush, ready.flush_log_to)
                status = core.status()
                leading = status.epoch if status.role is Role.LEADER else None
                self._appends.on_flushed(ready.flush_log_to, leading, self.not_leader_error)
            for message in ready.messages:
                if isinstance(message, OutboundRequest):
                    reads = message.api_key == api_keys.READ_OFFSET
                    network = self._read_network if reads else self.network
                    network.send(
                        message, message.endpoint or self._endpoint_of(message.destination)
                    )
                else:
                    future = self._answers.pop((message.destination, message.correlation_id), None)
                    if future is not None and not future.done():
                        future.set_result((message.api_version, message.response))
            for note in ready.notifications:
                self._notify(note)
            for line in ready.refused:  # a peer's lie: one line, and the node keeps running
                log.warning("node %s: %s", self.config.node_id, line)
            core.advance(ready)
            if self.metrics is not None:
                self.metrics.on_ready(
                    ready,
                    core.status(),
                    self._last_ms,
                    storage.log.last_fetched_epoch(),
                    getattr(core.state, "pending_change", None) is not None,
                )
            if ready.shutdown_complete:
                self._shutdown_done = True

    def _notify(self, note: Notification) -> None:
        if type(note) is CommittedBatch:
            self._appends.on_committed(note)
        elif type(note) is SnapshotLoaded:
            self._appends.fail_below(note.snapshot_id.end_offset)
        self._commit_watchers.on_notification(note)
        resign = self._leadership.observe(note)
        if resign is not None:
            log.warning(
                "node %s: resigning the leadership of epoch %s: the log is a Kafka metadata log, whose "
                "leader must be a Kafka controller (kraftwire.metadata.leadership=resign)",
                self.config.node_id,
                resign,
            )
            self._post(Resign(resign))
        # A ReadReady comes after the batches it covers, so the listener has handled them all by then.
        self._reads.on_notification(note)
        listener = self.listener
        if listener is None:
            self._snapshots.on_notification(note, self._last_ms)
            return
        try:
            if type(note) is CommittedBatch:
                listener.handle_commit(note)
            elif type(note) is SnapshotLoaded:
                listener.handle_load_snapshot(note)
            elif type(note) is LeaderChanged:
                listener.handle_leader_change(note.leader)
        except Exception:  # the application's bug must not stop replication
            log.exception("node %s: listener raised", self.config.node_id)

    def _endpoint_of(self, node_id: int) -> Endpoint | None:
        voters = self.status().voters
        if voters is not self._endpoints_from:
            self._endpoints_from = voters
            for voter in voters:
                endpoint = voter.listeners.get(self.config.listener_name) or next(
                    iter(voter.listeners.values()), None
                )
                if endpoint is not None:
                    self._endpoints[voter.key.id] = endpoint
        return self._endpoints.get(node_id)

    def _log_state(self) -> None:
        status = self.status()
        state = (status.role, status.epoch, status.leader_id)
        if state != self._last_state:
            self._last_state = state
            log.info(
                "node %s: %s epoch %s leader %s",
                self.config.node_id,
                status.role.value,
                status.epoch,
                "none" if status.leader_id is None else status.leader_id,
            )


def _settle(future: asyncio.Future[_Result], action: Callable[[], _Result]) -> None:
    try:
        result = action()
    except Exception as exc:
        if not future.done():
            future.set_exception(exc)
        return
    resolve(future, result)


def _fmt(endpoints: dict[str, Endpoint]) -> str:
    return ", ".join(f"{name}://{e.host}:{e.port}" for name, e in endpoints.items())
