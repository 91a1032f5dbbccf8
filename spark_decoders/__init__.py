"""kraftwire.spark_decoders: Kafka exchanges from pcap/pcapng captures, locally or with PySpark.

``decode_local(paths)`` decodes in this process; ``register(spark)`` adds the ``kafka-pcap`` data
source and ``read_exchanges(spark, paths)`` reads through it. Spark is imported only by those two.

``IMPLEMENTATION`` says which decoders run: ``"native"`` (the hot path compiled with mypyc by
``make native``) or ``"pure"`` (the default; ``KRAFTWIRE_PURE=1`` forces it). See ``implementation``.
"""

from .native.implementation import choose

# Before any other module of the package is imported: it decides where they are imported from.
IMPLEMENTATION = choose(__path__)

from .api import decode_local, read_exchanges, register  # noqa: E402

__all__ = ["IMPLEMENTATION", "decode_local", "read_exchanges", "register"]
