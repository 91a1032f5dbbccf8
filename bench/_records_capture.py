"""The capture ``bench/decode.py --command`` decodes: exchanges rich in record batches.

Produce v9 requests carry gzip-compressed batches, a third of them transactional; Fetch v17
responses carry gzip-compressed batches with the transaction markers (COMMIT and ABORT control
batches) that close the transactional ones, and, from ``__cluster_metadata``, the KRaft metadata
log: a control batch (KRaftVersion, LeaderChange) and a batch of metadata records (TopicRecord,
PartitionRecord). Vote, BeginQuorumEpoch and ApiVersions exchanges sit between them. Every API is
one the codecs bundled with kraftwire know, so ``kraftwire decode`` without ``--schemas`` decodes
every body (the metadata records' values too when given Kafka's specs).

The exchanges are drawn from a pool of 360 distinct frame pairs (``records_pool``): the 200k-packet
capture holds 70,637 record batches, of only 308 distinct byte strings. A decoder that remembered
its output by the bytes it read would be timed on the pool, not on traffic: in the captures of
tests/corpus a batch's CRC appears about twice, a Produce's batch coming back in a Fetch with its
offset assigned, so with other bytes.

The file is written once per packet count into the bench's own cache folder (``cached_capture``):
building 200k packets takes about a minute, and every later run reads the same bytes.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import uuid
from pathlib import Path

from _decode_capture import produce_response, write_capture

FORMAT_VERSION = 1  # the cached files are named by it: change it when the traffic below changes
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # uuid 1: the bench's __cluster_metadata
START_MS = 1_700_000_000_000


def cached_capture(packets: int, package) -> tuple[Path, int]:
    """The records-rich capture of at least ``packets`` packets, made with ``package`` (Kafka's
    specs: it frames the metadata records) on first use in the bench's cache folder under the
    system's temporary folder; returns its path and packet count."""
    folder = Path(tempfile.gettempdir()) / "kraftwire-bench-captures"
    folder.mkdir(exist_ok=True)
    stem = f"records-v{FORMAT_VERSION}-{packets}"
    path, count_file = folder / f"{stem}.pcap", folder / f"{stem}.count"
    if not (path.exists() and count_file.exists()):
        # Files of this run's own, each moved into place whole: a bench building the same capture
        # at the same time neither writes into them nor reads them half written.
        partial, partial_count = (folder / f"{stem}.{os.getpid()}.{e}" for e in ("partial", "n"))
        count = write_capture(partial, packets, records_pool(package, random.Random(11)))
        partial_count.write_text(str(count))
        partial_count.replace(count_file)
        partial.replace(path)
    return path, int(count_file.read_text())


def _event(rng: random.Random, index: int) -> bytes:
    """A compressible JSON event, as applications produce them."""
    return json.dumps(
        {
            "user": f"user-{rng.randint(1, 5000)}",
            "action": rng.choice(("view", "click", "buy", "search")),
            "item": rng.randint(1, 10**6),
            "seq": index,
        }
    ).encode()


def _data_batch(rng: random.Random, base_offset: int, producer: int | None) -> bytes:
    """A gzip batch of 5-20 events; transactional when ``producer`` (its id) is given."""
    from kraftwire.records import encode_batch

    return encode_batch(
        [
            (b"k%d" % rng.randint(0, 99), _event(rng, i), [("source", b"bench")], START_MS + i)
            for i in range(rng.randint(5, 20))
        ],
        base_offset=base_offset,
        compression="gzip",
        producer_id=-1 if producer is None else producer,
        producer_epoch=-1 if producer is None else 0,
        base_sequence=-1 if producer is None else 0,
        transactional=producer is not None,
    )


def _transaction(rng: random.Random, base_offset: int) -> bytes:
    """A transactional batch and the marker that ends its transaction (COMMIT, or ABORT)."""
    from kraftwire.records import end_txn_marker_batch

    producer = 4000 + rng.randint(0, 9)
    data = _data_batch(rng, base_offset, producer)
    marker = end_txn_marker_batch(
        rng.random() < 0.8,
        producer_id=producer,
        producer_epoch=0,
        coordinator_epoch=rng.randint(0, 5),
        base_offset=base_offset + 20,
        timestamp=START_MS,
    )
    return data + marker


