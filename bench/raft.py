"""The node against Apache Kafka's own Raft, side by side on loopback: committed records/s, commit
latency, CPU per record, resident memory and failover of three kraftwire nodes and of three
``kafka.tools.TestRaftServer`` processes, measured in one run with the same workload and timers.

    .venv/bin/python bench/raft.py [--rates 2000,5000,10000,20000,40000] [--step 1.5]
                                   [--max-rate 700000] [--refine 2] [--record-size 256] [--warmup 5]
                                   [--window 10] [--trials 20] [--kafka-heap-mb 1024]
    .venv/bin/python bench/raft.py --quick        # smoke run: tiny, both sides at once, figures meaningless
    .venv/bin/python bench/raft.py --sides kraftwire --trials 0 --rates 5000,20000   # one side, no failover

Needs Java and Kafka's jars (``make kafka``). For each rate of the sweep, lowest first, each side runs
a fresh 3-node quorum whose leader appends ``--record-size``-byte records at that rate, one record per
append call (TestRaftServer's generator; bench/_raft_kraftwire_server.py for kraftwire); both leaders
batch what arrives within ``controller.quorum.append.linger.ms`` (Kafka's default, 25 ms, on both).
After ``--warmup`` seconds a window of ``--window`` seconds is measured:

* committed records/s: kraftwire counts the commits in the window; TestRaftServer reports none
  exactly (its bytes/s line is a rate over its metrics window), so its leader's log end offset is read
  from the segment's batch headers at the window's two ends. A rate is *sustained* when >= 95% of it
  commits. After ``--rates``, each side's sweep goes on at ``--step`` times the last rate (60,000,
  90,000, 135,000, ...) and stops at its first unsustained rate, then halves the gap between its
  highest sustained and lowest unsustained rate ``--refine`` times: its *ceiling* is the most it
  committed, and the ratio is taken at the two ceilings (a side that sustained every rate up to
  ``--max-rate`` has only a lower bound, and the line says so);
* commit latency, append call to commit: kraftwire's from time.perf_counter (p50/p75/p99/p999 of the
  window); Kafka's from TestRaftServer's own line (p75/p99/p999; it has no p50), whose histogram
  is 1,000 bytes over 0-250 ms in constant buckets: 1 ms resolution, anything above ~249 ms reads 249;
* CPU seconds per 10,000 committed records of each process (leader, followers; /proc utime+stime)
  and resident memory (VmRSS) at the window's end; for kraftwire also the leader's CPU per Fetch
  request it served (all its work over its followers' Fetches) and its request path's thread CPU
  per request served (frame read, decode, hand-over, encode, write; bench/_raft_kraftwire_server.py),
  and at the end the same path timed in this process alone (bench/_raft_request_cost.py).

Durability, as each does it: both fsync before a write counts. kraftwire fsyncs the log on every
flush, leader and followers. Kafka's KafkaRaftClient flushes its log (``log.flush``) after the
leader appends a batch and after a follower appends fetched records, before the high watermark may
cover them. Failover (``--trials`` times per side, at the lowest rate): kill -9 of the leader to the
new leader's first commit in the new epoch (its high watermark known: Kafka's LeaderState log line,
whose time stamp has millisecond resolution), with the same ``controller.quorum.*.timeout.ms`` on both.
Exit status 0 either way; the verdict lines say whether each goal was met.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _raft_procs import cpu_seconds, log_end_offset, rss_mb, stop  # noqa: E402
from _raft_quorums import KafkaQuorum, KraftwireQuorum  # noqa: E402
from _raft_request_cost import describe as describe_request_path  # noqa: E402

TIMERS = {
    "controller.quorum.election.timeout.ms": 1000,
    "controller.quorum.fetch.timeout.ms": 2000,
    "controller.quorum.request.timeout.ms": 2000,
}
SUSTAINED = 0.95
KAFKA_CEILING_MS = 249.0  # the last bucket of TestRaftServer's 0-250 ms, 1 ms latency histogram
_KAFKA_LINE = re.compile(
    r"Throughput \(bytes/second\): ([\d.]+), Latency \(ms\): ([\d.]+) p75 ([\d.]+) p99 ([\d.]+) p999"
)


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"{what} not seen in {timeout_s:.0f} s")


def cpu_spent(quorum, cpu_before: dict[int, float]) -> dict[int, float]:
    """CPU seconds each node spent since ``cpu_before``: taken as the window closes, so that a
    side's figures never include what it does after its window (kraftwire's were taken after its
    window's figures were printed, 5 s or more later, and divided by the window's commits)."""
    return {n: cpu_seconds(pid) - cpu_before[n] for n, pid in quorum.pids().items()}


def usage(quorum, leader: int, spent: dict[int, float], committed: int) -> dict:
    """CPU seconds per 10,000 committed records of each node (``spent`` over the window), and its
    resident MiB, now."""
    per_10k = {n: 1e4 * seconds / max(committed, 1) for n, seconds in spent.items()}
    return {
        "leader": leader,
        "cpu_per_10k": per_10k,
        "rss_mb": {n: rss_mb(pid) for n, pid in quorum.pids().items()},
    }


def kafka_step(root: Path, rate: int, args, trials: int) -> dict:
    quorum = KafkaQuorum(root, rate, args.record_size, TIMERS, args.kafka_heap_mb, args.quick)
    try:
        quorum.start_all()
        leader, _, _ = quorum.wait_leader()
        time.sleep(args.warmup)
        lines_before = len(quorum.throughput_lines(leader))
        cpu = {n: cpu_seconds(pid) for n, pid in quorum.pids().items()}
        begin, start_offset = time.perf_counter(), log_end_offset(quorum.partition_dir(leader))
        time.sleep(args.window)
        committed = log_end_offset(quorum.partition_dir(leader)) - start_offset
        spent = cpu_spent(quorum, cpu)
        elapsed = time.perf_counter() - begin
        result = usage(quorum, leader, spent, committed)
        p75 = p99 = p999 = float("nan")  # when the leader prints no line (no commits handled)
        try:
            lines = wait_for(
                lambda: quorum.throughput_lines(leader)[lines_before:], 15, "TestRaftServer's line"
            )
            p75, p99, p999 = map(float, _KAFKA_LINE.search(lines[-1]).groups()[1:])
        except TimeoutError:
            pass
        result["failover_s"], result["catch_up_s"] = failover_and_catch_up(
            quorum, trials, rate, args
        )
    finally:
        quorum.stop_all(1.0 if args.quick else 10.0)  # a smoke run need not wait
    result.update(records_per_s=committed / elapsed, p50=float("nan"), p75=p75, p99=p99, p999=p999)
    return result


def kraftwire_step(root: Path, rate: int, args, trials: int) -> dict:
    quorum = KraftwireQuorum(root, rate, args.record_size, TIMERS, args.warmup, args.window)
    try:
        quorum.start_all()
        leader, _, _ = quorum.wait_leader()
        lines = lambda: quorum.outputs[leader].lines()  # noqa: E731
        wait_for(lambda: "WINDOW start" in lines(), args.warmup + 60, "the window's start")
        cpu = {n: cpu_seconds(pid) for n, pid in quorum.pids().items()}
        time.sleep(args.window)
        spent = cpu_spent(quorum, cpu)
        found = wait_for(
            lambda: [l for l in lines() if l.startswith("WINDOW {")], 30, "the window's figures"
        )
        window = json.loads(found[0].split(" ", 1)[1])
        result = usage(quorum, leader, spent, window["committed"])
        result["failover_s"], result["catch_up_s"] = failover_and_catch_up(
            quorum, trials, rate, args
        )
    finally:
        quorum.stop_all(1.0 if args.quick else 10.0)  # a smoke run need not wait
    result.update(window)
    result["us_per_fetch"] = 1e6 * spent[leader] / max(window["fetches"], 1)
    return result


def sweep(name: str, step, root: Path, args) -> list[tuple[int, dict]]:
    """The rates of ``--rates``, then (``--step`` > 1) each rate ``--step`` times the last, until a
    rate is not sustained or passes ``--max-rate``; then ``--refine`` halvings of the gap between
    the highest sustained rate and the lowest unsustained one (the ceiling lies between them). The
    last row is always a rate not sustained, if any was."""
    rows: list[tuple[int, dict]] = []

    def measure(rate: int) -> bool:
        # failover is timed on the first (lowest-rate) quorum, after its window
        trials = args.trials if not rows else 0
        step_root = root / f"{name.split()[0].lower()}-{len(rows)}"
        try:
            result = step(step_root, rate, args, trials)
        finally:
            # A step at 300,000/s leaves about 5 GB: kept, the sweep filled the disk; and the next
            # step's fsyncs waited behind its write-back (both sides once committed 0 records/s).
            shutil.rmtree(step_root, ignore_errors=True)
            os.sync()
        rows.append((rate, result))
        print_row(name, rate, result)
        return result["records_per_s"] >= SUSTAINED * rate

    sustained = failed = None
    for rate in rates(args):
        if not measure(rate):
            failed = rate
            break
        sustained = rate
    for _ in range(args.refine if failed is not None and sustained is not None else 0):
        middle = int(round((sustained + failed) / 2, -3))
        if middle in (sustained, failed):
            break
        if measure(middle):
            sustained = middle
        else:
            failed = middle
    if failed is not None:
        rows.sort(key=lambda row: (row[0] == failed, row[0]))  # the unsustained rate last
    return rows


def rates(args):
    yield from args.rates
    rate = args.rates[-1]
    while args.step > 1 and round(rate * args.step, -3) <= args.max_rate:
        rate = int(round(rate * args.step, -3))
        yield rate


def print_row(name: str, rate: int, r: dict) -> None:
    leader = r["leader"]
    followers = [n for n in r["cpu_per_10k"] if n != leader]
    cpu = ", ".join(f"follower {r['cpu_per_10k'][n]:.2f}" for n in followers)
    rss = "/".join(f"{r['rss_mb'][n]:.0f}" for n in sorted(r["rss_mb"]))
    sustained = "sustained" if r["records_per_s"] >= SUSTAINED * rate else "NOT sustained"
    p50 = "" if r["p50"] != r["p50"] else f"p50 {r['p50']:.1f} "
    extra = ""
    if "us_per_fetch" in r:
        extra = (
            f"; leader CPU per Fetch served {r['us_per_fetch']:.0f} us; request path per request "
            f"served {r['us_per_request']:.0f} us thread CPU, {r['us_write_per_request']:.0f} us "
            f"of it in the transport's write (the kernel's loopback send), over {r['requests']:,} "
            f"requests"
        )
    if "us_per_fetch" not in r and r["p999"] >= KAFKA_CEILING_MS:
        extra += (
            f" (TestRaftServer's histogram tops out at {KAFKA_CEILING_MS:.0f} ms: a lower bound)"
        )
    print(
        f"{name} at {rate:,} records/s: {r['records_per_s']:,.0f} committed records/s ({sustained}); "
        f"commit latency ms {p50}p75 {r['p75']:.1f} p99 {r['p99']:.1f} p999 {r['p999']:.1f}; "
        f"CPU s per 10,000 records leader {r['cpu_per_10k'][leader]:.2f}, {cpu}; "
        f"RSS MiB per node {rss}{extra}",
        flush=True,
    )


def failover_and_catch_up(quorum, trials: int, rate: int, args) -> tuple[list[float], float]:
    """Failover's ``trials``, then the catch-up (none when ``trials`` is 0). ``--quick`` saves a
    process restart: the leader its one trial killed is the follower that catches up."""
    if not trials:
        return [], float("nan")
    if args.quick:
        times, killed = failover(quorum, trials, rejoin_last=False)
        return times, catch_up(quorum, args.catch_up, rate, down=killed)
    return failover(quorum, trials)[0], catch_up(quorum, args.catch_up, rate)


def catch_up(quorum, records: int, rate: int, down: int | None = None) -> float:
    """Stop a follower (SIGTERM; or take ``down``, a node already stopped), let the leader write
    ``records`` more, restart the follower: seconds from its restart until its log end reaches the
    leader's log end at that moment."""
    leader, _, _ = quorum.wait_leader()
    follower = down
    if follower is None:
        follower = next(n for n in quorum.ids if n != leader)
        stop([quorum.processes[follower]])
    start = log_end_offset(quorum.partition_dir(leader))
    wait_for(
        lambda: log_end_offset(quorum.partition_dir(leader)) - start >= records,
        3 * records / rate + 60,
        f"{records:,} records written while a follower is down",
    )
    target = log_end_offset(quorum.partition_dir(leader))
    restarted = time.perf_counter()
    quorum.start(follower)
    wait_for(
        lambda: log_end_offset(quorum.partition_dir(follower)) >= target,
        600,
        f"follower {follower} catching up",
    )
    return time.perf_counter() - restarted


