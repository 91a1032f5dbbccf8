"""kraftwire.spark_decoders: Kafka exchanges from pcap/pcapng captures, locally or with PySpark.

``decode_local(paths)`` decodes in this process; ``register(spark)`` adds the ``kafka-pcap`` data
source and ``read_exchanges(spark, paths)`` reads through it. Spark is imported only by those two.
"""

from .api import decode_local, read_exchanges, register

__all__ = ["decode_local", "read_exchanges", "register"]
