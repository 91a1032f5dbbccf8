"""One kraftwire node driven as Kafka's ``kafka.tools.TestRaftServer`` drives its own: a process of its
own that runs a :class:`KRaftNode` and, while it leads, appends ``--record-size``-byte records at
``--throughput`` records/s, one record per append call (TestRaftServer's generator prepares one
record per ``prepareAppend`` too; both leaders batch what arrives within their linger).

    python bench/_raft_kraftwire_server.py --config node1.properties --throughput 2000 \
        --record-size 256 [--warmup 5 --window 10]

What it prints (one line each, flushed, for bench/raft.py to read):

* ``LEADER epoch=E hw_time=T``: this node leads epoch E and its high watermark is known; T is the
  wall clock (time.time()) at which it saw so, the first commit of the epoch (failover's end mark);
* ``Throughput (bytes/second): X, Latency (ms): ...`` every ``--report-s`` seconds while leading, as
  TestRaftServer prints (percentiles over the records committed since the line before);
* ``WINDOW start`` / ``WINDOW {json}``: ``--warmup`` seconds after it first leads, the measured window
  of ``--window`` seconds: commit latency (append call to commit) of the records appended in it, in
  milliseconds from time.perf_counter, and the records committed in it. Once only.

Once started it calls ``settle_gc`` (as ``kraftwire node start`` does; Kafka's side runs on
kafka-run-class.sh's G1 settings). It stops on SIGTERM (graceful shutdown) or SIGKILL.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import json
import math
import signal
import time
from collections import deque
from typing import Any, Awaitable, Generator

from kraftwire.generated.api_keys import FETCH
from kraftwire.node.core.api import CommittedBatch, LeaderAndEpoch, SnapshotLoaded
from kraftwire.node.runtime import KRaftNode, load_config, settle_gc
from kraftwire.node.runtime.errors import NotLeaderError
from kraftwire.node.runtime import server as server_module


def percentiles(latencies: list[tuple[float, int]]) -> dict[str, float]:
    """Percentiles of records' latencies given as (latency, how many records had it)."""
    ordered = sorted(latencies)
    total = sum(count for _, count in ordered)
    if not total:
        return {q: float("nan") for q in ("p50", "p75", "p99", "p999")}
    ranks = itertools.accumulate(count for _, count in ordered)
    at = list(ranks)

    def pick(q: float) -> float:  # the record of rank int(total * q), 0-based, as a sorted list's
        return ordered[bisect.bisect_right(at, min(total - 1, int(total * q)))][0]

    return {"p50": pick(0.5), "p75": pick(0.75), "p99": pick(0.99), "p999": pick(0.999)}


