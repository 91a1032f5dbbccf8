"""Linearizable reads on real processes: reads/s served by all three nodes against the leader alone.

    .venv/bin/python bench/reads.py [--seconds 5] [--readers 192] [--rounds 2]
    .venv/bin/python bench/reads.py --quick       # smoke run: tiny, figures meaningless

Three ``kraftwire node start`` processes on loopback (default timers). One client process runs
``--readers`` concurrent readers (asyncio, one connection each, one ReadOffset in flight each, as a
client that reads after every answer). Every read is a client's ReadOffset (API 1000): the node that
receives it performs a linearizable read (``read_index``) and answers once its own state has reached
the leader's confirmed offset; every answer is decoded and checked (an error counts as failed, not
served). The set-ups take turns for ``--rounds`` rounds of ``--seconds`` each, on the same cluster:

* **leader alone**: every reader talks to the leader, which confirms reads with its quorum rounds;
* **all three**: readers spread evenly over the three nodes; a follower batches the reads waiting on it
  into one ReadOffset to the leader, so the leader's cost per read is a fraction of a request.
* **followers only** (for information): readers spread over the two followers; its leader CPU per
  read is what a follower's read costs the leader.

Figures: served reads/s of each set-up, p50/p99 latency (send to answer), the ratio (target >= 2x),
and where the CPU went: CPU milliseconds per 1000 served reads in the leader, in the two followers
together and in the client (from /proc, Linux only). The leader's share is what bounds a quorum whose
nodes each have a core of their own. The machine's cores are shared by the client, the three nodes
and whatever else runs (its load average is printed): the ratio is only meaningful between the
set-ups of one run. With fewer cores than processes the ratio cannot approach the number of nodes:
every read costs CPU in the node that serves it and in the client wherever it is served; what
followers change is how much of it the leader pays.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import tempfile
import time

from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.runtime.producer import MetadataClient
from kraftwire.generated.api_keys import READ_OFFSET
from kraftwire.node.core.messages import read_offset_request
from kraftwire.node.runtime.wire import frame_request, parse_response

_SIZE = struct.Struct(">i")


async def reader(host: str, port: int, stop_at: float, latencies: list[float]) -> int:
    """Read until ``stop_at``; append each served read's latency; returns the failed reads."""
    frame = frame_request(read_offset_request(), 0, 1, "bench-reader")
    failed = 0
    connection, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < stop_at:
            start = time.perf_counter()
            writer.write(frame)
            size = _SIZE.unpack(await connection.readexactly(4))[0]
            _, answer = parse_response(await connection.readexactly(size), READ_OFFSET, 0)
            partition = answer.topics[0].partitions[0] if answer.topics else None
            if answer.error_code or partition is None or partition.error_code:
                failed += 1
                continue
            latencies.append(time.perf_counter() - start)
    finally:
        writer.close()
    return failed


async def measure(targets: list[tuple[str, int]], readers: int, seconds: float) -> dict:
    latencies: list[float] = []
    stop_at = time.perf_counter() + seconds
    begin = time.perf_counter()
    failed = await asyncio.gather(
        *(reader(*targets[i % len(targets)], stop_at, latencies) for i in range(readers))
    )
    return {"served": len(latencies), "failed": sum(failed), "elapsed": time.perf_counter() - begin,
            "latencies": latencies}  # fmt: skip


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (0.0 where /proc is missing)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(cluster: LocalCluster, leader: int, targets, readers: int, seconds: float) -> dict:
    """One round, with the CPU the leader, the followers and this client spent on it."""
    pids = {i: p.pid for i, p in cluster.processes.items()}
    before = {i: cpu_seconds(pid) for i, pid in pids.items()}
    client_before = time.process_time()
    result = asyncio.run(measure(targets, readers, seconds))
    spent = {i: cpu_seconds(pid) - before[i] for i, pid in pids.items()}
    result["cpu"] = {
        "leader": spent[leader],
        "followers": sum(t for i, t in spent.items() if i != leader),
        "client": time.process_time() - client_before,
    }
    result["node_cpu"] = spent
    return result


