"""KRaft node on real processes: committed records/s, commit latency and failover time, with
PySyncObj's 3-node throughput measured in the same run on the same machine.

    .venv/bin/python bench/node.py [--seconds 10] [--producers 8] [--batch 200]
                                   [--single-producers 128] [--linger-ms 0] [--trials 20]
    .venv/bin/python bench/node.py --quick        # smoke run: tiny, figures meaningless

* **kraftwire**, two rows, each on a fresh 3-node cluster of `kraftwire node start` processes on
  loopback (fsync on every flush, as the node always does), 100-byte records, acks=-1, each client
  thread sending one Produce request at a time:
  - *batched*: ``--producers`` threads, ``--batch`` records per request;
  - *single-record*: ``--single-producers`` threads, one record per request. The leader takes
    whatever arrived while it sat in its last fsync as one batch with one fsync (group commit), so
    throughput comes from concurrency, not from the client batching.
  Figures: committed records/s over ``--seconds``, and p50/p99 of the per-request commit latency
  (send to acks=-1 answer). ``--linger-ms`` is ``controller.quorum.append.linger.ms`` (Kafka's
  default is 25; group commit needs no linger, so 0 here).
* **PySyncObj** (``pysyncobj``, the usual pure-Python Raft): 3 processes on loopback, one of them
  submitting 100-byte appends through ``@replicated`` with up to 1000 in flight for ``--seconds``.
  It keeps its log in memory by default; here it also writes its file journal (it does not fsync
  each entry), so it does less durable work than kraftwire.
* **failover**: ``--trials`` times, kill -9 the leader and time until the first acks=-1 write
  commits in the new epoch, reported as median and p90 over ``controller.quorum.fetch.timeout.ms``
  (target <= 1.25). Targets: kraftwire >= 3x PySyncObj records/s, on each row.

Exit status 0 either way; the verdict lines say whether each target was met.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from kraftwire.node.runtime.client import ClientError
from kraftwire.node.runtime.local_cluster import LocalCluster, free_ports
from kraftwire.node.runtime.producer import MetadataClient, ProduceRefused

RECORD = b"x" * 100
FETCH_TIMEOUT_MS = 2000


def kraftwire_throughput(
    directory: str, seconds: float, producers: int, batch: int, linger_ms: int
) -> dict:
    cluster = LocalCluster(
        os.path.join(directory, f"throughput-{producers}x{batch}"),
        3,
        settings={"controller.quorum.append.linger.ms": linger_ms},
    )
    cluster.format()
    cluster.start_all()
    latencies: list[float] = []
    counts = [0] * producers
    stop = threading.Event()

    def produce(index: int) -> None:
        client = MetadataClient(cluster.endpoints[cluster.ids[index % 3]], deadline_s=30)
        values = [RECORD] * batch
        while not stop.is_set():
            start = time.perf_counter()
            client.produce(values, -1)
            latencies.append(time.perf_counter() - start)
            counts[index] += batch
        client.close()

    try:
        cluster.wait_for_leader()
        warm = MetadataClient(cluster.endpoints[1], deadline_s=30)
        warm.produce([RECORD], -1)
        warm.close()
        threads = [
            threading.Thread(target=produce, args=(i,), daemon=True) for i in range(producers)
        ]
        begin = time.perf_counter()
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        elapsed = time.perf_counter() - begin
    finally:
        cluster.stop_all()
    ordered = sorted(latencies)
    return {
        "records_per_s": sum(counts) / elapsed,
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "requests": len(ordered),
    }


PYSYNCOBJ_NODE = r"""
import sys, time, json
from pysyncobj import SyncObj, SyncObjConf, replicated

class Log(SyncObj):
    def __init__(self, me, partners, conf):
        super().__init__(me, partners, conf)
        self.count = 0
    @replicated
    def append(self, value):
        self.count += 1
        return self.count

me, partners, journal, driver, seconds = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4] == "1", float(sys.argv[5])
log = Log(me, partners, SyncObjConf(journalFile=journal, appendEntriesUseBatch=True))
if not driver:
    time.sleep(seconds + 60)
    sys.exit(0)
deadline = time.time() + 60
while log._getLeader() is None and time.time() < deadline:
    time.sleep(0.05)
done = [0]
def finished(result, error):
    done[0] += 1
submitted, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    while submitted - done[0] < 1000:
        log.append(b"x" * 100, callback=finished)
        submitted += 1
    time.sleep(0.001)
end_submit = time.perf_counter()
while done[0] < submitted and time.perf_counter() - end_submit < 30:
    time.sleep(0.005)
