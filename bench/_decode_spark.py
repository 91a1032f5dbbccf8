"""The Spark part of ``bench/decode.py``: both plans timed on local[1] and local[2], beside the CPU
seconds of their tasks, which bound what two free cores could gain.

The data source (connection shards) runs one task per core. The split plan cuts the capture into
``SPLITS`` equal byte ranges (stage one, four per core on two cores) and decodes the connections in
a second stage; its account prints each stage's task CPU seconds, measured here by running the
tasks' own functions on what Spark would hand them (the shuffle's own cost aside). local[1] is also
timed with its whole session (JVM and Python workers) held to one core (``report_spark``).
"""

from __future__ import annotations

import collections
import glob
import heapq
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

SPLITS = 8
PORTS = frozenset({9092, 9093})


def load() -> str:
    return f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"


def shard_balance(path: Path, schemas: str) -> tuple[float, list[float]]:
    """CPU seconds of the data source's one shard of local[1] and of each shard of local[2], each
    decoded here as its Spark task decodes it: what two free cores could gain at best."""
    from kraftwire.spark_decoders.spark.shards import codec_bundle, decode_shard

    bundle = codec_bundle(schemas)

    def cpu(shard: int, shards: int) -> float:
        start = time.process_time()
        decode_shard([str(path)], bundle, PORTS, shard, shards, in_order=False)
        return time.process_time() - start

    cpu(0, 2)  # warm-up: the bundle's package imported, the JSON views compiled
    return cpu(0, 1), [cpu(0, 2), cpu(1, 2)]


def schedule(tasks: list[float], cores: int) -> float:
    """When the last of ``tasks`` (CPU seconds, in partition order) ends on ``cores`` free cores,
    each task taken by the first core to free up, as Spark's local scheduler hands them out."""
    free = [0.0] * cores
    for task in tasks:
        heapq.heappush(free, heapq.heappop(free) + task)
    return max(free)