class RequestCost:
    """Thread CPU time the node's request server spends per request served: reading the frame,
    decoding it, handing it to the node, encoding and writing the answer. Each connection's coroutine
    is timed only while it runs (``time.thread_time``: the time a Fetch waits parked, the disk thread
    and other processes do not count), over the window; the core's own work on the request runs in
    the node's loop, outside this figure. ``write_seconds`` is the part spent in the transport's
    write, which on loopback is mostly the kernel's: its TCP send hands the bytes to the peer's
    socket in this thread's time."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.write_seconds = 0.0
        self.requests = 0
        self.counting = False

    def wrap(self, node: KRaftNode) -> None:
        server = node.server
        serve, answer = server._serve, server._answer  # a connection's loop; one request's path

        def timed_serve(*args: Any) -> Awaitable[None]:
            return _Timed(serve(*args), self)

        async def counted_answer(*args: Any) -> None:
            if self.counting:
                self.requests += 1
            await answer(*args)

        server._serve = timed_serve  # type: ignore[method-assign]
        server._answer = counted_answer  # type: ignore[method-assign]
        recorder = server_module._Recorder
        write = recorder.write

        def timed_write(self_: Any, frame: bytes) -> None:
            began = time.thread_time()
            try:
                write(self_, frame)
            finally:
                if self.counting:
                    self.write_seconds += time.thread_time() - began

        recorder.write = timed_write  # type: ignore[method-assign]


class _Timed:
    """Drives a coroutine, adding the thread CPU time of each step it takes while the RequestCost
    counts."""

    def __init__(self, coroutine: Any, cost: RequestCost) -> None:
        self.coroutine, self.cost = coroutine, cost

    def __await__(self) -> Generator[Any, Any, Any]:
        cost, coroutine = self.cost, self.coroutine
        send: Any = None
        error: BaseException | None = None
        while True:
            began = time.thread_time()
            try:
                yielded = coroutine.send(send) if error is None else coroutine.throw(error)
            except StopIteration as done:
                return done.value
            finally:
                if cost.counting:
                    cost.seconds += time.thread_time() - began
            send, error = None, None
            try:
                send = yield yielded
            except BaseException as exc:  # cancellation and the like go on to the connection
                error = exc


class Workload:
    """Appends at a fixed rate while leading and times each record from its append call to its commit.

    As TestRaftServer's generator does, it appends with ``KRaftNode.schedule_append`` (Kafka's
    ``prepareAppend``: the offset at once, no future), one record a call, the records due at each
    tick stamped with the tick's time, and is the node's listener: it keeps each tick's appends in a
    queue, oldest first, as (first offset, last offset, time), and on each committed batch takes
    from the front the records the batch reaches and records their latencies, if the batch is of its
    own epoch. No future, callback or closure per record; latencies are kept as (latency, records).
    """

    def __init__(self, node: KRaftNode, args: argparse.Namespace) -> None:
        self.node = node
        self.rate = args.throughput
        self.payload = b"x" * args.record_size
        self.max_in_flight = max(1000, self.rate)
        self.pending: deque[tuple[int, int, float]] = deque()  # (first, last offset, append time)
        self.in_flight = 0  # records in ``pending``
        self.committed = 0
        self.interval: list[tuple[float, int]] = []  # latencies (ms) since the last report line
        self.window: list[tuple[float, int]] | None = None  # of records appended in the window
        self.window_from = self.window_to = math.inf  # perf_counter bounds of the window's appends
        self.window_committed = 0
        self.window_open = False
        self.epoch = -1  # the epoch it appends in
        self.fetches = 0  # Fetch requests this node has served (its followers' replication)

    def count_fetches(self, node: KRaftNode) -> None:
        """Count the Fetch requests the node's request server hands to its handler."""
        handler = node.server.handler

        async def counting(request):
            if request.api_key == FETCH:
                self.fetches += 1
            return await handler(request)

        node.server.handler = counting

    def handle_commit(self, batch: CommittedBatch) -> None:
        pending, last = self.pending, batch.last_offset
        if not pending or pending[0][0] > last:
            return
        now, ours = time.perf_counter(), batch.epoch == self.epoch
        latencies, committed = [], 0
        while pending and pending[0][0] <= last:
            first, tail, started = pending.popleft()
            if tail > last:  # the batch ends inside this tick's appends: the rest stay queued
                pending.appendleft((last + 1, tail, started))
                tail = last
            count = tail - first + 1
            self.in_flight -= count
            if ours:
                committed += count
                latencies.append((1000 * (now - started), count))
                if self.window_from <= started < self.window_to:
                    self.window.append(latencies[-1])  # type: ignore[union-attr]
        self.committed += committed
        self.interval += latencies
        if self.window_open:
            self.window_committed += committed

    def handle_load_snapshot(self, snapshot: SnapshotLoaded) -> None:
        pass

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        if leader.epoch != self.epoch:
            self.pending.clear()  # the appends of a leadership that ended never commit
            self.in_flight = 0

    async def run_epoch(self, epoch: int) -> None:
        """Append at the target rate for as long as this node leads ``epoch``: every millisecond,
        the records due by then (TestRaftServer's generator sends what its throttle allows, then
        waits for the next record's millisecond). A callback the loop calls at each tick's time,
        not a task sleeping: a task's wakeup cost a quarter more CPU, and there are 1,000 a second.
        """
        loop = asyncio.get_running_loop()
        ended = loop.create_future()
        schedule, pending, payload = self.node.schedule_append, self.pending, [self.payload]
        start, sent, tick = time.perf_counter(), 0, loop.time()
        handle: asyncio.TimerHandle | None = None

        def append_due() -> None:
            nonlocal sent, tick, handle
            now = time.perf_counter()
            due = int((now - start) * self.rate) - sent
            count = max(0, min(due, self.max_in_flight - self.in_flight))
            try:
                if count:
                    first = schedule(payload, epoch)
                    for _ in range(count - 1):
                        schedule(payload, epoch)
                    pending.append((first, first + count - 1, now))  # one record a call
                    self.in_flight += count
            except NotLeaderError:  # the leadership of ``epoch`` ended
                ended.set_result(None)
                return
            sent += max(0, due)  # like TestRaftServer, a record it could not append is not retried
            tick = max(tick + 0.001, loop.time())
            handle = loop.call_at(tick, append_due)

        handle = loop.call_at(tick, append_due)
        try:
            await ended
        finally:
            handle.cancel()


