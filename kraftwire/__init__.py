"""kraftwire: a Kafka wire-protocol toolkit.

The layers are separate packages, and data flows one way:
``kraftwire.codegen`` (spec model and generator) → ``kraftwire.generated`` (the codecs it emits)
→ ``kraftwire.node`` (a KRaft node) and ``kraftwire.spark_decoders`` (capture decoding).
This package holds only the command line and re-exports that span the layers.
"""

__version__ = "0.1.0"