def failover(quorum, trials: int, rejoin_last: bool = True) -> tuple[list[float], int]:
    """Seconds from kill -9 of the leader to the new leader's first commit, ``trials`` times, on a
    running quorum; the killed node restarts and rejoins before the next trial (and after the last
    unless ``rejoin_last`` is false). Also the node killed last."""
    times: list[float] = []
    leader = -1
    for trial in range(trials):
        leader, epoch, _ = quorum.wait_leader()
        time.sleep(1.0)  # a steady epoch before the kill
        killed_at = time.time()
        quorum.kill(leader)
        _, new_epoch, committed_at = quorum.wait_leader(after_epoch=epoch, not_in=(leader,))
        times.append(committed_at - killed_at)
        if trial < trials - 1 or rejoin_last:
            quorum.start(leader)  # the catch-up after the last trial needs three nodes too
            quorum.wait_follower(leader, new_epoch)
    return times, leader


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def ceiling(name: str, rows: list[tuple[int, dict]]) -> tuple[int, dict]:
    """The row with the most committed records/s, and a line saying whether the sweep found the
    side's ceiling (a rate it did not sustain) or only a lower bound of it."""
    rate, top = max(rows, key=lambda row: row[1]["records_per_s"])
    last_rate, last = rows[-1]
    if last["records_per_s"] < SUSTAINED * last_rate:
        found = (
            f"ceiling found: {last_rate:,}/s not sustained ({last['records_per_s']:,.0f} committed, "
            f"{last['records_per_s'] / last_rate:.2f} of it)"
        )
    else:
        found = f"ceiling NOT found: every rate up to {last_rate:,}/s sustained, a lower bound"
    print(
        f"ceiling {name}: {top['records_per_s']:,.0f} committed records/s (at a target of "
        f"{rate:,}/s); {found}",
        flush=True,
    )
    return rate, top


