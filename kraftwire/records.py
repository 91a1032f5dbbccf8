"""Kafka record batches: the public records API of kraftwire.

The implementation is the records layer bundled into the generated package
(``kraftwire.generated.records``); this module re-exports it so users have one stable import::

    from kraftwire.records import decode_batches, encode_batch, DecodeError

    batches, partial_tail = decode_batches(fetch_partition.records)
    data = encode_batch([(b"key", b"value", [("h", b"1")], 1700000000000)], compression="zstd")
"""

from kraftwire.generated.records import *  # noqa: F401,F403 - the public names, listed once there
from kraftwire.generated.records import __all__  # noqa: F401
