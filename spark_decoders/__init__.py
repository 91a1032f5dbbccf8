"""kraftwire.spark_decoders: Kafka exchanges from pcap/pcapng captures, locally or with PySpark.

``decode_local(paths)`` decodes in this process; ``register(spark)`` adds the ``kafka-pcap`` data
source and ``read_exchanges(spark, paths)`` reads through its shards. Spark is imported only by
those two, when they are first asked for (``spark.reading``): it is an optional extra.

The modules by stage, each importing only those before it: ``native`` (which implementation runs)
-> ``packets`` (capture records, link/IP/TCP, fragments, reassembly) -> ``kafka`` (framing,
headers, bodies, exchanges and their rows) -> ``output`` (tables, report) -> ``decode`` (the local
loop) -> ``spark`` (shards, the split plan, the data sources) -> ``api``, ``cli``, ``report``.

``IMPLEMENTATION`` says which decoders run: ``"native"`` (the hot path compiled with mypyc by
``make native``) or ``"pure"`` (the default; ``KRAFTWIRE_PURE=1`` forces it). See
``native.implementation``.
"""

from __future__ import annotations

from typing import Any

from .native.implementation import choose

# Before any other module of the package is imported: it decides where they are imported from.
IMPLEMENTATION = choose(__path__)

from .api import decode_local  # noqa: E402

__all__ = ["IMPLEMENTATION", "decode_local", "read_exchanges", "register"]

_SPARK_ENTRY_POINTS = ("read_exchanges", "register")


def __getattr__(name: str) -> Any:
    """``register`` and ``read_exchanges``, from ``spark.reading`` on first use: importing it
    imports pyspark, which only a Spark user installs (and which takes seconds to import)."""
    if name in _SPARK_ENTRY_POINTS:
        from .spark import reading

        return getattr(reading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