def summary(runs: list[dict]) -> dict:
    latencies = sorted(x for run in runs for x in run["latencies"])
    served = sum(run["served"] for run in runs)
    pick = (
        lambda q: 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * q))]
    )  # noqa: E731
    per_1000 = {
        part: 1e6 * sum(run["cpu"][part] for run in runs) / max(served, 1)
        for part in ("leader", "followers", "client")
    }
    return {
        "reads_per_s": served / sum(run["elapsed"] for run in runs),
        "served": served,
        "failed": sum(run["failed"] for run in runs),
        "p50_ms": pick(0.5) if latencies else float("nan"),
        "p99_ms": pick(0.99) if latencies else float("nan"),
        "cpu_ms_per_1000": per_1000,
        # the busiest node's CPU per read bounds the set-up once every node has a core of its own
        "busiest_node_us_per_read": 1e6
        * max(sum(run["node_cpu"][i] for run in runs) for i in runs[0]["node_cpu"])
        / max(served, 1),
    }


def run(directory: str, seconds: float, readers: int, rounds: int) -> dict[str, dict]:
    cluster = LocalCluster(os.path.join(directory, "reads"), 3)
    cluster.format()
    cluster.start_all()
    try:
        leader, _ = cluster.wait_for_leader()
        writer = MetadataClient(cluster.endpoints[leader], deadline_s=30)
        for n in range(10):
            writer.produce([f"record {n}".encode()] * 10, -1)
        writer.close()
        everyone = [(e.host, e.port) for e in cluster.endpoints.values()]
        followers = [e for i, e in zip(cluster.ids, everyone) if i != leader]
        setups = {
            "leader alone": [everyone[cluster.ids.index(leader)]],
            "all three": everyone,
            "followers only": followers,  # for the leader's cost of a follower's read
        }
        results: dict[str, list[dict]] = {name: [] for name in setups}
        for _ in range(rounds):
            for name, targets in setups.items():
                results[name].append(measured(cluster, leader, targets, readers, seconds))
        if (cluster.leader() or (None,))[0] != leader:
            print(f"note: leadership moved away from node {leader} during the run")
    finally:
        cluster.stop_all()
    return {name: summary(runs) for name, runs in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--readers", type=int, default=192)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.readers < 1 or args.rounds < 1 or not args.seconds > 0:
        parser.error("--readers and --rounds must be at least 1, --seconds above 0")
    if args.quick:
        args.seconds, args.readers, args.rounds = 0.5, 6, 1
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as directory:
        figures = run(directory, args.seconds, args.readers, args.rounds)
    print(
        f"machine: {os.cpu_count()} cores, load average {load_before:.1f} before and "
        f"{os.getloadavg()[0]:.1f} after (the set-ups share whatever the rest of it leaves)"
    )
    for name, f in figures.items():
        print(
            f"{name}: {f['reads_per_s']:,.0f} linearizable reads/s ({f['served']} served, "
            f"{f['failed']} failed; {args.readers} readers, {args.rounds} x {args.seconds:g} s); "
            f"read latency p50 {f['p50_ms']:.2f} ms, p99 {f['p99_ms']:.2f} ms"
        )
        cpu = f["cpu_ms_per_1000"]
        print(
            f"  CPU ms per 1000 reads: leader {cpu['leader']:.0f}, followers {cpu['followers']:.0f}, "
            f"client {cpu['client']:.0f}"
        )
    alone, three = figures["leader alone"], figures["all three"]
    ratio = three["reads_per_s"] / max(alone["reads_per_s"], 1e-9)
    print(
        f"verdict: all three / leader alone = {ratio:.2f}x (target >= 2x): "
        f"{'met' if ratio >= 2 else 'NOT met'}"
    )
    print_capacity(alone, three)


def print_capacity(alone: dict, three: dict) -> None:
    """What the CPU accounting says beyond this machine (a projection, not the measurement)."""
    bound_alone = 1e6 / max(alone["busiest_node_us_per_read"], 1e-9)
    bound_three = 1e6 / max(three["busiest_node_us_per_read"], 1e-9)
    print(
        f"projection, one core per node and clients elsewhere: leader alone <= {bound_alone:,.0f}/s, "
        f"all three <= {bound_three:,.0f}/s (busiest node's CPU per read): "
        f"{bound_three / bound_alone:.2f}x"
    )
    per_read = sum(three["cpu_ms_per_1000"].values()) / 1000  # CPU ms per read, client included
    needed = per_read * 2 * bound_alone / 1000
    print(
        f"cores for twice the leader-alone bound at this run's costs: {needed:.1f} "
        f"(all three spends {per_read * 1000:.0f} CPU ms per 1000 reads, client included; "
        f"this machine has {os.cpu_count()})"
    )


if __name__ == "__main__":
    main()
