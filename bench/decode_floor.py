"""Where the pure decode of the consumer-shaped FetchRequest v18 spends its time, and its floor.

    .venv/bin/python bench/decode_floor.py             # ~20 s on a shared 2-core machine
    .venv/bin/python bench/decode_floor.py --quick     # smoke run, figures not meaningful

The message is bench/codec.py's (1 topic x 100 partitions, no tagged fields). Its decode is nearly all
one loop over the 100 partitions, and each partition costs work no pure-Python reader that returns
this object model can skip: a new FetchPartition instance (created and, when the message is dropped,
freed), its six integers unpacked from the wire, and nine slot stores. Each part is timed on its
own, on the same bytes, in the same interleaved rounds as the whole decode and kafka-python's:

  top level   the same message with no partitions: everything but the loop
  instances   100 unfilled FetchPartition instances, created in one C-level pass and freed
  values      the 600 integers of the 100 rows, one Struct.unpack for all of them (no tuple per row)
  rows        the same through Struct.iter_unpack (one tuple per row): what the reader uses
  stores      the loop's slot stores into instances made beforehand, from rows made beforehand
  loop        the reader's loop over the 100 rows as generated: instances, rows and stores at once

floor = top level + instances + values + stores is a lower bound: a reader still has to bring each
value to its store (the reader's rows do it for the price of "rows"; spreading one flat tuple over
the elements measured no cheaper). kafka-python / floor is the best ratio a pure reader of this
object model could reach on this interpreter. The pure codecs are forced (KRAFTWIRE_PURE=1).

Other element models, each as its cheapest loop over the same rows (top level added to each):

  slotted     the generated loop (this object model: mutable, typed, nine slots)
  plain       a class without __slots__ whose six wire fields are stored and whose defaults are
              class attributes (mutable; CPython keeps such attributes inline, without a dict)
  named tuple a tuple subclass made in one C-level pass over the rows (immutable)
  raw tuples  the rows themselves (no class, no field names: not a typed object model)
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib
import operator
import os
import struct
import sys
from collections.abc import Callable
from itertools import repeat
from pathlib import Path
from types import ModuleType

os.environ["KRAFTWIRE_PURE"] = "1"  # before the package is imported: time the pure readers
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _codec_messages import kw_consumer_fetch  # noqa: E402
from _timing import best_rates  # noqa: E402
from codec import codegen_package, kafka_python_class  # noqa: E402

VERSION = 18


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny loops, 2 rounds")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (9)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    seconds, rounds = (0.01, 2) if args.quick else (0.2, args.rounds)

    pkg = codegen_package(quiet=True)
    module = importlib.import_module(f"{pkg.__name__}.fetch_request")
    if module.CODEC_IMPLEMENTATION != "pure":
        sys.exit("bench/decode_floor.py: the pure codecs were not loaded")
    message = kw_consumer_fetch(pkg)
    data = message.encode(VERSION)
    bare = copy.deepcopy(message)
    bare.topics[0].partitions = []
    bare_data = bare.encode(VERSION)
    request_cls, kp_cls = module.FetchRequest, kafka_python_class("FetchRequest")

    fns = {
        "decode": lambda: request_cls.decode(data, VERSION),
        "kafka-python decode": lambda: kp_cls.decode(data, version=VERSION),
        "top level": lambda: request_cls.decode(bare_data, VERSION),
        **_loop_parts(module, data, message.topics[0].partitions),
    }
    micros = {name: 1e6 / best for name, (best, _) in best_rates(fns, seconds, rounds).items()}
    floor = sum(micros[name] for name in ("top level", "instances", "values", "stores"))

    count = len(message.topics[0].partitions)
    print(f"FetchRequest v{VERSION} consumer, {count} partitions, {len(data)} bytes (pure readers)")
    print(f"{'part':<22} {'us':>8}")
    for name, value in micros.items():
        print(f"{name:<22} {value:8.2f}")
    print(f"{'floor (lower bound)':<22} {floor:8.2f}")
    kp = micros["kafka-python decode"]
    print(f"kafka-python / decode = {kp / micros['decode']:.2f}x")
    print(f"kafka-python / floor  = {kp / floor:.2f}x  (the most a pure reader could reach)")
    print(f"{'element model':<22} {'us':>8}  kafka-python / (top level + loop)")
    for model, part in (
        ("slotted", "loop"),
        ("plain", "plain loop"),
        ("named tuple", "named tuple loop"),
        ("raw tuples", "rows"),
    ):
        whole = micros["top level"] + micros[part]
        print(f"{model:<22} {whole:8.2f}  {kp / whole:.2f}x")
    return 0


def _loop_parts(
    module: ModuleType, data: bytes, partitions: list
) -> dict[str, Callable[[], object]]:
    """The partition loop's parts, each a function timed on its own (see the module docstring)."""
    partition_cls, count = module.FetchPartition, len(partitions)
    # the rows as they are on the wire: 32 bytes of fields and an empty tagged section each
    row = struct.Struct(">iiqiqix")
    all_rows = struct.Struct(">" + "iiqiqix" * count)
    start = data.index(row.pack(*_fields(partitions[0])))
    wire_rows = data[start : start + row.size * count]
    if list(row.iter_unpack(wire_rows)) != [_fields(p) for p in partitions]:
        sys.exit("bench/decode_floor.py: did not find the partition rows in the message")

    def instances() -> list:
        # the cheapest way found to create them: one C-level pass, no call per element from Python
        return list(map(object.__new__, repeat(partition_cls, count)))

    made, made_rows = instances(), list(row.iter_unpack(wire_rows))
    zero_uuid, int64_max, new = module._ZERO_UUID, module._INT64_MAX, module._new

    stores = functools.partial(_stores, made, made_rows, zero_uuid, int64_max)
    end = start + row.size * count
    loop = functools.partial(_loop, new, partition_cls, row, data, start, end, zero_uuid, int64_max)
    stores()
    if made != partitions or loop() != partitions:
        sys.exit("bench/decode_floor.py: the loops do not rebuild the partitions")
    return {
        "instances": instances,
        "values": lambda: all_rows.unpack(wire_rows),
        "rows": lambda: list(row.iter_unpack(wire_rows)),
        "stores": stores,
        "loop": loop,
        **_other_models(row, wire_rows, partitions),
    }