def records_verdict(ours_rows, theirs_rows, note: str = "") -> None:
    """The records/s verdict, at the two sides' ceilings."""
    (their_rate, theirs), (our_rate, ours) = ceiling("Kafka TestRaftServer", theirs_rows), ceiling(
        "kraftwire", ours_rows
    )
    ratio = ours["records_per_s"] / theirs["records_per_s"]
    print(
        f"verdict records/s: kraftwire {ours['records_per_s']:,.0f} (at {our_rate:,}) / Kafka "
        f"{theirs['records_per_s']:,.0f} (at {their_rate:,}) = {ratio:.2f}x (goal >= 1.0x, floor "
        f"0.5x): {verdict(ratio >= 1.0)}; floor {verdict(ratio >= 0.5)}{note}"
    )


def summary(ours_rows, theirs_rows, ours_fail, theirs_fail) -> None:
    records_verdict(ours_rows, theirs_rows)
    shared = [rate for rate, r in ours_rows if rate in dict(theirs_rows)][0]
    ours_fixed, theirs_fixed = dict(ours_rows)[shared], dict(theirs_rows)[shared]
    ratio = ours_fixed["p99"] / theirs_fixed["p99"]
    print(
        f"verdict p99 commit latency at {shared:,} records/s: kraftwire {ours_fixed['p99']:.1f} ms / "
        f"Kafka {theirs_fixed['p99']:.1f} ms = {ratio:.2f}x (goal <= 1.0x): {latency_verdict(ratio, theirs_fixed)}"
    )
    ours_mb = statistics.median(ours_fixed["rss_mb"].values())
    theirs_mb = statistics.median(theirs_fixed["rss_mb"].values())
    ratio = ours_mb / theirs_mb
    print(
        f"verdict memory per node (median VmRSS): kraftwire {ours_mb:.0f} MiB / Kafka "
        f"{theirs_mb:.0f} MiB = {ratio:.2f}x (goal <= 0.25x): {verdict(ratio <= 0.25)}"
    )
    ours_median, theirs_median = statistics.median(ours_fail), statistics.median(theirs_fail)
    ratio = ours_median / theirs_median
    print(
        f"verdict failover median over {len(ours_fail)}/{len(theirs_fail)} trials: kraftwire "
        f"{ours_median:.2f} s / Kafka {theirs_median:.2f} s = {ratio:.2f}x (goal <= 1.0x): "
        f"{verdict(ratio <= 1.0)}"
    )
    projection(ours_rows, theirs_rows)


