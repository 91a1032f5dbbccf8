"""Build hand-written requests and responses for ``request``/``respond`` commands.

Every field has a valid default derived from the receiving node (its cluster id, epoch, log end, ...),
so a test line names only what it changes: ``request 1 Vote from=2 last_epoch=5``. Special values:
``cluster=null`` (None), ``topics=2`` / ``partitions=2`` (duplicate the entry), ``topic=x``.
"""

from __future__ import annotations

import uuid
from typing import Any

from kraftwire.generated import (
    add_raft_voter_request as add,
    api_versions_request as av,
    api_versions_response as avr,
    begin_quorum_epoch_request as bqe,
    describe_quorum_request as dq,
    end_quorum_epoch_request as eqe,
    fetch_request as fetch,
    fetch_response as fetchr,
    fetch_snapshot_request as fs,
    fetch_snapshot_response as fsr,
    read_offset_request as ro,
    remove_raft_voter_request as rem,
    update_raft_voter_request as upd,
    vote_request as vote,
)
from kraftwire.node.core.batches import encode_batches
from kraftwire.node.core.api import METADATA_TOPIC, METADATA_TOPIC_ID, LogBatch
from kraftwire.node.core.messages import FETCH_HW_UNSUPPORTED


def _int(kw: dict, key: str, default: int) -> int:
    return int(kw[key]) if key in kw else default


def _bool(kw: dict, key: str, default: bool) -> bool:
    return kw[key] == "true" if key in kw else default


def _cluster(kw: dict) -> str | None:
    c = kw.get("cluster", "cluster")
    return None if c == "null" else ("" if c == "empty" else c)


def _dir(kw: dict, key: str, node_id: int) -> uuid.UUID:
    return uuid.UUID(int=int(kw[key])) if key in kw else uuid.UUID(int=node_id if node_id >= 0 else 0)


def _topics(kw: dict, make_topic, make_partition, name_key: str = "topic_name", **pfields) -> list:
    parts = [make_partition(**pfields) for _ in range(_int(kw, "partitions", 1))]
    topic = make_topic(**{name_key: kw.get("topic", METADATA_TOPIC), "partitions": parts})
    return [topic] * _int(kw, "topics", 1)


def build(api: str, env: Any, dst: int, src: int, kw: dict) -> Any:
    core = env.nodes[dst].core
    epoch = core.state.epoch
    leo, last_epoch = core.log.end_offset(), core.log.last_fetched_epoch()
    part = _int(kw, "partition", 0)
    if api == "ReadOffset":  # replica=N epoch=E dir=D: a replica's request (default: a client's)
        asker = _int(kw, "replica", -1)
        return ro.ReadOffsetRequest(
            cluster_id=_cluster(kw),
            replica_id=_int(kw, "replica", -1),
            topics=_topics(
                kw,
                ro.TopicData,
                ro.PartitionData,
                partition_index=part,
                current_leader_epoch=_int(kw, "epoch", -1),
                replica_directory_id=_dir(kw, "dir", asker),
            ),
        )
    if api == "Vote":
        replica_epoch = _int(kw, "epoch", epoch + 1)
        return vote.VoteRequest(
            cluster_id=_cluster(kw),
            voter_id=_int(kw, "voter", dst),
            topics=_topics(
                kw,
                vote.TopicData,
                vote.PartitionData,
                partition_index=part,
                replica_epoch=replica_epoch,
                replica_id=_int(kw, "candidate", src),
                replica_directory_id=_dir(kw, "candidate_dir", _int(kw, "candidate", src)),
                voter_directory_id=_dir(kw, "voter_dir", _int(kw, "voter", dst)),
                last_offset_epoch=_int(kw, "last_epoch", last_epoch),
                last_offset=_int(kw, "last_offset", leo),
                pre_vote=_bool(kw, "pre_vote", False),
            ),
        )
    if api in ("BeginQuorumEpoch", "EndQuorumEpoch"):
        mod = bqe if api == "BeginQuorumEpoch" else eqe
        pf = dict(partition_index=part, leader_id=_int(kw, "leader", src), leader_epoch=_int(kw, "epoch", epoch))
        if api == "BeginQuorumEpoch":
            pf["voter_directory_id"] = _dir(kw, "voter_dir", _int(kw, "voter", dst))
        else:
            succ = [int(x) for x in kw.get("successors", "").split(",") if x]
            pf["preferred_successors"] = succ
            pf["preferred_candidates"] = [
                eqe.ReplicaInfo(candidate_id=s, candidate_directory_id=uuid.UUID(int=s)) for s in succ
            ]
        req = (bqe.BeginQuorumEpochRequest if mod is bqe else eqe.EndQuorumEpochRequest)(
            cluster_id=_cluster(kw), topics=_topics(kw, mod.TopicData, mod.PartitionData, **pf)
        )
        if api == "BeginQuorumEpoch":
            req.voter_id = _int(kw, "voter", dst)
        return req
    if api == "Fetch":
        topic_id = uuid.UUID(int=int(kw["topic_id"])) if "topic_id" in kw else METADATA_TOPIC_ID
        parts = [
            fetch.FetchPartition(
                partition=part,
                current_leader_epoch=_int(kw, "epoch", epoch),
                fetch_offset=_int(kw, "offset", 0),
                last_fetched_epoch=_int(kw, "last_epoch", 0),
                partition_max_bytes=1 << 20,
                replica_directory_id=_dir(kw, "replica_dir", _int(kw, "replica", src)),
                high_watermark=_int(kw, "hw", FETCH_HW_UNSUPPORTED),
            )
            for _ in range(_int(kw, "partitions", 1))
        ]
        return fetch.FetchRequest(
            cluster_id=_cluster(kw),
            replica_state=fetch.ReplicaState(replica_id=_int(kw, "replica", src), replica_epoch=-1),
            max_wait_ms=_int(kw, "max_wait", 0),
            max_bytes=1 << 20,
            topics=[fetch.FetchTopic(topic=METADATA_TOPIC, topic_id=topic_id, partitions=parts)]
            * _int(kw, "topics", 1),
        )
    if api == "FetchSnapshot":
        o, e = (int(x) for x in kw.get("snapshot", "0,0").split(","))
        return fs.FetchSnapshotRequest(
            cluster_id=_cluster(kw),
            replica_id=_int(kw, "replica", src),
            max_bytes=_int(kw, "max_bytes", 1 << 20),
            topics=_topics(
                kw,
                fs.TopicSnapshot,
                fs.PartitionSnapshot,
                name_key="name",
                partition=part,
                current_leader_epoch=_int(kw, "epoch", epoch),
                snapshot_id=fs.SnapshotId(end_offset=o, epoch=e),
                position=_int(kw, "position", 0),
            ),
        )
    if api == "DescribeQuorum":
        return dq.DescribeQuorumRequest(
            topics=_topics(kw, dq.TopicData, dq.PartitionData, partition_index=part)
        )
    if api in ("AddRaftVoter", "UpdateRaftVoter"):
        voter = _int(kw, "voter", src)
        name, host, port = kw.get("listener", f"CONTROLLER:n{voter}:{9000 + voter}").split(":")
        mod = add if api == "AddRaftVoter" else upd
        common = dict(
            cluster_id=_cluster(kw),
            voter_id=voter,
            voter_directory_id=_dir(kw, "voter_dir", voter),
            listeners=[mod.Listener(name=name, host=host, port=int(port))],
        )
        if api == "AddRaftVoter":
            return add.AddRaftVoterRequest(
                timeout_ms=1000, ack_when_committed=_bool(kw, "ack", True), **common
            )
        return upd.UpdateRaftVoterRequest(
            current_leader_epoch=_int(kw, "epoch", epoch),
            k_raft_version_feature=upd.KRaftVersionFeature(
                min_supported_version=_int(kw, "min", 0), max_supported_version=_int(kw, "max", 1)
            ),
            **common,
        )
    if api == "RemoveRaftVoter":
        voter = _int(kw, "voter", src)
        return rem.RemoveRaftVoterRequest(
            cluster_id=_cluster(kw), voter_id=voter, voter_directory_id=_dir(kw, "voter_dir", voter)
        )
    if api == "ApiVersions":
        return av.ApiVersionsRequest()
    raise ValueError(f"unknown api {api}")


