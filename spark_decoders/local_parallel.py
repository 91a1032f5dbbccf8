"""``kraftwire decode --jobs N``: a local decode spread over N worker processes.

The work is cut as the ``kafka-pcap`` data source cuts it (``datasource``): by connection, each
worker owning the connections ``ownership.ShardOwnership`` gives its shard. Every worker reads
every file, passing over the other shards' packets from their raw bytes, and feeds its own into a
``FlowTable`` as ``decode_files`` does, so a connection is decoded whole by one worker and needs no
stitching. (The split plan's byte ranges, ``stitch``, would read each byte once, but it takes every
packet through the general path and ships every segment's payload between processes: twice the
CPU of the fused path the shards keep.) Each worker sorts its rows by the table's sort key and
merges the sightings of an exchange (two captures' sightings share their connection, so their
shard); the parent merges the sorted lists by the same key, which gives ``decode_files``' order.

For jsonl the workers also encode the rows (``encode``) into files of their own, so that the parent
only copies runs of lines from them: a row's dict costs more to send between processes than to
encode, and the lines cost less to map than to receive through a pipe.

Workers ignore SIGINT: Ctrl-C reaches the parent, which stops them (``Pool.terminate``) before it
exits.
"""

from __future__ import annotations

import heapq
import multiprocessing
import os
import tempfile
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any, BinaryIO, Callable, Iterable

from kraftwire.worker_interrupts import leave_interrupts_to_parent, workers_start_without_interrupts

from .api import local_decoder
from .decode.pipeline import (
    CollectorPaused,
    DecodeOptions,
    FlowTable,
    capture_order,
    feed_file,
    map_file,
)
from .kafka.rows import OrderedRows, Row
from .output.sightings import merge_sightings
from .output.tables import EXCHANGES, sort_key
from .packets.capture import CaptureError, CaptureStats
from .spark.ownership import ShardOwnership

# Below this many bytes of captures in all, one process decodes: two workers cost about 0.15 s
# of CPU more than one process (the pool, the spill files, each worker reading the whole input),
# and a 4 MiB capture took 0.42 s of CPU in one process against 0.57 s with two (synthetic KRaft
# traffic, compiled), so that two free cores would save about as much as the workers cost.
PARALLEL_ABOVE_BYTES = 8 * 1024 * 1024

# A spill file's buffer: its lines (a few kB each) reach the file in writes of this size, not of
# the default 8 KiB (half the CPU seconds of the writes).
SPILL_BUFFER_BYTES = 1 << 20

# A row (a dict) encoded into one output line; module-level so that a worker can be sent it.
Encoder = Callable[[Row, str], bytes]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def worth_parallel(paths: list[str], jobs: int, above_bytes: int = PARALLEL_ABOVE_BYTES) -> bool:
    """Whether ``jobs`` workers should decode ``paths``: more than one job, and captures larger
    than ``above_bytes`` in all."""
    return jobs > 1 and sum(os.path.getsize(path) for path in paths) > above_bytes


@dataclass
class ShardResult:
    """One worker's output: its rows' sort keys and, in that order, its rows or (encoded) the
    lengths of their lines in its spill file; and the problems it noted per file."""

    keys: list[Any]
    items: list[Any]
    problems: dict[str, list[str]] = field(default_factory=dict)
    spill: str | None = None


def decode_parallel(
    paths: list[str],
    schemas: str | None,
    options: DecodeOptions,
    jobs: int,
    encode: Encoder | None = None,
) -> tuple[list[Any], dict[str, CaptureStats]]:
    """``decode_files``' rows of ``paths`` (exchanges with their sightings merged), decoded by
    ``jobs`` worker processes; with ``encode``, their lines instead, as byte buffers each holding
    one or more lines. And per file, stats holding the problems the workers noted (the first
    worker's first, then the others' not already there)."""
    files = capture_order(paths)
    local_decoder(schemas)  # the specs' problems told here, as one process tells them
    # Encoded lines go through files of the workers' own (hundreds of MB for a large capture):
    # a pipe and pickle would cost the parent a third of the decode to receive them.
    with tempfile.TemporaryDirectory(prefix="kraftwire-decode-") as spill_dir:
        tasks = [(files, schemas, options, shard, jobs, encode, spill_dir) for shard in range(jobs)]
        with workers_start_without_interrupts():
            pool = _start_method().Pool(jobs, initializer=leave_interrupts_to_parent)
        try:
            results = pool.starmap(decode_one_shard, tasks, chunksize=1)
            pool.close()
        finally:
            pool.terminate()  # Ctrl-C or a worker's error: no worker outlives the command
            pool.join()
        order = heapq.merge(
            *(zip(r.keys, repeat(shard), r.items) for shard, r in enumerate(results)),
            key=itemgetter(0),
        )
        if encode is None:
            return [row for _, _, row in order], _merged_stats(files, results)
        spills = [_mapped(result.spill) for result in results]
        return _line_runs(order, spills, jobs), _merged_stats(files, results)


