"""The capture bench/decode.py decodes: mixed KRaft and classic exchanges over 64 connections.

Every frame is built with the codecs generated from Kafka's specs in ../shared (the package is
passed in), so every side of the bench decodes the same, known traffic.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path


def exchange_pool(package, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """Distinct request/response frames (correlation id patched per use), KRaft and classic: KRaft
    Fetch responses carry metadata-log records (topic id 1 is ``__cluster_metadata``), Produce
    requests records of arbitrary bytes."""
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
        metadata_records = encode_batch(
            [
                (None, frame, [], 1_700_000_000_000 + i)
                for i, frame in enumerate(_metadata_frames(package, rng))
            ]
        )
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
        fetch.responses[0].partitions[0].records = metadata_records  # KRaft: the metadata log
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
        add(produce, produce_response(package, rng), 9)
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


def produce_response(package, rng: random.Random):
    """A Produce v9 response for the ``events`` topic, its base offset drawn from ``rng``."""
    return package.lookup("ProduceResponse").from_json(
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
    )


def _metadata_frames(package, rng: random.Random) -> list[bytes]:
    """1 to 5 metadata-log record values, as a KRaft leader's Fetch responses carry them: a
    TopicRecord or PartitionRecord at version 0, framed by the records layer."""
    import uuid

    from kraftwire.records import encode_metadata_record

    frames = []
    for _ in range(rng.randint(1, 5)):
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        if rng.random() < 0.3:
            body = package.lookup("TopicRecord")(
                name=f"topic-{rng.randint(1, 999)}", topic_id=topic_id
            )
        else:
            replicas = rng.sample(range(1, 7), 3)
            body = package.lookup("PartitionRecord")(
                partition_id=rng.randint(0, 63),
                topic_id=topic_id,
                replicas=replicas,
                isr=replicas,
                leader=replicas[0],
                leader_epoch=rng.randint(0, 40),
                partition_epoch=rng.randint(0, 40),
            )
        frames.append(encode_metadata_record(body, 0))
    return frames


_PCAP_HEAD = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # Ethernet
_PCAPNG_HEAD = struct.pack(
    "<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28  # section header block
) + struct.pack(
    "<IIHHII", 1, 20, 1, 0, 65535, 20
)  # interface 0: Ethernet, microseconds


def _pcap_record(ts_ns: int, frame: bytes) -> bytes:
    header = struct.pack("<IIII", ts_ns // 10**9, ts_ns % 10**9 // 1000, len(frame), len(frame))
    return header + frame


def _pcapng_block(ts_ns: int, frame: bytes) -> bytes:
    ticks, padded = ts_ns // 1000, frame + b"\0" * (-len(frame) % 4)
    length = 32 + len(padded)
    head = struct.pack(
        "<IIIIIII", 6, length, 0, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), len(frame)
    )
    return head + padded + struct.pack("<I", length)


def build_capture(path: Path, packets_wanted: int, package, pcapng: bool = False) -> int:
    """Write the bench capture, as pcap or as pcapng (one section, one Ethernet interface of
    microsecond timestamps, a packet per enhanced packet block: what dumpcap writes); returns its
    packet count."""
    return write_capture(path, packets_wanted, exchange_pool(package), pcapng)


def write_capture(
    path: Path, packets_wanted: int, pool: list[tuple[bytes, bytes]], pcapng: bool = False
) -> int:
    """Exchanges drawn from ``pool`` (seeded) over 64 connections until ``packets_wanted`` packets
    are written; returns the packet count."""
    from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET
    from kraftwire.synthetic_capture import Conversation, link_frame

    rng = random.Random(7)
    convs = [
        Conversation((f"10.1.{i // 200}.{i % 200 + 1}", 40000 + i), ("10.2.0.1", 9092 + i % 2))
        for i in range(64)
    ]
    ts = 1_700_000_000_000_000_000
    for conv in convs:
        conv.handshake(ts)
    correlation = 0
    record = _pcapng_block if pcapng else _pcap_record
    with open(path, "wb") as out:
        out.write(_PCAPNG_HEAD if pcapng else _PCAP_HEAD)
        count = 0

        def flush():
            nonlocal count
            for conv in convs:
                for t, ip in conv.packets:
                    out.write(record(t, link_frame(LINK_ETHERNET, ip)))
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
