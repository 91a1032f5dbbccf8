"""The benchmark's logical messages (Fetch in two shapes, Metadata, Vote), and a builder for each per library.

Each library builds the same message from the same description on its own; bench/codec.py then
checks they encode to identical bytes before timing anything.
"""

from __future__ import annotations

import importlib
import uuid
from types import ModuleType

# -- the logical messages --------------------------------------------------------------------------


def _uuid(n: int) -> uuid.UUID:
    return uuid.UUID(int=(0x5EED_0000_0000_4000_8000_0000_0000_0000 | n))


CLUSTER_ID = "kraftwire-bench-cluster"

# FetchRequest v18 as a broker's replica fetcher sends it: ReplicaState and HighWatermark tags set,
# no directory ids (those only come from the KRaft client), no forgotten topics.
FETCH = {
    "replica_id": 2,
    "replica_epoch": 1_234,
    "max_wait_ms": 500,
    "min_bytes": 1,
    "max_bytes": 10 * 1024 * 1024,
    "isolation_level": 0,
    "session_id": 0,
    "session_epoch": -1,
    "topic_id": _uuid(1),
    "partitions": [
        {
            "partition": p,
            "current_leader_epoch": 17,
            "fetch_offset": 1_000_000 + 7_919 * p,
            "last_fetched_epoch": 16,
            "log_start_offset": 1_000 * p,
            "partition_max_bytes": 1024 * 1024,
            "high_watermark": 1_000_000 + 7_919 * p + 250,
        }
        for p in range(100)
    ],
    "rack_id": "",
}

# FetchRequest v18 as a consumer sends it: no replica state and no per-partition HighWatermark, so
# no tagged field anywhere (the shape kafka-python's decoder is fastest on), read_committed.
CONSUMER_FETCH = {
    **FETCH,
    "replica_id": -1,
    "replica_epoch": -1,
    "isolation_level": 1,
    "partitions": [
        {k: v for k, v in p.items() if k != "high_watermark"} for p in FETCH["partitions"]
    ],
}
INT64_MAX = (1 << 63) - 1  # HighWatermark's default: not written

METADATA = {
    "throttle_time_ms": 0,
    "brokers": [
        {"node_id": b, "host": f"broker-{b}.kafka.internal", "port": 9092, "rack": f"rack-{b % 3}"}
        for b in (1, 2, 3)
    ],
    "cluster_id": "b7Zx3qvQRUqXn2F9SUSQ1A",
    "controller_id": 1,
    "topics": [
        {
            "name": f"orders-{t}",
            "topic_id": _uuid(100 + t),
            "partitions": [
                {
                    "partition_index": p,
                    "leader_id": 1 + (t + p) % 3,
                    "leader_epoch": 3 + p % 5,
                    "replica_nodes": [1 + (t + p + r) % 3 for r in range(3)],
                    "isr_nodes": [1 + (t + p + r) % 3 for r in range(3 if p % 4 else 2)],
                    "offline_replicas": [],
                }
                for p in range(10)
            ],
        }
        for t in range(10)
    ],
}

VOTE = {
    "cluster_id": CLUSTER_ID,
    "voter_id": 3,
    "topic_name": "__cluster_metadata",
    "partition_index": 0,
    "replica_epoch": 42,
    "replica_id": 1,
    "replica_directory_id": _uuid(201),
    "voter_directory_id": _uuid(203),
    "last_offset_epoch": 41,
    "last_offset": 987_654,
    "pre_vote": True,
}


# -- builders: one per library and message, each from the logical description above ----------------


def kw_fetch(pkg: ModuleType, d: dict = FETCH):
    m = importlib.import_module(f"{pkg.__name__}.fetch_request")
    return m.FetchRequest(
        replica_state=m.ReplicaState(replica_id=d["replica_id"], replica_epoch=d["replica_epoch"]),
        max_wait_ms=d["max_wait_ms"],
        min_bytes=d["min_bytes"],
        max_bytes=d["max_bytes"],
        isolation_level=d["isolation_level"],
        session_id=d["session_id"],
        session_epoch=d["session_epoch"],
        topics=[
            m.FetchTopic(
                topic_id=d["topic_id"],
                partitions=[m.FetchPartition(**p) for p in d["partitions"]],
            )
        ],
        forgotten_topics_data=[],
        rack_id=d["rack_id"],
    )


def kw_metadata(pkg: ModuleType):
    m = importlib.import_module(f"{pkg.__name__}.metadata_response")
    d = METADATA
    return m.MetadataResponse(
        throttle_time_ms=d["throttle_time_ms"],
        brokers=[m.MetadataResponseBroker(**b) for b in d["brokers"]],
        cluster_id=d["cluster_id"],
        controller_id=d["controller_id"],
        topics=[
            m.MetadataResponseTopic(
                error_code=0,
                name=t["name"],
                topic_id=t["topic_id"],
                is_internal=False,
                partitions=[
                    m.MetadataResponsePartition(error_code=0, **p) for p in t["partitions"]
                ],
            )
            for t in d["topics"]
        ],
        error_code=0,
    )


def kw_vote(pkg: ModuleType):
    m = importlib.import_module(f"{pkg.__name__}.vote_request")
    d = VOTE
    partition = m.PartitionData(
        **{k: d[k] for k in d if k not in ("cluster_id", "voter_id", "topic_name")}
    )
    return m.VoteRequest(
        cluster_id=d["cluster_id"],
        voter_id=d["voter_id"],
        topics=[m.TopicData(topic_name=d["topic_name"], partitions=[partition])],
    )