def latency_verdict(ratio: float, theirs: dict) -> str:
    if ratio > 1.0 and theirs["p99"] >= KAFKA_CEILING_MS:
        return "inconclusive (Kafka's figure is its histogram's ceiling, a lower bound)"
    return verdict(ratio <= 1.0)


def projection(ours_rows, theirs_rows) -> None:
    """What a leader with a core of its own would commit, from its CPU per record at the highest rate
    both sustained (CPU per record falls as the rate rises: each batch and fsync carries more)."""
    cores, load = os.cpu_count() or 1, os.getloadavg()[0]
    theirs_by_rate = dict(theirs_rows)
    both = [
        rate
        for rate, r in ours_rows
        if rate in theirs_by_rate
        and r["records_per_s"] >= SUSTAINED * rate
        and theirs_by_rate[rate]["records_per_s"] >= SUSTAINED * rate
    ]
    rate = max(both) if both else ours_rows[0][0]
    ours, theirs = dict(ours_rows)[rate], theirs_by_rate[rate]
    ours_core = 1e4 / max(ours["cpu_per_10k"][ours["leader"]], 1e-9)
    theirs_core = 1e4 / max(theirs["cpu_per_10k"][theirs["leader"]], 1e-9)
    print(
        f"machine: {cores} cores, load average {load:.1f}; three nodes, their disks, this driver and "
        f"whatever else runs share them (a JVM's many threads get more of a crowded scheduler than "
        f"one Python thread), so each ceiling above is this machine's for three nodes at once, not "
        f"a node's with a core of its own, which the machine cannot show. Projection at {rate:,} "
        f"records/s, the highest rate both sustained: records/s a leader would commit with one core "
        f"of its own (10,000 / its CPU s per 10,000 records): kraftwire {ours_core:,.0f}, Kafka "
        f"{theirs_core:,.0f} = {ours_core / theirs_core:.2f}x (floor 0.5x: "
        f"{verdict(ours_core / theirs_core >= 0.5)}; goal 1.0x: "
        f"{verdict(ours_core / theirs_core >= 1.0)})"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rates", default="2000,5000,10000,20000,40000", help="records/s, ascending"
    )
    parser.add_argument("--record-size", type=int, default=256)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument(
        "--step", type=float, default=1.5, help="after --rates, multiply the rate by this (1: stop)"
    )
    parser.add_argument("--max-rate", type=int, default=700_000, help="records/s the steps stop at")
    parser.add_argument(
        "--refine",
        type=int,
        default=2,
        help="halvings of the gap between the highest sustained and lowest unsustained rate",
    )
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--catch-up", type=int, default=100_000, help="records a follower misses")
    parser.add_argument("--kafka-heap-mb", type=int, default=1024)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--sides",
        default="kafka,kraftwire",
        help="kafka, kraftwire or both (the default; the ratios need both)",
    )
    args = parser.parse_args()
    try:
        args.rates = sorted(int(rate) for rate in args.rates.split(","))
    except ValueError:
        parser.error(
            f"--rates takes records/s as whole numbers separated by commas, not {args.rates!r}"
        )
    args.sides = set(args.sides.split(","))
    if not args.sides or not args.sides <= {"kafka", "kraftwire"}:
        parser.error("--sides takes kafka, kraftwire or kafka,kraftwire")
    if (
        args.trials < 0
        or args.refine < 0
        or args.catch_up < 1
        or not args.rates
        or args.rates[0] < 1
    ):
        parser.error(
            "--catch-up and every rate must be at least 1, --trials and --refine at least 0"
        )
    if args.record_size < 1 or args.warmup < 0 or args.window <= 0 or args.kafka_heap_mb < 1:
        parser.error(
            "--record-size and --kafka-heap-mb must be at least 1, --warmup at least 0, --window above 0"
        )
    if args.quick:
        args.rates, args.warmup, args.window, args.trials, args.step = [200], 1.0, 2.0, 1, 1.0
        args.refine = 0
        args.catch_up = 200
        args.kafka_heap_mb = min(args.kafka_heap_mb, 256)
    return args