def build_response(api: str, env: Any, dst: int, src: int, kw: dict) -> Any:
    core = env.nodes[dst].core
    if api == "ApiVersions":
        feats = []
        if "kraft" in kw:
            lo, hi = (int(x) for x in kw["kraft"].split(","))
            feats = [avr.SupportedFeatureKey(name="kraft.version", min_version=lo, max_version=hi)]
        return avr.ApiVersionsResponse(error_code=_int(kw, "error", 0), supported_features=feats)
    if api == "Fetch":
        p = fetchr.PartitionData(
            partition_index=0,
            error_code=_int(kw, "perr", 0),
            high_watermark=_int(kw, "hw", -1),
            current_leader=fetchr.LeaderIdAndEpoch(
                leader_id=_int(kw, "leader", src), leader_epoch=_int(kw, "epoch", core.state.epoch)
            ),
            records=b"",
        )
        if "batch" in kw:  # batch=E: one data batch of epoch E at the receiver's log end
            batch = LogBatch(core.log.end_offset(), int(kw["batch"]), (b"x",), False, 0)
            p.records = encode_batches([batch])
        if "diverging" in kw:
            e, o = (int(x) for x in kw["diverging"].split(","))
            p.diverging_epoch = fetchr.EpochEndOffset(epoch=e, end_offset=o)
        if "snapshot" in kw:
            o, e = (int(x) for x in kw["snapshot"].split(","))
            p.snapshot_id = fetchr.SnapshotId(end_offset=o, epoch=e)
        return fetchr.FetchResponse(
            responses=[fetchr.FetchableTopicResponse(topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID, partitions=[p])]
        )
    if api == "FetchSnapshot":  # snapshot=O,E position=P size=S data=TEXT
        o, e = (int(x) for x in kw.get("snapshot", "0,0").split(","))
        sp = fsr.PartitionSnapshot(
            index=0,
            error_code=_int(kw, "perr", 0),
            snapshot_id=fsr.SnapshotId(end_offset=o, epoch=e),
            current_leader=fsr.LeaderIdAndEpoch(
                leader_id=_int(kw, "leader", src), leader_epoch=_int(kw, "epoch", core.state.epoch)
            ),
            size=_int(kw, "size", 0),
            position=_int(kw, "position", 0),
            unaligned_records=kw.get("data", "").encode(),
        )
        topic = fsr.TopicSnapshot(name=METADATA_TOPIC, partitions=[sp])
        return fsr.FetchSnapshotResponse(topics=[topic])
    raise ValueError(f"unknown response api {api}")