print(json.dumps({"records_per_s": done[0] / (time.perf_counter() - start)}))
"""


def pysyncobj_throughput(directory: str, seconds: float) -> dict | None:
    if importlib.util.find_spec("pysyncobj") is None:
        return None
    ports = free_ports(3)
    addresses = [f"127.0.0.1:{p}" for p in ports]
    processes = []
    try:
        for i, me in enumerate(addresses):
            partners = ",".join(a for a in addresses if a != me)
            journal = os.path.join(directory, f"pysyncobj-{i}.journal")
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        PYSYNCOBJ_NODE,
                        me,
                        partners,
                        journal,
                        "1" if i == 0 else "0",
                        str(seconds),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            )
        out, _ = processes[0].communicate(timeout=seconds + 120)
        return json.loads(out.strip().splitlines()[-1])
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)


def failover(directory: str, trials: int) -> list[float]:
    cluster = LocalCluster(os.path.join(directory, "failover"), 3)
    cluster.format()
    cluster.start_all()
    times: list[float] = []
    try:
        for _ in range(trials):
            leader, epoch = cluster.wait_for_leader()
            _write_once(cluster, cluster.ids, 30)
            cluster.kill(leader)
            killed_at = time.perf_counter()
            survivors = [i for i in cluster.ids if i != leader]
            _write_once(cluster, survivors, 60, after_epoch=epoch)
            times.append(time.perf_counter() - killed_at)
            cluster.start(leader)
            cluster.wait_for_leader()
            time.sleep(1.0)  # let the restarted node catch up before the next kill
    finally:
        cluster.stop_all()
    return times


def _write_once(
    cluster: LocalCluster, nodes: list[int], timeout_s: float, after_epoch: int = -1
) -> None:
    """Retry one acks=-1 write every 10 ms until it commits (in an epoch above ``after_epoch``)."""
    stop = time.perf_counter() + timeout_s
    while time.perf_counter() < stop:
        for node in nodes:
            client = MetadataClient(cluster.endpoints[node], deadline_s=0.01, timeout_s=1)
            try:
                client.produce([RECORD], -1, timeout_ms=1000)
                leader = cluster.leader()
                if leader is None or leader[1] > after_epoch:
                    return
            except (ClientError, ProduceRefused, OSError):
                pass
            finally:
                client.close()
        time.sleep(0.01)
    raise TimeoutError("no write committed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--single-producers", type=int, default=128)
    parser.add_argument("--linger-ms", type=int, default=0)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    least_1 = (args.producers, args.batch, args.single_producers, args.trials)
    if args.seconds <= 0 or min(least_1) < 1 or args.linger_ms < 0:
        parser.error(
            "--seconds must be above 0, --producers, --batch, --single-producers and --trials "
            "at least 1, --linger-ms at least 0"
        )
    if args.quick:
        args.seconds, args.producers, args.batch, args.trials = 1.0, 2, 5, 1
        args.single_producers = 4
    rows = [
        ("batched", args.producers, args.batch),
        ("single-record", args.single_producers, 1),
    ]
    with tempfile.TemporaryDirectory() as directory:
        results = []
        for name, producers, batch in rows:
            ours = kraftwire_throughput(directory, args.seconds, producers, batch, args.linger_ms)
            results.append((name, ours))
            print(
                f"kraftwire {name}: {ours['records_per_s']:,.0f} committed records/s "
                f"({producers} producers x {batch} records/request, acks=-1, fsync on, "
                f"linger {args.linger_ms} ms); commit latency p50 {ours['p50_ms']:.1f} ms, "
                f"p99 {ours['p99_ms']:.1f} ms over {ours['requests']} requests"
            )
        peer = pysyncobj_throughput(directory, args.seconds)
        if peer is None:
            print("PySyncObj: not installed (pip install -e '.[bench]'); no ratio")
        else:
            print(
                f"PySyncObj: {peer['records_per_s']:,.0f} committed records/s (3 processes, file journal)"
            )
            for name, ours in results:
                ratio = ours["records_per_s"] / peer["records_per_s"]
                verdict = "met" if ratio >= 3 else "NOT met"
                print(
                    f"verdict {name}: kraftwire/PySyncObj = {ratio:.2f}x (target >= 3x): {verdict}"
                )
        times = failover(directory, args.trials)
        ratios = sorted(t * 1000 / FETCH_TIMEOUT_MS for t in times)
        p90 = ratios[min(len(ratios) - 1, int(len(ratios) * 0.9))]
        median = statistics.median(ratios)
        print(
            f"failover over {len(times)} trials: median {median:.2f}, p90 {p90:.2f} x fetch timeout "
            f"({FETCH_TIMEOUT_MS} ms); target <= 1.25: {'met' if p90 <= 1.25 else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