def kio_fetch(mod: ModuleType, d: dict = FETCH):
    import datetime

    from kio.schema.types import BrokerId
    from kio.static.primitive import i8, i32, i32Timedelta, i64

    return mod.FetchRequest(
        replica_state=mod.ReplicaState(
            replica_id=BrokerId(d["replica_id"]), replica_epoch=i64(d["replica_epoch"])
        ),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=d["max_wait_ms"])),
        min_bytes=i32(d["min_bytes"]),
        max_bytes=i32(d["max_bytes"]),
        isolation_level=i8(d["isolation_level"]),
        session_id=i32(d["session_id"]),
        session_epoch=i32(d["session_epoch"]),
        topics=(
            mod.FetchTopic(
                topic_id=d["topic_id"],
                partitions=tuple(
                    mod.FetchPartition(
                        partition=i32(p["partition"]),
                        current_leader_epoch=i32(p["current_leader_epoch"]),
                        fetch_offset=i64(p["fetch_offset"]),
                        last_fetched_epoch=i32(p["last_fetched_epoch"]),
                        log_start_offset=i64(p["log_start_offset"]),
                        partition_max_bytes=i32(p["partition_max_bytes"]),
                        high_watermark=i64(p.get("high_watermark", INT64_MAX)),
                    )
                    for p in d["partitions"]
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id=d["rack_id"],
    )


def kio_metadata(mod: ModuleType):
    import datetime

    from kio.schema.errors import ErrorCode
    from kio.schema.types import BrokerId, TopicName
    from kio.static.primitive import i32, i32Timedelta

    d = METADATA
    return mod.MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=d["throttle_time_ms"])),
        brokers=tuple(
            mod.MetadataResponseBroker(
                node_id=BrokerId(b["node_id"]), host=b["host"], port=i32(b["port"]), rack=b["rack"]
            )
            for b in d["brokers"]
        ),
        cluster_id=d["cluster_id"],
        controller_id=BrokerId(d["controller_id"]),
        topics=tuple(
            mod.MetadataResponseTopic(
                error_code=ErrorCode.none,
                name=TopicName(t["name"]),
                topic_id=t["topic_id"],
                is_internal=False,
                partitions=tuple(
                    mod.MetadataResponsePartition(
                        error_code=ErrorCode.none,
                        partition_index=i32(p["partition_index"]),
                        leader_id=BrokerId(p["leader_id"]),
                        leader_epoch=i32(p["leader_epoch"]),
                        replica_nodes=tuple(BrokerId(n) for n in p["replica_nodes"]),
                        isr_nodes=tuple(BrokerId(n) for n in p["isr_nodes"]),
                        offline_replicas=tuple(BrokerId(n) for n in p["offline_replicas"]),
                    )
                    for p in t["partitions"]
                ),
            )
            for t in d["topics"]
        ),
        error_code=ErrorCode.none,
    )


def kio_vote(mod: ModuleType):
    from kio.schema.types import BrokerId, TopicName
    from kio.static.primitive import i32, i64

    d = VOTE
    partition = mod.PartitionData(
        partition_index=i32(d["partition_index"]),
        replica_epoch=i32(d["replica_epoch"]),
        replica_id=BrokerId(d["replica_id"]),
        replica_directory_id=d["replica_directory_id"],
        voter_directory_id=d["voter_directory_id"],
        last_offset_epoch=i32(d["last_offset_epoch"]),
        last_offset=i64(d["last_offset"]),
        pre_vote=d["pre_vote"],
    )
    return mod.VoteRequest(
        cluster_id=d["cluster_id"],
        voter_id=BrokerId(d["voter_id"]),
        topics=(mod.TopicData(topic_name=TopicName(d["topic_name"]), partitions=(partition,)),),
    )


def kp_fetch(cls, version: int, d: dict = FETCH):
    partition_cls = cls.FetchTopic.FetchPartition
    # kafka-python writes a ReplicaState it was given even when it equals the default
    replica = {"replica_id": d["replica_id"], "replica_epoch": d["replica_epoch"]}
    state = {} if d["replica_id"] == -1 else {"replica_state": cls.ReplicaState(**replica)}
    return cls(
        version=version,
        **state,
        max_wait_ms=d["max_wait_ms"],
        min_bytes=d["min_bytes"],
        max_bytes=d["max_bytes"],
        isolation_level=d["isolation_level"],
        session_id=d["session_id"],
        session_epoch=d["session_epoch"],
        topics=[
            cls.FetchTopic(
                topic_id=d["topic_id"],
                partitions=[
                    partition_cls(**{"high_watermark": INT64_MAX, **p}) for p in d["partitions"]
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id=d["rack_id"],
    )


def kp_metadata(cls, version: int):
    d = METADATA
    topic_cls = cls.MetadataResponseTopic
    return cls(
        version=version,
        throttle_time_ms=d["throttle_time_ms"],
        brokers=[cls.MetadataResponseBroker(**b) for b in d["brokers"]],
        cluster_id=d["cluster_id"],
        controller_id=d["controller_id"],
        topics=[
            topic_cls(
                error_code=0,
                name=t["name"],
                topic_id=t["topic_id"],
                is_internal=False,
                partitions=[
                    topic_cls.MetadataResponsePartition(error_code=0, **p) for p in t["partitions"]
                ],
                # kafka-python patches TopicAuthorizedOperations into a bit set; None = the
                # spec default -2147483648 ("not requested").
                authorized_operations=None,
            )
            for t in d["topics"]
        ],
        error_code=0,
    )


def kw_consumer_fetch(pkg: ModuleType):
    return kw_fetch(pkg, CONSUMER_FETCH)


def kio_consumer_fetch(mod: ModuleType):
    return kio_fetch(mod, CONSUMER_FETCH)


def kp_consumer_fetch(cls, version: int):
    return kp_fetch(cls, version, CONSUMER_FETCH)
