"""Capture decoding speed: tshark -T json vs kraftwire local (one core) vs Spark local[1] and local[2].

    .venv/bin/python bench/decode.py [--packets 200000] [--quick] [--rounds 3] [--no-spark] [--no-tshark]
    .venv/bin/python bench/decode.py --no-tshark --plan split   # only the split plan's figures
    .venv/bin/python bench/decode.py --profile local.prof   # where the local decode's time goes
    .venv/bin/python bench/decode.py --breakdown   # CPU seconds of each local stage, unprofiled
    .venv/bin/python bench/decode.py --native   # the codecs the capture uses compiled with mypyc
    KRAFTWIRE_PURE=1 .venv/bin/python bench/decode.py ...   # the pure codecs even when compiled

The bench first writes one capture of mixed KRaft (Vote, BeginQuorumEpoch, Fetch with record batches,
DescribeQuorum, FetchSnapshot) and classic (Produce v9 with records, Metadata v12, ApiVersions v3)
exchanges over 64 connections, all built with codecs generated from Kafka's specs in ../shared.
Every side does a full decode of the same file: tshark dissects every packet to JSON (its Kafka
dissector on 9092/9093), kraftwire decodes every request and response body to JSON rows. Spark runs
both plans, the ``kafka-pcap`` data source (connection shards) and the split plan (eight byte-range
splits, connections stitched in a second stage), writing to the ``noop`` sink so every row is
produced; session start-up is not counted (a warm-up run comes first, then the best of ``--rounds``).

The machine is shared, so wall time says as much about the other work as about ours. kraftwire
local and tshark each use one core, and are compared "per core" by the CPU seconds each used
(wall time printed beside it). Spark's local[2] / local[1] can only be wall time; beside it the
bench prints the CPU seconds of each plan's tasks (the data source's shards; the split plan's splits
and second-stage partitions), which bound what two free cores could gain, and the load average at
each step.

The bench prints which codec implementation decoded the bodies: the pure generated modules, or the
mypyc-compiled ones that ``--native`` builds (once, into the codec cache) for the 18 specs the
capture uses; compiling all 292 of Kafka's specs would take about a quarter of an hour of CPU.
"""

from __future__ import annotations

import argparse
import collections
import heapq
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

SHARED_SCHEMAS = "kafka-schemas"
BENCH_APIS = (
    "Vote",
    "BeginQuorumEpoch",
    "DescribeQuorum",
    "FetchSnapshot",
    "Fetch",
    "Produce",
    "Metadata",
    "ApiVersions",
)
SPLITS = 8  # the split plan's byte ranges: four per core on two cores
# Every spec whose codec decodes the bench's frames: both sides of each API, and the headers.
BENCH_SPECS = [f"{api}{side}" for api in BENCH_APIS for side in ("Request", "Response")] + [
    "RequestHeader",
    "ResponseHeader",
]


def exchange_pool(package, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """Distinct request/response frames (correlation id patched per use), KRaft and classic."""
    from kraftwire.records import encode_batch

    rng = random.Random(seed)
    lookup, pool = package.lookup, []

    def add(request, response, version):
        pool.append(
            (
                package.encode_request(request, version, 0, f"client-{rng.randint(1, 9)}"),
                package.encode_response(response, version, 0),
            )
        )

    for _ in range(40):
        records = encode_batch(
            [
                (
                    b"k%d" % i,
                    bytes(rng.randrange(256) for _ in range(60)),
                    None,
                    1_700_000_000_000 + i,
                )
                for i in range(rng.randint(1, 5))
            ]
        )
        add(
            lookup("VoteRequest")(cluster_id="bench", voter_id=rng.randint(1, 3)),
            lookup("VoteResponse")(),
            2,
        )
        add(lookup("BeginQuorumEpochRequest")(), lookup("BeginQuorumEpochResponse")(), 1)
        add(lookup("DescribeQuorumRequest")(), lookup("DescribeQuorumResponse")(), 2)
        add(lookup("FetchSnapshotRequest")(), lookup("FetchSnapshotResponse")(), 1)
        fetch = lookup("FetchResponse").from_json(
            {
                "throttleTimeMs": 0,
                "errorCode": 0,
                "sessionId": 0,
                "responses": [
                    {
                        "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                        "partitions": [
                            {
                                "partitionIndex": 0,
                                "errorCode": 0,
                                "highWatermark": 10,
                                "lastStableOffset": 10,
                                "logStartOffset": 0,
                                "abortedTransactions": [],
                                "preferredReadReplica": -1,
                                "records": "",
                            }
                        ],
                    }
                ],
                "nodeEndpoints": [],
            },
            17,
        )
        fetch.responses[0].partitions[0].records = records
        add(lookup("FetchRequest")(max_wait_ms=500), fetch, 17)
        produce = lookup("ProduceRequest").from_json(
            {
                "transactionalId": None,
                "acks": -1,
                "timeoutMs": 1500,
                "topicData": [{"name": "events", "partitionData": [{"index": 0, "records": ""}]}],
            },
            9,
        )
        produce.topic_data[0].partition_data[0].records = records
        add(
            produce,
            lookup("ProduceResponse").from_json(
                {
                    "responses": [
                        {
                            "name": "events",
                            "partitionResponses": [
                                {
                                    "index": 0,
                                    "errorCode": 0,
                                    "baseOffset": rng.randint(0, 10**6),
                                    "logAppendTimeMs": -1,
                                    "logStartOffset": 0,
                                    "recordErrors": [],
                                    "errorMessage": None,
                                }
                            ],
                        }
                    ],
                    "throttleTimeMs": 0,
                },
                9,
            ),
            9,
        )
        add(
            lookup("MetadataRequest").from_json(
                {
                    "topics": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAA", "name": "events"}],
                    "allowAutoTopicCreation": True,
                    "includeTopicAuthorizedOperations": False,
                },
                12,
            ),
            lookup("MetadataResponse")(),
            12,
        )
        add(
            lookup("ApiVersionsRequest")(client_software_name="bench", client_software_version="1"),
            lookup("ApiVersionsResponse")(),
            3,
        )
    return pool


