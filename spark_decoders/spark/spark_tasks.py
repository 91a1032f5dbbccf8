"""How the decoders' Spark tasks run their Python: out of the way of PySpark's after-task collection.

PySpark reuses its Python workers, and after every task a worker runs a full ``gc.collect()``
(``pyspark.daemon``). With the decoders, the codecs and pyarrow imported, a worker holds about
100,000 objects the cyclic collector tracks, so each of those collections took about 30 ms of CPU:
more than the decode of a small capture, and once per task, so ten times a query in the split plan.

``as_spark_task`` first moves every object alive at the task's start (modules, classes, codecs,
caches: all that the previous task left, collected by then) into the collector's permanent
generation (``gc.freeze()``), so the collection after the task walks only what the task itself made
and kept. It then runs the task with the collector paused, as the local decode does: the rows hold
no reference cycles and are freed by reference counting as they become Arrow batches, so the
collector would have walked them for nothing.

The cost: an object that outlives a task's start and later becomes part of a garbage cycle is never
collected. What outlives tasks here is the workers' long-lived state; what of it does die (PySpark's
previous task context, say) is still freed by reference counting, which freezing does not stop.
Outside a Spark worker (local mode, tests calling a reader directly) nothing is frozen.
"""

from __future__ import annotations

import gc
from typing import Iterator, TypeVar

from pyspark import TaskContext

from ..decode.pipeline import CollectorPaused

T = TypeVar("T")


def in_spark_task() -> bool:
    """True in a Spark worker (PySpark sets a task context before it runs a task's code)."""
    return TaskContext.get() is not None


def as_spark_task(items: Iterator[T]) -> Iterator[T]:
    """``items`` (a task's output, made lazily) produced as described above."""
    if in_spark_task():
        gc.freeze()
    with CollectorPaused():
        yield from items