def _mapped(path: str | None) -> memoryview:
    """The spill file's bytes, mapped (they stay readable after the folder is removed)."""
    assert path is not None  # an encoding worker always spills
    return memoryview(map_file(path))


def _line_runs(
    order: Iterable[tuple[Any, int, int]], spills: list[memoryview], shards: int
) -> list[memoryview]:
    """The lines in ``order`` (sort key, shard, line length), as slices of the shards' spill
    files, consecutive lines of one shard in one slice."""
    runs: list[memoryview] = []
    offsets = [0] * shards
    shard, start = -1, 0
    for _, line_shard, length in order:
        if line_shard != shard:
            if shard >= 0:
                runs.append(spills[shard][start : offsets[shard]])
            shard, start = line_shard, offsets[line_shard]
        offsets[line_shard] += length
    if shard >= 0:
        runs.append(spills[shard][start : offsets[shard]])
    return runs


def _start_method() -> Any:  # a multiprocessing context (its type differs per method)
    """Fork where there is fork: a forked worker starts with the codecs this process loaded, a
    spawned one imports and loads them again (about 0.3 s). Everything sent to a worker is
    picklable, so spawn works as well."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def decode_one_shard(
    files: tuple[str, ...],
    schemas: str | None,
    options: DecodeOptions,
    shard: int,
    shards: int,
    encode: Encoder | None,
    spill_dir: str,
) -> ShardResult:
    """A worker's part: the rows of the connections of ``shard`` (of ``shards``) in ``files``
    (already in ``decode_files``' order), fed as ``decode_files`` feeds them."""
    key = sort_key(options.table)
    emitted = OrderedRows(key)
    flows = FlowTable(files, local_decoder(schemas), emitted.add, options)
    ownership = ShardOwnership(shard, shards)
    problems: dict[str, list[str]] = {}
    with CollectorPaused():
        for index, path in enumerate(files):
            stats = CaptureStats()
            try:
                feed_file(
                    flows, map_file(path), index, stats, skips=ownership.skips, owns=ownership.owns
                )
            except CaptureError as exc:  # not a capture: reported, the other files still decode
                stats.note(str(exc))
            problems[path] = stats.problems
        flows.finish()
        rows = emitted.in_order()
        if options.table == EXCHANGES:
            rows = merge_sightings(rows)
        keys = [key(row) for row in rows]
        if encode is None:
            return ShardResult(keys, rows, problems)
        spill = os.path.join(spill_dir, f"shard-{shard}")
        with open(spill, "xb", buffering=SPILL_BUFFER_BYTES) as out:
            lengths = _spilled(rows, encode, options.table, out)
    return ShardResult(keys, lengths, problems, spill)


def _spilled(rows: list[Row], encode: Encoder, table: str, out: BinaryIO) -> list[int]:
    """Each row's line written to ``out`` as it is encoded (not all held first: the lines of half
    a large capture are hundreds of MB); their lengths."""
    lengths = []
    write = out.write
    for row in rows:
        lengths.append(write(encode(row, table)))
    return lengths


def _merged_stats(files: tuple[str, ...], results: list[ShardResult]) -> dict[str, CaptureStats]:
    stats = {path: CaptureStats() for path in files}
    for result in results:
        for path, problems in result.problems.items():
            for problem in problems:
                if problem not in stats[path].problems:
                    stats[path].note(problem)
    return stats