def _metadata_log(package, rng: random.Random, base_offset: int) -> bytes:
    """A stretch of the KRaft metadata log: a control batch, then a batch of metadata records."""
    from kraftwire.records import (
        control_record,
        encode_batch,
        encode_control_batch,
        encode_metadata_record,
    )

    controls = [
        control_record(5, package.lookup("KRaftVersionRecord")(k_raft_version=1), package=package),
        control_record(
            2, package.lookup("LeaderChangeMessage")(leader_id=rng.randint(1, 3)), package=package
        ),
    ]
    control = encode_control_batch(
        controls, base_offset=base_offset, timestamp=START_MS, package=package
    )
    values = []
    for _ in range(rng.randint(2, 6)):
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
            )
        values.append(encode_metadata_record(body, 0))
    data = encode_batch(
        [(None, value, [], START_MS + i) for i, value in enumerate(values)],
        base_offset=base_offset + 2,
        compression="gzip" if rng.random() < 0.5 else "none",
    )
    return control + data


def _fetch(package, topic_id: str, records: bytes):
    fetch = package.lookup("FetchResponse").from_json(
        {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "sessionId": 0,
            "responses": [
                {
                    "topicId": topic_id,
                    "partitions": [
                        {
                            "partitionIndex": 0,
                            "errorCode": 0,
                            "highWatermark": 10**6,
                            "lastStableOffset": 10**6,
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
    return fetch


def _produce(package, records: bytes, transactional_id: str | None):
    produce = package.lookup("ProduceRequest").from_json(
        {
            "transactionalId": transactional_id,
            "acks": -1,
            "timeoutMs": 30000,
            "topicData": [{"name": "events", "partitionData": [{"index": 0, "records": ""}]}],
        },
        9,
    )
    produce.topic_data[0].partition_data[0].records = records
    return produce


def records_pool(package, rng: random.Random) -> list[tuple[bytes, bytes]]:
    """Distinct request/response frames (the correlation id is patched per use)."""
    lookup, pool = package.lookup, []

    def add(request, response, version: int, client: str) -> None:
        pool.append(
            (
                package.encode_request(request, version, 0, client),
                package.encode_response(response, version, 0),
            )
        )

    for _ in range(60):
        offset = rng.randint(0, 10**6)
        transactional = rng.random() < 0.33
        produced = _transaction(rng, offset) if transactional else _data_batch(rng, offset, None)
        add(
            _produce(package, produced, "txn-bench" if transactional else None),
            produce_response(package, rng),
            9,
            "producer-1",
        )
        fetched = b"".join(
            (
                _transaction(rng, offset + 20 * i)
                if rng.random() < 0.4
                else _data_batch(rng, offset, None)
            )
            for i in range(rng.randint(1, 4))
        )
        consumer_fetch = lookup("FetchRequest")(max_wait_ms=500, isolation_level=1)
        add(consumer_fetch, _fetch(package, "AAAAAAAAAAAAAAAAAAAAAg", fetched), 17, "consumer-1")
        metadata = _metadata_log(package, rng, offset)
        follower_fetch = lookup("FetchRequest")(max_wait_ms=500)
        follower_fetch.replica_state.replica_id = 2  # a KRaft follower of the metadata log
        add(follower_fetch, _fetch(package, METADATA_TOPIC_ID, metadata), 17, "raft-client-2")
        add(
            lookup("VoteRequest")(cluster_id="bench", voter_id=rng.randint(1, 3)),
            lookup("VoteResponse")(),
            2,
            "raft-client-1",
        )
        add(
            lookup("BeginQuorumEpochRequest")(),
            lookup("BeginQuorumEpochResponse")(),
            1,
            "raft-client-1",
        )
        add(
            lookup("ApiVersionsRequest")(client_software_name="bench", client_software_version="1"),
            lookup("ApiVersionsResponse")(),
            3,
            "producer-1",
        )
    return pool
