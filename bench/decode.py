"""Capture decoding speed: tshark -T json vs kraftwire local (one core) vs Spark local[1] and local[2].

    .venv/bin/python bench/decode.py [--packets 200000] [--quick] [--no-spark] [--no-tshark]

The bench first writes one capture of mixed KRaft (Vote, BeginQuorumEpoch, Fetch with record batches,
DescribeQuorum, FetchSnapshot) and classic (Produce v9 with records, Metadata v12, ApiVersions v3)
exchanges over 64 connections, all built with codecs generated from Kafka's specs in ../shared.
Every side does a full decode of the same file: tshark dissects every packet to JSON (its Kafka
dissector on 9092/9093), kraftwire decodes every request and response body to JSON rows. Spark runs
both plans, the ``kafka-pcap`` data source (connection shards) and the split plan (eight byte-range
splits, connections stitched in a second stage), writing to the ``noop`` sink so every row is
produced; session start-up is not counted (a warm-up run comes first). Figures are packets per second and ratios from
one run, on whatever else the machine is doing: the machine has 2 cores shared with other work.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

SHARED_SCHEMAS = "kafka-schemas"


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


def time_tshark(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["tshark", "-r", str(path), "-o", "kafka.tcp.ports:9092,9093", "-T", "json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def time_local(path: Path, schemas: str) -> tuple[float, int]:
    from kraftwire.spark_decoders.api import local_decoder
    from kraftwire.spark_decoders.pipeline import decode_files

    bodies = local_decoder(schemas)
    start = time.perf_counter()
    rows, _ = decode_files([str(path)], bodies)
    return time.perf_counter() - start, len(rows)


def time_spark(path: Path, schemas: str, cores: int, split_bytes: int | None) -> float:
    from pyspark.sql import SparkSession

    from kraftwire.spark_decoders import read_exchanges

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(f"bench-{cores}")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:

        def run():
            frame = read_exchanges(
                spark, [str(path)], schemas=schemas, shards=cores, split_bytes=split_bytes
            )
            frame.write.format("noop").mode("overwrite").save()

        run()  # warm-up: Python workers started, codecs materialised and imported
        start = time.perf_counter()
        run()
        return time.perf_counter() - start
    finally:
        spark.stop()


def main() -> int:
    from shared import shared_path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--quick", action="store_true", help="5,000 packets (a smoke run)")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--no-tshark", action="store_true")
    args = parser.parse_args()
    packets = 5_000 if args.quick else args.packets
    schemas = str(shared_path(SHARED_SCHEMAS))
    from kraftwire.spark_decoders.codecs import generated_codecs

    package, _ = generated_codecs([Path(schemas)])
    workdir = Path(tempfile.mkdtemp(prefix="kraftwire-bench-"))
    try:
        capture = workdir / "bench.pcap"
        count = build_capture(capture, packets, package)
        size_mb = capture.stat().st_size / 1e6
        print(f"capture: {count:,} packets, {size_mb:.1f} MB, mixed KRaft and classic exchanges")
        local_s, rows = time_local(capture, schemas)
        print(
            f"kraftwire local (1 core): {local_s:7.2f} s  {count / local_s:10,.0f} pkt/s  ({rows:,} exchanges)"
        )
        figures = {"local": local_s}
        if not args.no_tshark and shutil.which("tshark"):
            figures["tshark"] = time_tshark(capture)
            print(
                f"tshark -T json:           {figures['tshark']:7.2f} s  {count / figures['tshark']:10,.0f} pkt/s"
            )
            print(
                f"kraftwire local / tshark: {figures['tshark'] / local_s:.1f}x (target >= 20x per core)"
            )
        if not args.no_spark:
            split = max(1, capture.stat().st_size // 8)
            for plan, split_bytes in (("data source", None), ("split plan", split)):
                for cores in (1, 2):
                    seconds = figures[(plan, cores)] = time_spark(
                        capture, schemas, cores, split_bytes
                    )
                    print(
                        f"Spark local[{cores}] {plan:11}: {seconds:7.2f} s  {count / seconds:10,.0f} pkt/s"
                    )
                print(
                    f"Spark {plan} local[2] / local[1]: "
                    f"{figures[(plan, 1)] / figures[(plan, 2)]:.2f}x (target >= 1.7x)"
                )
                if "tshark" in figures:
                    print(
                        f"Spark {plan} local[1] / tshark: {figures['tshark'] / figures[(plan, 1)]:.1f}x"
                    )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
