"""kraftwire: a Kafka wire-protocol toolkit.

The layers are separate packages, and data flows one way:
``kraftwire.codegen`` (spec model and generator) → ``kraftwire.generated`` (the codecs it emits)
→ ``kraftwire.node`` (a KRaft node) and ``kraftwire.spark_decoders`` (capture decoding).
This package holds the ``kraftwire`` command (``cli``: a dispatcher to each layer's subcommands,
plus the commands that use the generated codecs directly: ``specs``, ``inspect``, ``decode_frame``),
``demo`` (``make demo``) and ``records``, the public re-export of the records API. See
docs/architecture.md.
"""

__version__ = "0.1.0"
