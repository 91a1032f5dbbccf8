"""Records/s decoding 1,000-record v2 batches: kraftwire.records against kafka-python, same run.

    .venv/bin/python bench/records.py [--records 1000] [--repeat 7] [--codecs none,lz4,zstd]
    .venv/bin/python bench/records.py --view   # the JSON view: fused reader vs object path
    .venv/bin/python bench/records.py --reader   # the fused reader itself: compiled vs pure

Each side decodes the same batch bytes (written by kraftwire, read back by both) and touches every
record's key and value. Both verify the batch CRC: kraftwire always does, and kafka-python's consumer
does by default (``check_crcs=True``); the kafka-python figure without the check is printed too. Runs
are interleaved and the best of ``--repeat`` rounds is kept, which suits a shared, noisy machine.

``--view`` times the JSON view of the same bytes instead: ``batches_to_json`` (v2 batches read
straight into the view) against ``decode_batches`` + ``batch_to_json`` (the Record/RecordBatch
objects' view, what ``batches_to_json`` did before), on one ``--records`` batch per codec and on 1,000
buffers of one 3-record batch each, like the records fields of ``bench/decode.py``'s capture.

``--reader`` times that fused reader (``read_batch_views``) on the same buffers, compiled (the
``_native__v2_view`` that ``make native`` builds into kraftwire.generated) against pure, in one
process; without a current compiled build it says so and stops.
"""

from __future__ import annotations

import argparse
import random
import time

from kraftwire.records import batch_to_json, batches_to_json, decode_batches, encode_batch


def make_records(count: int, seed: int = 1) -> list:
    """Records shaped like typical event traffic: short keys, ~80-byte semi-random values."""
    rng = random.Random(seed)
    base = 1_700_000_000_000
    records = []
    for i in range(count):
        value = bytes(rng.getrandbits(8) for _ in range(20)) + b"event payload " * 4
        headers = [("source", b"bench")] if i % 10 == 0 else []
        records.append((b"key-%d" % (i % 97), value, headers, base + i))
    return records


def ours(data: bytes) -> int:
    batches, _ = decode_batches(data)
    n = 0
    for batch in batches:
        for record in batch.records:
            record.key, record.value
            n += 1
    return n


def kafka_python(data: bytes, check_crc: bool = True) -> int:
    from kafka.record.memory_records import MemoryRecords

    memory = MemoryRecords(data)
    n = 0
    while True:
        batch = memory.next_batch()
        if batch is None:
            return n
        if check_crc and not batch.validate_crc():
            raise ValueError("CRC mismatch")
        for record in batch:
            record.key, record.value
            n += 1


def fused_view(buffers: list[bytes]) -> int:
    return sum(
        len(view["records"]) for data in buffers for view in batches_to_json(data)["batches"]
    )


def object_view(buffers: list[bytes]) -> int:
    """The view as batches_to_json built it before its fast path (the partial tail aside)."""
    views = [batch_to_json(batch) for data in buffers for batch in decode_batches(data)[0]]
    return sum(len(view["records"]) for view in views)


def view_table(args: argparse.Namespace) -> int:
    sides = {"batches_to_json": fused_view, "object path": object_view}
    print(f"JSON view of record batches; records/s, best of {args.repeat} rounds")
    _ratio_table(args, sides)
    return 0


def _ratio_table(args: argparse.Namespace, sides: dict) -> None:
    """Records per second of each of the two ``sides`` on every case, and their ratio."""
    print(f"{'buffers':<18}" + "".join(f"{name:>18}" for name in sides) + f"{'ratio':>9}")
    for label, buffers in view_cases(args).items():
        total = {name: fn(buffers) for name, fn in sides.items()}
        assert len(set(total.values())) == 1, total
        best = {name: float("inf") for name in sides}
        for _ in range(args.repeat):
            for name, fn in sides.items():
                best[name] = min(best[name], best_time(fn, buffers, args.inner))
        rates = [total[name] / best[name] for name in sides]
        cells = "".join(f"{rate:>18,.0f}" for rate in rates)
        print(f"{label:<18}{cells}{rates[0] / rates[1]:>8.2f}x")


def view_cases(args: argparse.Namespace) -> dict[str, list[bytes]]:
    records = make_records(args.records)
    cases = {
        f"{codec}, one batch": [encode_batch(records, compression=codec)]
        for codec in args.codecs.split(",")
    }
    small = make_records(3000, seed=2)
    cases["none, 1,000 x 3"] = [encode_batch(small[i : i + 3]) for i in range(0, 3000, 3)]
    return cases


def reader_table(args: argparse.Namespace) -> int:
    from kraftwire.generated import _v2_view, _view_reader

    if _view_reader.IMPLEMENTATION != "native":
        print(
            "no current compiled reader in kraftwire.generated (make native; KRAFTWIRE_PURE unset)"
        )
        return 1
    limit = 1 << 30
    sides = {
        "compiled": lambda buffers: _read_all(_view_reader.read_batch_views, buffers, limit),
        "pure": lambda buffers: _read_all(_v2_view.read_batch_views, buffers, limit),
    }
    print(f"read_batch_views, records/s, best of {args.repeat} rounds")
    _ratio_table(args, sides)
    return 0


def _read_all(read, buffers: list[bytes], limit: int) -> int:
    """Records read from ``buffers`` (their keys and values handed back, as for metadata values)."""
    count = 0
    for data in buffers:
        views, _, _ = read(data, limit, True, True)
        count += sum(len(view["records"]) for view in views)
    return count


def best_time(fn, data, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn(data)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000, help="records per batch")
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds (best kept)")
    parser.add_argument("--inner", type=int, default=20, help="timed decodes per round")
    parser.add_argument("--codecs", default="none,lz4,zstd")
    parser.add_argument("--view", action="store_true", help="time the JSON view (see above)")
    parser.add_argument("--reader", action="store_true", help="compiled vs pure view reader")
    args = parser.parse_args(argv)
    if args.view:
        return view_table(args)
    if args.reader:
        return reader_table(args)

    try:
        import kafka  # noqa: F401
    except ImportError:
        parser.error("kafka-python is not installed (pip install -e '.[bench]')")

    records = make_records(args.records)
    sides = {
        "kraftwire": ours,
        "kafka-python": kafka_python,
        "kafka-python (no CRC check)": lambda data: kafka_python(data, check_crc=False),
    }
    print(f"decoding one {args.records}-record batch; records/s, best of {args.repeat} rounds")
    print(f"{'codec':<6} {'batch bytes':>11}  " + "  ".join(f"{name:>27}" for name in sides))
    for codec in args.codecs.split(","):
        data = encode_batch(records, compression=codec)
        for fn in sides.values():
            assert fn(data) == args.records
        best = {name: float("inf") for name in sides}
        for _ in range(args.repeat):
            for name, fn in sides.items():
                best[name] = min(best[name], best_time(fn, data, args.inner))
        rates = {name: args.records / seconds for name, seconds in best.items()}
        cells = "  ".join(f"{rates[name]:>27,.0f}" for name in sides)
        print(f"{codec:<6} {len(data):>11,}  {cells}")
        for name in list(sides)[1:]:
            print(f"{'':<6} kraftwire / {name}: {rates['kraftwire'] / rates[name]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
