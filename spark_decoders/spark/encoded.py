"""Rows encoded inside the Spark tasks, for the command line's ``--format jsonl``.

A DataFrame of typed columns costs the command three conversions of every row after the decode:
to Arrow in the task, to Spark's rows and back to Arrow in the JVM, and to Python dicts in the
driver, which then encodes each dict as a jsonl line, alone, after the last task ended. Here each
task encodes its own rows (the local decode's rows, with the function the local decode writes
them with), so the lines are made on every core at once, and the rows travel as two binary
columns: the line, and the row's sort key (pickled: tuples of text and numbers) by which the
driver puts the lines in local mode's order.

Only for rows that need nothing more than that order: the sightings of one exchange in several
captures are merged from the typed rows (``merge_sightings``), so several captures take the typed
columns.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Iterator

from ..kafka.rows import Row
from ..output.tables import sort_key

# The DataFrame's columns (Spark DDL) and the Arrow schema of its batches.
ENCODED_DDL = "order BINARY, line BINARY"
BATCH_ROWS = 4096

Encode = Callable[[Row, str], bytes]


def encoded_batches(
    rows: list[Row], encode: Encode, table: str, size: int = BATCH_ROWS
) -> Iterator[Any]:
    """Arrow batches of at most ``size`` rows: each row's pickled sort key and ``encode(row,
    table)``; ``rows`` is emptied as it goes (a batch's dicts freed once encoded)."""
    import pyarrow as pa

    key = sort_key(table)
    schema = pa.schema([("order", pa.binary()), ("line", pa.binary())])
    rows.reverse()  # each batch is then cut from the end: it costs its own size, not the rest's
    while rows:
        batch = rows[-size:]
        del rows[-size:]
        batch.reverse()
        orders = [pickle.dumps(key(row), pickle.HIGHEST_PROTOCOL) for row in batch]
        lines = [encode(row, table) for row in batch]
        yield pa.RecordBatch.from_arrays(
            [pa.array(orders, pa.binary()), pa.array(lines, pa.binary())], schema=schema
        )


def lines_in_order(table: Any) -> list[bytes]:
    """The lines of a collected Arrow ``table`` of ``ENCODED_DDL`` in their rows' order."""
    orders = [pickle.loads(order) for order in table.column("order").to_pylist()]
    lines = table.column("line").to_pylist()
    return [lines[i] for i in sorted(range(len(lines)), key=orders.__getitem__)]
