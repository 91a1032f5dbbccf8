"""The data source's shards, without Spark: each decodes the connections it owns (``ownership``) of
every file, with the local mode's ``FlowTable``.

Nothing here imports pyspark: the data source (``datasource``) and tests call these, the command
line checks its paths (``check_spark_paths``) before it starts a session, and the codecs a read was
planned with travel to the executors as a ``CodecBundle`` (``codec_bundle``).
"""

from __future__ import annotations

import glob
import os
from typing import Callable, Iterator

from ..decode.pipeline import (
    CollectorPaused,
    DecodeOptions,
    FlowTable,
    capture_order,
    feed_file_in_steps,
    map_file,
)
from ..kafka.bodies import BodyDecoder
from kraftwire.codegen.package_cache import (
    CodecBundle,
    codecs_bundle,
    load_codecs,
    parse_schema_dirs,
    specs_fingerprint,
)
from ..kafka.rows import OrderedRows, Row
from ..output.tables import EXCHANGES, sort_key
from ..packets.capture import CaptureError, CaptureStats, shown_name
from .ownership import ShardOwnership

# Bundles built in this process, by the fingerprint of their specs: Spark plans every read in a
# reused Python process, which then compresses the package's sources only once.
_BUNDLES: dict[str, CodecBundle] = {}


def codec_bundle(schemas: str | None) -> CodecBundle | None:
    """The generated codecs for ``schemas`` (DIR[,DIR...]) by value; None for the bundled ones."""
    dirs = parse_schema_dirs(schemas)
    if not dirs:
        return None
    fingerprint = specs_fingerprint(dirs)
    bundle = _BUNDLES.get(fingerprint)
    if bundle is None:
        bundle = _BUNDLES[fingerprint] = codecs_bundle(dirs)
    return bundle


def expand_paths(text: str) -> list[str]:
    """Comma-separated paths or globs, each expanded and the result sorted; missing ones raise."""
    out: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        matches = sorted(glob.glob(part)) if glob.has_magic(part) else [part]
        if not matches or not all(os.path.isfile(m) for m in matches):
            raise FileNotFoundError(f"no capture file matches {part!r}")
        out.extend(os.path.abspath(m) for m in matches)  # executors run in other directories
    return out


def check_spark_paths(paths: list[str]) -> None:
    """ValueError naming the first of ``paths`` Spark cannot be given: py4j sends text to the JVM
    as UTF-8, and a file name that is not UTF-8 holds lone surrogates in Python."""
    for path in paths:
        shown = shown_name(path)
        if shown != path:
            raise ValueError(
                f"{shown}: Spark takes only file names that are UTF-8 text; "
                "rename the file, or decode it without --spark"
            )


def decode_shard(
    paths: list[str],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    shard: int,
    shards: int,
    table: str = EXCHANGES,
    in_order: bool = True,
) -> list[Row]:
    """Rows of the connections in one shard (see ``datasource``), in local mode's order; with
    ``in_order`` False in the order their connections ended (Spark keeps no order of a data
    source's rows, so its tasks skip the sort)."""
    rows: list[Row] = []
    ordered = OrderedRows(sort_key(table)) if in_order else None
    emit = ordered.add if ordered else rows.append
    with CollectorPaused():
        for _ in _feed_shard(paths, bundle, ports, shard, shards, table, emit, None):
            pass
        if ordered:
            rows = ordered.in_order()  # collector still paused: see decode_files
    return rows


# How many rows ``stream_shard`` lets gather before it hands them on: a few Arrow batches' worth.
STREAM_HOLD_ROWS = 4 * 4096


def stream_shard(
    paths: list[str],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    shard: int,
    shards: int,
    table: str = EXCHANGES,
    hold_rows: int | None = None,
) -> Iterator[list[Row]]:
    """``decode_shard``'s rows (in_order False) in lists handed on while the shard decodes: the
    decode pauses once ``hold_rows`` or more are held (looked at every ``STOP_CHECK_PACKETS``
    packets), so that a task holds a bounded number of rows whatever the capture's size; None
    for ``STREAM_HOLD_ROWS``."""
    rows: list[Row] = []
    bound = STREAM_HOLD_ROWS if hold_rows is None else hold_rows

    def full() -> bool:
        return len(rows) >= bound

    with CollectorPaused():
        for _ in _feed_shard(paths, bundle, ports, shard, shards, table, rows.append, full):
            if rows:
                yield rows[:]
                rows.clear()
    if rows:
        yield rows


def _feed_shard(
    paths: list[str],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    shard: int,
    shards: int,
    table: str,
    emit: Callable[[Row], None],
    stop: Callable[[], bool] | None,
) -> Iterator[None]:
    """Every file of ``paths`` into one shard's ``FlowTable`` emitting to ``emit``, pausing (a
    yield) whenever ``stop`` says so (see ``feed_file_in_steps``); the last rows are emitted
    after the last yield."""
    files = capture_order(paths)
    flows = FlowTable(
        files,
        BodyDecoder(load_codecs(bundle)),
        emit,
        DecodeOptions(server_ports=ports, table=table),
    )
    ownership = ShardOwnership(shard, shards)
    alone = shards == 1  # one shard owns everything: nothing to sort out
    for index, path in enumerate(files):
        steps = feed_file_in_steps(
            flows,
            map_file(path),
            index,
            CaptureStats(),
            stop,
            skips=None if alone else ownership.skips,
            owns=None if alone else ownership.owns,
        )
        try:
            yield from steps
        except CaptureError:
            continue  # not a capture: local mode reports it; here it simply yields nothing
        if stop is not None and stop():  # a file's end adds its own rows to the last stretch's
            yield
    flows.finish()