def main() -> None:
    args = parse_args()
    if shutil.which("java") is None:
        raise SystemExit("bench/raft.py: Java is not installed (Apache Kafka needs Java 17)")
    root = Path(tempfile.mkdtemp(prefix="kraftwire-raft-bench-"))
    try:
        run(root, args)
    except KeyboardInterrupt:
        raise SystemExit(130)
    except (TimeoutError, RuntimeError, FileNotFoundError) as exc:
        raise SystemExit(f"bench/raft.py: {exc}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(root: Path, args) -> None:
    print(
        f"{args.record_size}-byte records, one per append call; rates {args.rates} records/s; "
        f"warmup {args.warmup} s, window {args.window} s; timers {TIMERS}; Kafka heap "
        f"{args.kafka_heap_mb} MiB; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    if args.quick:  # both sides at once: a smoke run's figures mean nothing, its time does
        with ThreadPoolExecutor(2) as pool:
            kafka = pool.submit(sweep, "Kafka TestRaftServer", kafka_step, root, args)
            ours = sweep("kraftwire", kraftwire_step, root, args)
            theirs = kafka.result()
    elif args.sides != {"kafka", "kraftwire"}:
        one_side(root, args)
        return
    else:
        theirs = sweep("Kafka TestRaftServer", kafka_step, root, args)
        ours = sweep("kraftwire", kraftwire_step, root, args)
    if not args.trials:
        summary_without_failover(ours, theirs)
        return
    theirs_fail, ours_fail = theirs[0][1]["failover_s"], ours[0][1]["failover_s"]
    print(f"failover Kafka TestRaftServer: {_seconds(theirs_fail)}", flush=True)
    print(f"failover kraftwire: {_seconds(ours_fail)}", flush=True)
    theirs_catch, ours_catch = theirs[0][1]["catch_up_s"], ours[0][1]["catch_up_s"]
    print(
        f"catch-up of a follower {args.catch_up:,} records behind (restart to the leader's log end, "
        f"process start included): kraftwire {ours_catch:.2f} s, Kafka {theirs_catch:.2f} s = "
        f"{ours_catch / theirs_catch:.2f}x",
        flush=True,
    )
    summary(ours, theirs, ours_fail, theirs_fail)
    print(describe_request_path(32 * 1024), flush=True)


def one_side(root: Path, args) -> None:
    """``--sides kafka`` or ``--sides kraftwire``: that side's rows, ceiling and failover alone."""
    name, step = (
        ("kraftwire", kraftwire_step)
        if "kraftwire" in args.sides
        else ("Kafka TestRaftServer", kafka_step)
    )
    rows = sweep(name, step, root, args)
    ceiling(name, rows)
    if args.trials:
        print(f"failover {name}: {_seconds(rows[0][1]['failover_s'])}", flush=True)
    print(f"one side only ({name}): no ratios; load average {os.getloadavg()[0]:.1f}", flush=True)


def summary_without_failover(ours_rows, theirs_rows) -> None:
    """``--trials 0``: the records/s ratio and the projection, no failover or catch-up."""
    records_verdict(ours_rows, theirs_rows, " (--trials 0: no failover)")
    projection(ours_rows, theirs_rows)


def _seconds(times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (
        f"median {statistics.median(ordered):.2f} s, p90 {p90:.2f} s over {len(ordered)} trials "
        f"(kill -9 of the leader to the first commit in the new epoch)"
    )


if __name__ == "__main__":
    main()