def build_capture(path: Path, packets_wanted: int, package) -> int:
    """Write the bench capture; returns its packet count."""
    from kraftwire.spark_decoders.layers import LINK_ETHERNET
    from kraftwire.spark_decoders.synth import Conversation, link_frame

    pool = exchange_pool(package)
    rng = random.Random(7)
    convs = [
        Conversation((f"10.1.{i // 200}.{i % 200 + 1}", 40000 + i), ("10.2.0.1", 9092 + i % 2))
        for i in range(64)
    ]
    ts = 1_700_000_000_000_000_000
    for conv in convs:
        conv.handshake(ts)
    correlation = 0
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINK_ETHERNET))
        count = 0

        def flush():
            nonlocal count
            for conv in convs:
                for t, ip in conv.packets:
                    frame = link_frame(LINK_ETHERNET, ip)
                    out.write(
                        struct.pack(
                            "<IIII", t // 10**9, (t % 10**9) // 1000, len(frame), len(frame)
                        )
                    )
                    out.write(frame)
                count += len(conv.packets)
                conv.packets.clear()

        flush()
        while count < packets_wanted:
            for conv in convs:
                request, response = rng.choice(pool)
                correlation += 1
                ts += 20_000
                conv.send(True, request[:8] + struct.pack(">i", correlation) + request[12:], ts)
                conv.send(
                    False, response[:4] + struct.pack(">i", correlation) + response[8:], ts + 5_000
                )
                conv.emit(ts + 6_000, conv._packet(True, ts + 6_000, 0x10))  # the client's ACK
            flush()
    return count


class Timing(NamedTuple):
    wall_s: float
    cpu_s: float  # CPU seconds of the process doing the work (user + system)


