"""The public entry points: local decoding, Spark registration and reading.

from kraftwire.spark_decoders import register, read_exchanges, decode_local
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

from kraftwire.codegen.package_cache import (
    CodecBundle,
    codecs_bundle,
    generated_codecs,
    load_codecs,
    parse_schema_dirs,
    specs_fingerprint,
)

from .bodies import BodyDecoder
from .connection import DEFAULT_SERVER_PORTS
from .pipeline import (
    CollectorPaused,
    DecodeOptions,
    FlowTable,
    decode_files,
    feed_file_in_steps,
    first_timestamp,
    map_file,
)
from .capture import CaptureError, CaptureStats, shown_name
from .ownership import ShardOwnership
from .rows import OrderedRows
from .sightings import merge_sightings
from .tables import EXCHANGES, check_table, sort_key, utc_aware

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


def local_decoder(schemas: str | None = None) -> BodyDecoder:
    dirs = parse_schema_dirs(schemas)
    if not dirs:
        return BodyDecoder(load_codecs(None))
    package, _ = generated_codecs(dirs)
    return BodyDecoder(package)


def decode_local(
    paths: list[str],
    schemas: str | None = None,
    ports: frozenset[int] = DEFAULT_SERVER_PORTS,
    table: str = EXCHANGES,
) -> list[dict]:
    """Rows of ``table`` (exchanges, frames or connections) of the captures, decoded in this process.
    An exchange several of the captures saw is one row (``sightings.merge_sightings``)."""
    options = DecodeOptions(server_ports=ports, table=check_table(table))
    rows, _ = decode_files(paths, local_decoder(schemas), options)
    return merge_sightings(rows) if table == EXCHANGES else rows


def decode_shard(
    paths: list[str],
    bundle: CodecBundle | None,
    ports: frozenset[int],
    shard: int,
    shards: int,
    table: str = EXCHANGES,
    in_order: bool = True,
) -> list[dict]:
    """Rows of the connections in one shard (see ``datasource``), in local mode's order; with
    ``in_order`` False in the order their connections ended (Spark keeps no order of a data
    source's rows, so its tasks skip the sort)."""
    rows: list[dict] = []
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
) -> Iterator[list[dict]]:
    """``decode_shard``'s rows (in_order False) in lists handed on while the shard decodes: the
    decode pauses once ``hold_rows`` or more are held (looked at every ``STOP_CHECK_PACKETS``
    packets), so that a task holds a bounded number of rows whatever the capture's size; None
    for ``STREAM_HOLD_ROWS``."""
    rows: list[dict] = []
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
    emit: Callable[[dict], None],
    stop: Callable[[], bool] | None,
) -> Iterator[None]:
    """Every file of ``paths`` into one shard's ``FlowTable`` emitting to ``emit``, pausing (a
    yield) whenever ``stop`` says so (see ``feed_file_in_steps``); the last rows are emitted
    after the last yield."""
    files = tuple(
        sorted((os.path.abspath(p) for p in paths), key=lambda p: (first_timestamp(p), p))
    )
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


def register(spark) -> None:
    """Make ``spark.read.format("kafka-pcap")`` available in this session."""
    from .datasource import KafkaPcapDataSource, register_once

    register_once(spark, KafkaPcapDataSource)


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


# Captures above this many bytes in all are read through the split plan unless told otherwise:
# every data source shard reads all of the input (passing over the other shards' packets), so its
# reading grows with the number of cores, while the split plan reads each byte once, at about
# twice the CPU of the decode.
SPLIT_ABOVE_BYTES = 256 * 1024 * 1024
SPLIT_BYTES = 64 * 1024 * 1024  # the byte ranges of the split plan chosen for large captures


def read_exchanges(
    spark,
    paths: list[str],
    schemas: str | None = None,
    ports: frozenset[int] = DEFAULT_SERVER_PORTS,
    shards: int | None = None,
    split_bytes: int | None = None,
    table: str = EXCHANGES,
):
    """A DataFrame of the exchanges in ``paths`` (or of their frames or connections: ``table``).

    Through the ``kafka-pcap`` data source (connection shards, every file read by every shard), or
    with ``split_bytes`` through the split plan (``stitch``): files cut into byte ranges read in
    parallel, connections stitched across them in a second stage. Both give local mode's rows.
    ``split_bytes`` None chooses: the split plan (``SPLIT_BYTES``) when the captures hold more
    than ``SPLIT_ABOVE_BYTES`` in all, so that no task holds more rows than fit in memory; 0 means
    the data source whatever the size.
    """
    check_spark_paths(paths)
    if split_bytes is None and _total_bytes(paths) > SPLIT_ABOVE_BYTES:
        split_bytes = SPLIT_BYTES
    if split_bytes:
        from .stitch import read_split_exchanges

        return read_split_exchanges(
            spark,
            [os.path.abspath(p) for p in paths],
            codec_bundle(schemas),
            ports,
            split_bytes,
            check_table(table),
        )
    register(spark)
    reader = (
        spark.read.format("kafka-pcap")
        .option("ports", ",".join(str(p) for p in sorted(ports)))
        .option("table", check_table(table))
    )
    if schemas:
        reader = reader.option(
            "schemas", ",".join(str(Path(d).resolve()) for d in parse_schema_dirs(schemas))
        )
    if shards:
        reader = reader.option("shards", str(shards))
    return reader.load(",".join(os.path.abspath(p) for p in paths))


def _total_bytes(paths: list[str]) -> int:
    """The size of the captures ``paths`` names (globs expanded, as the data source does)."""
    from .datasource import expand_paths

    return sum(os.path.getsize(path) for path in expand_paths(",".join(paths)))


def spark_rows_as_dicts(frame, table: str = EXCHANGES) -> list[dict]:
    """Collected rows as local mode's dicts (UTC-aware timestamps), in local mode's order, the
    sightings of an exchange merged as ``decode_local`` merges them (the DataFrame itself has a
    row per capture that saw an exchange)."""
    rows = [utc_aware(row, table) for row in frame.toArrow().to_pylist()]
    rows.sort(key=sort_key(table))
    return merge_sightings(rows) if table == EXCHANGES else rows
