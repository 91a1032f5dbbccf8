"""Rows encoded inside the Spark tasks, for the command line's ``--format jsonl``.

A DataFrame of typed columns costs the command three conversions of every row after the decode:
to Arrow in the task, to Spark's rows and back to Arrow in the JVM, and to Python dicts in the
driver, which then encodes each dict as a jsonl line, alone, after the last task ended. Here each
task encodes its own rows (the local decode's rows, with the function the local decode writes
them with), so the lines are made on every core at once, and a task's rows travel as a few Spark
rows, one per ``BATCH_ROWS`` of them: their lines, concatenated and compressed (zstd: the records
bench's 214 MB of lines are 11 MB, in 0.15 CPU seconds; the JVM copies a task's result several
times on its way to the driver, about 14 ms per MB), and their sort keys and line lengths
(pickled: tuples of text and numbers), by which the driver puts the lines in local mode's order.

Only for rows that need nothing more than that order: the sightings of one exchange in several
captures are merged from the typed rows (``merge_sightings``), so several captures take the typed
columns.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Iterator

from ..kafka.rows import Row
from ..output.tables import sort_key

# The DataFrame's columns (Spark DDL): per batch of rows, the pickled (sort key, line length) of
# each, the compressed lines, and their length before compression.
ENCODED_DDL = "orders BINARY, lines BINARY, size LONG"
BATCH_ROWS = 4096
CODEC = "zstd"

Encode = Callable[[Row, str], bytes]


def encoded_batches(rows: list[Row], encode: Encode, table: str) -> Iterator[Any]:
    """Arrow batches of one row per ``BATCH_ROWS`` of ``rows`` (see the module's docstring);
    ``rows`` is emptied as it goes (a batch's dicts freed once encoded)."""
    import pyarrow as pa

    size = BATCH_ROWS
    key = sort_key(table)
    schema = pa.schema([("orders", pa.binary()), ("lines", pa.binary()), ("size", pa.int64())])
    rows.reverse()  # each batch is then cut from the end: it costs its own size, not the rest's
    while rows:
        batch = rows[-size:]
        del rows[-size:]
        batch.reverse()
        lines = [encode(row, table) for row in batch]
        orders = [(key(row), len(line)) for row, line in zip(batch, lines)]
        joined = b"".join(lines)
        columns = [
            pa.array([pickle.dumps(orders, pickle.HIGHEST_PROTOCOL)], pa.binary()),
            pa.array([pa.compress(joined, codec=CODEC, asbytes=True)], pa.binary()),
            pa.array([len(joined)], pa.int64()),
        ]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def lines_in_order(table: Any) -> list[bytes]:
    """The lines of a collected Arrow ``table`` of ``ENCODED_DDL`` in their rows' order."""
    import pyarrow as pa

    keys: list[Any] = []
    lines: list[bytes] = []
    for orders, packed, size in zip(
        table.column("orders").to_pylist(),
        table.column("lines").to_pylist(),
        table.column("size").to_pylist(),
    ):
        joined = pa.decompress(packed, size, codec=CODEC, asbytes=True)
        start = 0
        for order, length in pickle.loads(orders):
            keys.append(order)
            lines.append(joined[start : start + length])
            start += length
    return [lines[i] for i in sorted(range(len(lines)), key=keys.__getitem__)]