def time_tshark(path: Path) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        ["tshark", "-r", str(path), "-o", "kafka.tcp.ports:9092,9093", "-T", "json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu)


def time_local(path: Path, schemas: str) -> tuple[Timing, int]:
    from kraftwire.spark_decoders.api import local_decoder
    from kraftwire.spark_decoders.pipeline import decode_files

    bodies = local_decoder(schemas)
    start, start_cpu = time.perf_counter(), time.process_time()
    rows, _ = decode_files([str(path)], bodies)
    return Timing(time.perf_counter() - start, time.process_time() - start_cpu), len(rows)


def profile_local(path: Path, schemas: str, out: str) -> None:
    """cProfile of the local decode, saved to ``out`` and its top entries by own time printed."""
    import cProfile
    import pstats

    from kraftwire.spark_decoders.api import local_decoder
    from kraftwire.spark_decoders.pipeline import decode_files

    bodies = local_decoder(schemas)
    cProfile.runctx("decode_files([str(path)], bodies)", globals(), locals(), out)
    pstats.Stats(out).sort_stats("tottime").print_stats(30)


def _best_cpu(run) -> float:
    """The least CPU seconds of three runs of ``run()``."""
    times = []
    for _ in range(3):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def _recording_decoder(package):
    """A BodyDecoder that decodes no body and records each one it is asked for in ``seen``."""
    from kraftwire.spark_decoders.bodies import BodyDecoder, Decoded

    class Recorded(BodyDecoder):
        keep, seen = True, []

        def request(self, payload, api_key, api_version):
            return self._skip(payload, self._codec(api_key, api_version, True), api_version)

        def response(self, payload, api_key, api_version):
            return self._skip(payload, self._codec(api_key, api_version, False), api_version)

        def _skip(self, payload, codec, version):
            if self.keep:
                self.seen.append((payload, codec, version))
            return Decoded(None, None, [], None, None, None)

    return Recorded(package)


def _read_body(payload, codec, version):
    """What BodyDecoder._decode reads: past the header (shortcut or codec), then the body."""
    pos = codec.body_start(payload, codec.header_version)
    if pos is None:
        _, pos = codec.header.read(payload, 0, codec.header_version)
    return codec.body_class.read(payload, pos, version)[0]


def breakdown_local(path: Path, schemas: str) -> None:
    """CPU seconds of the local decode by stage, unprofiled: each stage is run on its own (its
    inputs gathered first) and timed as the best of three, so each figure is one stage's cost."""
    from kraftwire.spark_decoders.api import local_decoder
    from kraftwire.spark_decoders.bodies import _ERROR_CODE
    from kraftwire.spark_decoders.capture import CaptureStats
    from kraftwire.spark_decoders.jsonview import dumps, json_view
    from kraftwire.spark_decoders.pipeline import decode_files, map_file, segments

    bodies = local_decoder(schemas)
    recorder = _recording_decoder(bodies.package)
    decode_files([str(path)], recorder)
    recorder.keep = False
    work, buf = recorder.seen, map_file(str(path))
    messages = [(_read_body(*item), item[2], item[1].holds_records) for item in work]
    views = [json_view(message, version) for message, version, _ in messages]
    expanded = [dict(view) for view in views]

    def expand_all():
        for (message, _, holds), view in zip(messages, expanded):
            if holds:
                bodies._expand_records(message, view, None)

    expand_all()
    texts = [dumps(view) for view in expanded]
    drain = collections.deque(maxlen=0).extend  # results dropped as made, as the decode drops them
    stages = [
        (
            "capture records -> TCP segments",
            lambda: drain(segments(buf, None, len(buf), CaptureStats())),
        ),
        (
            "all but bodies (the above, TCP, frames, rows)",
            lambda: decode_files([str(path)], recorder),
        ),
        ("body reads (generated codecs)", lambda: drain(_read_body(*item) for item in work)),
        ("JSON views (compiled)", lambda: drain(json_view(m, v) for m, v, _ in messages)),
        ("records fields -> batch JSON", expand_all),
        ("dumps", lambda: drain(dumps(view) for view in expanded)),
        ("error_codes scan", lambda: drain(_ERROR_CODE.findall(text) for text in texts)),
        ("full decode", lambda: decode_files([str(path)], bodies)),
    ]
    print(f"local decode, CPU seconds by stage ({len(work):,} bodies)  {load()}")
    for label, run in stages:
        print(f"  {label:46} {_best_cpu(run):6.2f}")


def shard_balance(path: Path, schemas: str) -> tuple[float, list[float]]:
    """CPU seconds of the data source's one shard of local[1] and of each shard of local[2], each
    decoded here as its Spark task decodes it: what two free cores could gain at best."""
    from kraftwire.spark_decoders.api import codec_bundle, decode_shard

    bundle, ports = codec_bundle(schemas), frozenset({9092, 9093})

    def cpu(shard: int, shards: int) -> float:
        start = time.process_time()
        decode_shard([str(path)], bundle, ports, shard, shards)
        return time.process_time() - start

    cpu(0, 2)  # warm-up: the bundle's package imported, the JSON views compiled
    return cpu(0, 1), [cpu(0, 2), cpu(1, 2)]


def _schedule(tasks: list[float], cores: int) -> float:
    """When the last of ``tasks`` (CPU seconds, in partition order) ends on ``cores`` free cores,
    each task taken by the first core to free up, as Spark's local scheduler hands them out."""
    free = [0.0] * cores
    for task in tasks:
        heapq.heappush(free, heapq.heappop(free) + task)
    return max(free)


def split_balance(path: Path, schemas: str, splits: int) -> dict[int, tuple[list, list]]:
    """CPU seconds of each split plan task for local[1] and local[2]: stage one per split, stage
    two per partition, each run here as its Spark task runs it (the shuffle's own cost aside)."""
    import pyarrow as pa

    from kraftwire.spark_decoders.api import codec_bundle
    from kraftwire.spark_decoders.pipeline import map_file
    from kraftwire.spark_decoders.routes import partition_labels
    from kraftwire.spark_decoders.segments_source import piece_arrow_schema, split_pieces
    from kraftwire.spark_decoders.splits import plan_splits
    from kraftwire.spark_decoders.stitch import decode_pieces, piece_order, stage_two_partitions

    bundle, ports, buf = codec_bundle(schemas), frozenset({9092, 9093}), map_file(str(path))
    out = {}
    for cores in (
        1,
        1,
        2,
    ):  # the first pass a warm-up: the bundle's package imported, views compiled
        labels = partition_labels(stage_two_partitions(len(buf), cores))
        one, pieces = [], []
        for index, (start, stop) in enumerate(plan_splits(len(buf), -(-len(buf) // splits))):
            begin = time.process_time()
            batches = list(split_pieces(buf, start, stop, (0, index), labels))
            one.append(time.process_time() - begin)
            pieces += [row for batch in batches for row in batch.to_pylist()]
        two = []
        for label in labels:
            mine = sorted((p for p in pieces if p["route"] == label), key=piece_order)
            batch = pa.RecordBatch.from_pylist(mine, schema=piece_arrow_schema())
            begin = time.process_time()
            collections.deque(decode_pieces([batch], (str(path),), bundle, ports), maxlen=0)
            two.append(time.process_time() - begin)
        out[cores] = (one, two)
    return out


def report_split_balance(path: Path, schemas: str, splits: int) -> None:
    account = split_balance(path, schemas, splits)
    (one_1, two_1), (one_2, two_2) = account[1], account[2]
    ideal_1 = sum(one_1) + sum(two_1)
    ideal_2 = _schedule(one_2, 2) + _schedule(two_2, 2)
    print(
        f"split plan tasks, CPU seconds: stage one {sum(one_1):.2f} ({len(one_1)} splits), "
        f"stage two {sum(two_1):.2f} (local[1], {len(two_1)} partitions) / "
        f"{sum(two_2):.2f} (local[2], {len(two_2)} partitions: "
        f"{' '.join(f'{t:.2f}' for t in two_2)}): at best {ideal_1 / ideal_2:.2f}x on two free cores"
    )


def time_spark(
    path: Path, schemas: str, cores: int, split_bytes: int | None, rounds: int
) -> list[float]:
    """Wall seconds of ``rounds`` runs after a warm-up run, in one session."""
    from pyspark.sql import SparkSession

    from kraftwire.spark_decoders import read_exchanges

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(f"bench-{cores}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # progress bars would garble the figures
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:

        def run() -> float:
            start = time.perf_counter()
            frame = read_exchanges(
                spark, [str(path)], schemas=schemas, shards=cores, split_bytes=split_bytes
            )
            frame.write.format("noop").mode("overwrite").save()
            return time.perf_counter() - start

        run()  # warm-up: Python workers started, codecs materialised and imported
        return [run() for _ in range(rounds)]
    finally:
        spark.stop()


def codec_implementation(package) -> str:
    """Which implementation decodes the bench's specs: compiled (mypyc) or pure, and how many."""
    compiled = [stem for stem in BENCH_SPECS if "._native_" in package.lookup(stem).__module__]
    kind = "native" if len(compiled) == len(BENCH_SPECS) else "mixed" if compiled else "pure"
    forced = (
        " (KRAFTWIRE_PURE set)" if os.environ.get("KRAFTWIRE_PURE", "") not in ("", "0") else ""
    )
    return f"{kind}: {len(compiled)} of the {len(BENCH_SPECS)} specs it uses compiled{forced}"


def load() -> str:
    return f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"


def report_local_and_tshark(capture: Path, count: int, schemas: str, tshark: bool) -> dict:
    """Local decode and tshark, each in wall and CPU seconds. "Per core" compares CPU seconds: both
    run on one core, and on a shared machine CPU time is what the work cost, whatever else ran."""
    local, rows = time_local(capture, schemas)
    print(
        f"kraftwire local (1 core): {local.wall_s:7.2f} s wall {local.cpu_s:7.2f} s CPU  "
        f"{count / local.cpu_s:9,.0f} pkt per CPU second  ({rows:,} exchanges)  {load()}"
    )
    figures = {"local": local}
    if tshark and shutil.which("tshark"):
        shark = figures["tshark"] = time_tshark(capture)
        print(
            f"tshark -T json:           {shark.wall_s:7.2f} s wall {shark.cpu_s:7.2f} s CPU  "
            f"{count / shark.cpu_s:9,.0f} pkt per CPU second  {load()}"
        )
        print(
            f"kraftwire local / tshark per core (CPU seconds): {shark.cpu_s / local.cpu_s:.1f}x"
            f"  (wall: {shark.wall_s / local.wall_s:.1f}x; target >= 20x per core)"
        )
    return figures


def report_spark(
    capture: Path, count: int, schemas: str, figures: dict, rounds: int, plans: str
) -> None:
    chosen = []
    if plans in ("both", "source"):
        one, two = shard_balance(capture, schemas)
        print(
            f"data source shards, CPU seconds: local[1] {one:.2f}; local[2] "
            f"{' + '.join(f'{s:.2f}' for s in two)}: at best {one / max(two):.2f}x on two free cores"
        )
        chosen.append(("data source", None))
    if plans in ("both", "split"):
        report_split_balance(capture, schemas, SPLITS)
        chosen.append(("split plan", -(-capture.stat().st_size // SPLITS)))  # SPLITS equal splits
    for plan, split_bytes in chosen:
        for cores in (1, 2):
            runs = time_spark(capture, schemas, cores, split_bytes, rounds)
            best = figures[(plan, cores)] = min(runs)
            print(
                f"Spark local[{cores}] {plan:11}: best {best:7.2f} s of "
                f"{', '.join(f'{r:.2f}' for r in runs)}  {count / best:9,.0f} pkt/s  {load()}"
            )
        print(
            f"Spark {plan} local[2] / local[1]: "
            f"{figures[(plan, 1)] / figures[(plan, 2)]:.2f}x (target >= 1.7x)"
        )
        if "tshark" in figures:
            print(
                f"Spark {plan} local[1] / tshark (wall): "
                f"{figures['tshark'].wall_s / figures[(plan, 1)]:.1f}x"
            )


def main() -> int:
    from shared import shared_path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--quick", action="store_true", help="5,000 packets (a smoke run)")
    parser.add_argument("--rounds", type=int, default=3, help="timed Spark runs per setting")
    parser.add_argument(
        "--profile", metavar="FILE", help="profile the local decode into FILE, then stop"
    )
    parser.add_argument(
        "--breakdown", action="store_true", help="CPU seconds of each local stage, then stop"
    )
    parser.add_argument(
        "--native",
        action="store_true",
        help="compile the codecs of the specs the capture uses with mypyc first (once, cached)",
    )
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument(
        "--plan",
        choices=("both", "source", "split"),
        default="both",
        help="which Spark plans to time: the data source, the split plan or both",
    )
    parser.add_argument("--no-tshark", action="store_true")
    args = parser.parse_args()
    if args.packets < 1 or args.rounds < 1:
        parser.error("--packets and --rounds must be at least 1")
    if args.profile and os.path.lexists(args.profile):
        parser.error(f"--profile {args.profile}: already exists (the bench writes only new files)")
    packets = 5_000 if args.quick else args.packets
    schemas = str(shared_path(SHARED_SCHEMAS))
    from kraftwire.spark_decoders.codecs import compile_native, generated_codecs

    if args.native:  # before the package is imported: its modules pick their codec on import
        built = compile_native([Path(schemas)], BENCH_SPECS)
        print(
            f"compiled {len(built)} codecs with mypyc ({len(BENCH_SPECS) - len(built)} already were)"
        )
    package, _ = generated_codecs([Path(schemas)])
    print(f"codecs: Kafka's specs from ../shared, {codec_implementation(package)}")
    workdir = Path(tempfile.mkdtemp(prefix="kraftwire-bench-"))
    try:
        capture = workdir / "bench.pcap"
        count = build_capture(capture, packets, package)
        size_mb = capture.stat().st_size / 1e6
        print(f"capture: {count:,} packets, {size_mb:.1f} MB, mixed KRaft and classic exchanges")
        if args.profile:
            profile_local(capture, schemas, args.profile)
            return 0
        if args.breakdown:
            breakdown_local(capture, schemas)
            return 0
        figures = report_local_and_tshark(capture, count, schemas, not args.no_tshark)
        if not args.no_spark:
            report_spark(capture, count, schemas, figures, args.rounds, args.plan)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