def split_balance(path: Path, schemas: str) -> dict[int, tuple[list[float], list[float]]]:
    """``{cores: (stage one CPU seconds per split, stage two CPU seconds per partition)}`` for
    local[1] and local[2], each task run here on what its Spark task is handed."""
    import pyarrow as pa

    from kraftwire.spark_decoders.spark.shards import codec_bundle
    from kraftwire.spark_decoders.decode.pipeline import map_file
    from kraftwire.spark_decoders.spark.routes import partition_labels
    from kraftwire.spark_decoders.spark.pieces import piece_arrow_schema, split_pieces
    from kraftwire.spark_decoders.spark.splits import plan_splits
    from kraftwire.spark_decoders.spark.stitch import (
        decode_pieces,
        piece_order,
        stage_two_partitions,
    )

    bundle, buf = codec_bundle(schemas), map_file(str(path))
    out = {}
    for cores in (1, 1, 2):  # the first pass a warm-up: the bundle's package imported
        labels = partition_labels(stage_two_partitions(len(buf), cores))
        one, pieces = [], []
        for index, (start, stop) in enumerate(plan_splits(len(buf), -(-len(buf) // SPLITS))):
            begin = time.process_time()
            batches = list(split_pieces(buf, start, stop, (0, index), labels))
            one.append(time.process_time() - begin)
            pieces += [row for batch in batches for row in batch.to_pylist()]
        two = []
        for label in labels:
            mine = sorted((p for p in pieces if p["route"] == label), key=piece_order)
            batch = pa.RecordBatch.from_pylist(mine, schema=piece_arrow_schema())
            begin = time.process_time()
            collections.deque(decode_pieces([batch], (str(path),), bundle, PORTS), maxlen=0)
            two.append(time.process_time() - begin)
        out[cores] = (one, two)
    return out


class Run(NamedTuple):
    wall_s: float
    jvm_cpu_s: float  # CPU seconds of the Spark JVM during the run
    jit_cpu_s: float  # the part of them spent by the JVM's JIT compiler threads
    python_cpu_s: float  # CPU seconds of Spark's Python workers during the run


def _clock_seconds(stat_text: str) -> float:
    """User + system CPU seconds (with waited-for children) of a /proc ``stat`` line."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _spark_cpu() -> tuple[float, float, float]:
    """CPU seconds so far of the Spark JVMs, of their JIT compiler threads, and of Spark's Python
    workers on this machine (0 where /proc is not there to read)."""
    jvm = jit = python = 0.0
    for process in glob.glob("/proc/[0-9]*"):
        try:
            command = _read(f"{process}/cmdline")
            if b"pyspark.daemon" in command:
                python += _clock_seconds(_read(f"{process}/stat").decode())
            elif b"org.apache.spark" in command:
                jvm += _clock_seconds(_read(f"{process}/stat").decode())
                for thread in glob.glob(f"{process}/task/*/stat"):
                    text = _read(thread).decode()
                    if "CompilerThre" in text.split(")", 1)[0]:  # HotSpot's C1 and C2 threads
                        jit += _clock_seconds(text)
        except OSError:  # the process or thread ended meanwhile
            continue
    return jvm, jit, python


def _hold_to(cpus: set[int]) -> None:
    """Let this process, the Spark JVMs and Spark's Python daemons and workers (every thread of
    each) run only on ``cpus``; threads and processes they start later inherit it. Linux only: a
    no-op where the affinity cannot be set."""
    if not hasattr(os, "sched_setaffinity"):
        return
    for process in glob.glob("/proc/[0-9]*"):
        try:
            command = _read(f"{process}/cmdline")
            if (
                process.endswith(f"/{os.getpid()}")
                or b"pyspark.daemon" in command
                or (b"org.apache.spark" in command)
            ):
                for thread in glob.glob(f"{process}/task/*"):
                    os.sched_setaffinity(int(thread.rsplit("/", 1)[1]), cpus)
        except OSError:  # the process or thread ended meanwhile
            continue


class Timed(NamedTuple):
    warm: list[Run]  # the untimed runs first
    runs: list[Run]  # the timed runs of the capture
    small: list[Run]  # then those of a capture of a few exchanges: Spark's own cost per query


def time_spark(
    path: Path,
    schemas: str,
    cores: int,
    split_bytes: int | None,
    rounds: int,
    warmups: int = 1,
    small: Path | None = None,
    cpus: set[int] | None = None,
) -> Timed:
    """``warmups`` untimed runs, then ``rounds`` timed ones, then ``rounds`` of the ``small``
    capture, in one session: for each, wall seconds and the CPU seconds the JVM and the Python
    workers spent (in local[1] the JVM's share runs on the other core). The first run starts the
    Python workers and imports the codecs; over the first few the JVM's JIT compiles Spark's
    per-row code, and its CPU per query falls. ``cpus`` holds the whole session (JVM and Python
    workers) to those CPUs; None lets it use all of this process's."""
    from pyspark.sql import SparkSession

    from kraftwire.spark_decoders import read_exchanges

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    everywhere = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(f"bench-{cores}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # progress bars would garble the figures
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:

        def run(capture: Path = path) -> Run:
            _hold_to(cpus or everywhere)  # before each run: Spark starts its Python daemons late
            start, before = time.perf_counter(), _spark_cpu()
            frame = read_exchanges(
                spark, [str(capture)], schemas=schemas, shards=cores, split_bytes=split_bytes
            )
            frame.write.format("noop").mode("overwrite").save()
            wall, after = time.perf_counter() - start, _spark_cpu()
            return Run(wall, *(now - then for now, then in zip(after, before)))

        warm = [run() for _ in range(max(1, warmups))]
        runs = [run() for _ in range(rounds)]
        return Timed(warm, runs, [run(small) for _ in range(rounds)] if small else [])
    finally:
        _hold_to(everywhere)
        spark.stop()


def _print_accounts(capture: Path, schemas: str, plans: str) -> None:
    if plans in ("both", "source"):
        one, two = shard_balance(capture, schemas)
        print(
            f"data source shards, CPU seconds: local[1] {one:.2f}; local[2] "
            f"{' + '.join(f'{s:.2f}' for s in two)}: at best {one / max(two):.2f}x on two free cores"
        )
    if plans in ("both", "split"):
        account = split_balance(capture, schemas)
        (one_1, two_1), (one_2, two_2) = account[1], account[2]
        best = (sum(one_1) + sum(two_1)) / (schedule(one_2, 2) + schedule(two_2, 2))
        print(
            f"split plan tasks, CPU seconds: stage one {sum(one_1):.2f} ({len(one_1)} splits: "
            f"{' '.join(f'{t:.2f}' for t in one_1)}); stage two local[1] "
            f"{' + '.join(f'{t:.2f}' for t in two_1)}, local[2] "
            f"{' + '.join(f'{t:.2f}' for t in two_2)}: at best {best:.2f}x on two free cores"
        )


def report_spark(
    capture: Path,
    count: int,
    schemas: str,
    figures: dict,
    rounds: int,
    plans: str = "both",
    warmups: int = 1,
    small: Path | None = None,
) -> None:
    """Time ``plans`` (both, source or split) on local[1] and local[2], each after ``warmups``
    untimed runs; print the ratios. With a ``small`` capture, also Spark's own cost per query
    (what decoding it takes is next to nothing), which no number of cores shortens.

    local[1] runs one task at a time, but its JVM (scheduling, Arrow reading, the JIT compiler)
    is free to use the machine's other cores; on two cores, local[2]'s tasks take those cores
    from it. So local[1] is timed once more with the whole session held to one core: the ratio
    to that is the gain from a second core, the JVM's work included on both sides."""
    _print_accounts(capture, schemas, plans)
    chosen = [("data source", None)] if plans in ("both", "source") else []
    if plans in ("both", "split"):
        chosen.append(("split plan", -(-capture.stat().st_size // SPLITS)))  # SPLITS equal ones
    settings: list[tuple[int, set[int] | None]] = [(1, None), (2, None)]
    if hasattr(os, "sched_getaffinity"):
        settings.append((1, {min(os.sched_getaffinity(0))}))
    for plan, split_bytes in chosen:
        for cores, cpus in settings:
            held_small = None if cpus else small  # Spark's own cost: measured unheld
            timed = time_spark(
                capture, schemas, cores, split_bytes, rounds, warmups, held_small, cpus
            )
            key = (plan, cores, "one core") if cpus else (plan, cores)
            figures[key] = _print_timed(plan, cores, count, timed, cpus)
            if timed.small and not cpus:
                figures[(plan, cores, "small")] = min(timed.small).wall_s
            if cores == 2:
                print(
                    f"Spark {plan} local[2] / local[1]: "
                    f"{figures[(plan, 1)] / figures[(plan, 2)]:.2f}x (target >= 1.7x)"
                )
                if small is not None:
                    _print_fixed_cost(plan, small, figures)
        if (plan, 1, "one core") in figures:
            print(
                f"Spark {plan} local[2] / local[1] held to one core: "
                f"{figures[(plan, 1, 'one core')] / figures[(plan, 2)]:.2f}x"
            )
        if "tshark" in figures:
            print(
                f"Spark {plan} local[1] / tshark (wall): "
                f"{figures['tshark'].wall_s / figures[(plan, 1)]:.1f}x"
            )


def _print_timed(plan: str, cores: int, count: int, timed: Timed, cpus: set[int] | None) -> float:
    """Print one setting's best run and its warm-up runs; return the best wall seconds."""
    warm, runs = timed.warm, timed.runs
    fastest = min(runs)
    best = fastest.wall_s
    held = f" held to CPU {', '.join(map(str, sorted(cpus)))}" if cpus else ""
    print(
        f"Spark local[{cores}]{held} {plan:11}: best {best:7.2f} s of "
        f"{', '.join(f'{r.wall_s:.2f}' for r in runs)}  {count / best:9,.0f} pkt/s  "
        f"(CPU: JVM {fastest.jvm_cpu_s:.2f} s, {fastest.jit_cpu_s:.2f} of it JIT; Python workers "
        f"{fastest.python_cpu_s:.2f} s)  {load()}"
    )
    print(
        f"  after {len(warm)} warm-up runs: JVM CPU per run "
        f"{' '.join(f'{r.jvm_cpu_s:.2f}' for r in warm)} (JIT "
        f"{' '.join(f'{r.jit_cpu_s:.2f}' for r in warm)}); wall "
        f"{' '.join(f'{r.wall_s:.2f}' for r in warm)} s"
    )
    return best


def _print_fixed_cost(plan: str, small: Path, figures: dict) -> None:
    """Spark's own cost per query (the best wall time of the small capture) and what it leaves:
    Amdahl's bound on local[2] / local[1] had the rest of the time halved on two cores."""
    one = figures[(plan, 1)]
    fixed_one, fixed_two = figures[(plan, 1, "small")], figures[(plan, 2, "small")]
    rest = one - fixed_one
    print(
        f"  Spark's own cost per query (a {small.stat().st_size:,}-byte capture): local[1] "
        f"{fixed_one:.2f} s, local[2] {fixed_two:.2f} s; the rest of local[1] ({rest:.2f} s) "
        f"halved, local[2] / local[1] would be {one / (fixed_two + rest / 2):.2f}x"
    )