async def report(workload: Workload, size: int, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        if not workload.interval:
            continue
        values, workload.interval = workload.interval, []
        q = percentiles(values)
        records = sum(count for _, count in values)
        print(
            f"Throughput (bytes/second): {records * size / every_s:.2f}, "
            f"Latency (ms): {q['p75']:.1f} p75 {q['p99']:.1f} p99 {q['p999']:.1f} p999",
            flush=True,
        )


async def measure_window(
    workload: Workload, cost: RequestCost, warmup_s: float, window_s: float
) -> None:
    await asyncio.sleep(warmup_s)
    workload.window, workload.window_open = [], True
    print("WINDOW start", flush=True)
    began, fetches = time.perf_counter(), workload.fetches
    workload.window_from = began
    cost.counting = True
    await asyncio.sleep(window_s)
    cost.counting = workload.window_open = False
    workload.window_to = time.perf_counter()
    elapsed = workload.window_to - began
    committed, fetches = workload.window_committed, workload.fetches - fetches
    await asyncio.sleep(min(5.0, window_s))  # the window's last appends commit
    result = {"records_per_s": committed / elapsed, "committed": committed, "seconds": elapsed,
              "fetches": fetches, "requests": cost.requests,
              "us_per_request": 1e6 * cost.seconds / max(cost.requests, 1),
              "us_write_per_request": 1e6 * cost.write_seconds / max(cost.requests, 1)}  # fmt: skip
    result.update(percentiles(workload.window))
    print("WINDOW " + json.dumps(result), flush=True)


async def serve(args: argparse.Namespace) -> None:
    node = KRaftNode(load_config(args.config))
    workload, cost = Workload(node, args), RequestCost()
    node.register_listener(workload)  # as TestRaftServer registers its generator
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await node.start()
    settle_gc()  # as ``kraftwire node start`` does
    workload.count_fetches(node)
    cost.wrap(node)
    tasks = [asyncio.create_task(report(workload, args.record_size, args.report_s))]
    seen_epoch = {"leader": -1, "follower": -1}
    try:
        while not stop.is_set():
            status = node.status()
            role = status.role.value
            known = status.high_watermark is not None
            if known and role in seen_epoch and status.epoch > seen_epoch[role]:
                seen_epoch[role] = status.epoch
                mark = f"{role.upper()} epoch={status.epoch} hw_time={time.time():.6f}"
                print(mark, flush=True)
            if role == "leader" and known and workload.epoch != status.epoch:
                workload.epoch = status.epoch
                tasks.append(asyncio.create_task(workload.run_epoch(status.epoch)))
                if len(tasks) == 2 and args.window > 0:
                    tasks.append(
                        asyncio.create_task(
                            measure_window(workload, cost, args.warmup, args.window)
                        )
                    )
            await node.wait_for_commit(0.05)
    finally:
        for task in tasks:
            task.cancel()
        await node.shutdown(timeout_ms=2000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--throughput", type=int, default=5000, help="records/s (default 5000)")
    parser.add_argument("--record-size", type=int, default=256, help="bytes (default 256)")
    parser.add_argument("--report-s", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=0.0, help="0: no measured window")
    args = parser.parse_args()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        raise SystemExit(130)


if __name__ == "__main__":
    main()