class _PlainPartition:
    """FetchPartition without __slots__: the wire fields per instance, the defaults on the class."""

    replica_directory_id = None
    high_watermark = (1 << 63) - 1
    unknown_tagged_fields = None


class _NamedPartition(tuple):
    """FetchPartition as an immutable tuple subclass, fields read by position (as namedtuple does)."""

    __slots__ = ()
    partition = property(operator.itemgetter(0))
    fetch_offset = property(operator.itemgetter(2))


def _other_models(row: struct.Struct, wire_rows: bytes, partitions: list) -> dict[str, Callable]:
    """The loops of the other element models (see the module docstring), checked against the rows."""

    def plain_loop() -> list:
        new, cls, elements = object.__new__, _PlainPartition, []
        for fields in row.iter_unpack(wire_rows):
            e = new(cls)
            (
                e.partition,
                e.current_leader_epoch,
                e.fetch_offset,
                e.last_fetched_epoch,
                e.log_start_offset,
                e.partition_max_bytes,
            ) = fields
            elements.append(e)
        return elements

    def named_tuple_loop() -> list:
        return list(map(tuple.__new__, repeat(_NamedPartition), row.iter_unpack(wire_rows)))

    expected = [(p.partition, p.fetch_offset) for p in partitions]
    for loop in (plain_loop, named_tuple_loop):
        if [(e.partition, e.fetch_offset) for e in loop()] != expected:
            sys.exit(f"bench/decode_floor.py: {loop.__name__} does not rebuild the partitions")
    return {"plain loop": plain_loop, "named tuple loop": named_tuple_loop}


def _stores(made: list, rows: list, zero_uuid: object, int64_max: int) -> None:
    # the generated loop's stores (see _read_fetch_topic_v18), minus creating instances and rows
    for e, (
        e.partition,
        e.current_leader_epoch,
        e.fetch_offset,
        e.last_fetched_epoch,
        e.log_start_offset,
        e.partition_max_bytes,
    ) in zip(made, rows):
        e.replica_directory_id = zero_uuid
        e.high_watermark = int64_max
        e.unknown_tagged_fields = None


def _loop(
    new: Callable,
    cls: type,
    row: struct.Struct,
    data: bytes,
    start: int,
    end: int,
    zero_uuid: object,
    int64_max: int,
) -> list:
    # the generated loop itself (_read_fetch_topic_v18's): instances, rows and stores at once
    elements = []
    for fields in row.iter_unpack(data[start:end]):
        e = new(cls)
        (
            e.partition,
            e.current_leader_epoch,
            e.fetch_offset,
            e.last_fetched_epoch,
            e.log_start_offset,
            e.partition_max_bytes,
        ) = fields
        e.replica_directory_id = zero_uuid
        e.high_watermark = int64_max
        e.unknown_tagged_fields = None
        elements.append(e)
    return elements


def _fields(p) -> tuple[int, ...]:
    return (
        p.partition,
        p.current_leader_epoch,
        p.fetch_offset,
        p.last_fetched_epoch,
        p.log_start_offset,
        p.partition_max_bytes,
    )


if __name__ == "__main__":
    raise SystemExit(main())
