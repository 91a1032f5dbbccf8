"""One-line summaries of KRaft wire messages and core outputs for the transcript tests."""

from __future__ import annotations

from typing import Any

from kraftwire.node.core.batches import decode_batches
from kraftwire.generated import errors
from kraftwire.node.core.api import ElectionState, LogBatch, OutboundRequest, OutboundResponse


def e(code: int) -> str:
    return errors.name(code)


def _lid(x: int) -> str:
    return "-" if x < 0 else str(x)


def _p(topics: Any) -> Any:
    return topics[0].partitions[0] if topics and topics[0].partitions else None


def _leader(error: int, leader_id: int, epoch: int) -> str:
    """The part every KRaft response shares: its error and the leader and epoch it names."""
    return f"{e(error)} leader={_lid(leader_id)} epoch={epoch}"


def batches_summary(data: bytes | None) -> str:
    if not data:
        return "[]"
    return "[" + " ".join(batch_summary(b) for b in decode_batches(data)) + "]"


def batch_summary(b: LogBatch) -> str:
    if b.is_control:
        kinds = ",".join(type(r).__name__.replace("Message", "").replace("Record", "") for r in b.records)
        return f"{b.base_offset}@e{b.epoch}:ctl({kinds})"
    vals = ",".join(r.decode() if isinstance(r, bytes) else repr(r) for r in b.records)
    return f"{b.base_offset}@e{b.epoch}:[{vals}]"


def message(m: OutboundRequest | OutboundResponse, src: int) -> str:
    body = m.request if isinstance(m, OutboundRequest) else m.response
    arrow = f"{src}->{m.destination}"
    return f"{arrow} {summary(body)}"


def summary(msg: Any) -> str:
    name = type(msg).__name__
    f = _SUMMARIES.get(name)
    return f"{name} {f(msg)}".rstrip() if f else name


def _vote_req(r: Any) -> str:
    p = _p(r.topics)
    pv = " pre_vote" if getattr(p, "pre_vote", False) else ""
    return f"epoch={p.replica_epoch} last=({p.last_offset_epoch},{p.last_offset}){pv}"


def _vote_resp(r: Any) -> str:
    p = _p(r.topics)
    if p is None:
        return f"error={e(r.error_code)}"
    g = " granted" if p.vote_granted else ""
    return _leader(p.error_code, p.leader_id, p.leader_epoch) + g


def _qe_req(r: Any) -> str:
    p = _p(r.topics)
    s = f"leader={p.leader_id} epoch={p.leader_epoch}"
    if hasattr(p, "preferred_candidates"):
        s += " successors=" + ",".join(str(c.candidate_id) for c in p.preferred_candidates)
    return s


def _qe_resp(r: Any) -> str:
    p = _p(r.topics)
    if p is None:
        return f"error={e(r.error_code)}"
    return _leader(p.error_code, p.leader_id, p.leader_epoch)


def _fetch_req(r: Any) -> str:
    p = r.topics[0].partitions[0]
    hw = getattr(p, "high_watermark", -1)
    return f"epoch={p.current_leader_epoch} offset={p.fetch_offset} last_epoch={p.last_fetched_epoch} hw={_lid(hw)}"


def _fetch_resp(r: Any) -> str:
    p = _p(r.responses)
    if p is None:
        return f"error={e(r.error_code)}"
    s = _leader(p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch)
    s += f" hw={_lid(p.high_watermark)}"
    if p.diverging_epoch.epoch >= 0:
        s += f" diverging=(epoch={p.diverging_epoch.epoch},end={p.diverging_epoch.end_offset})"
    if p.snapshot_id.end_offset >= 0:
        s += f" snapshot=({p.snapshot_id.end_offset},{p.snapshot_id.epoch})"
    if p.records:
        s += " records=" + batches_summary(p.records)
    return s


def _fs_req(r: Any) -> str:
    p = r.topics[0].partitions[0]
    return f"epoch={p.current_leader_epoch} snapshot=({p.snapshot_id.end_offset},{p.snapshot_id.epoch}) position={p.position}"


def _fs_resp(r: Any) -> str:
    p = _p(r.topics)
    if p is None:
        return f"error={e(r.error_code)}"
    s = _leader(p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch)
    if p.error_code == 0:
        s += f" snapshot=({p.snapshot_id.end_offset},{p.snapshot_id.epoch}) size={p.size} position={p.position} bytes={len(p.unaligned_records or b'')}"
    return s


def _dq_resp(r: Any) -> str:
    if r.error_code:
        return f"error={e(r.error_code)}"
    p = _p(r.topics)
    s = _leader(p.error_code, p.leader_id, p.leader_epoch)
    if p.error_code == 0:
        s += f" hw={_lid(p.high_watermark)}"
        s += " voters=" + ",".join(f"{v.replica_id}:{v.log_end_offset}" for v in p.current_voters)
        s += " observers=" + ",".join(f"{v.replica_id}:{v.log_end_offset}" for v in p.observers)
    return s


def _voter_req(r: Any) -> str:
    return f"voter={r.voter_id}"


def _voter_resp(r: Any) -> str:
    return e(r.error_code)


def _upd_resp(r: Any) -> str:
    cl = r.current_leader
    return _leader(r.error_code, cl.leader_id, cl.leader_epoch)


def _ro_req(r: Any) -> str:
    p = _p(r.topics)
    asker = ""
    if r.replica_id >= 0 and p is not None:
        directory = "" if p.replica_directory_id.int == 0 else f":{str(p.replica_directory_id)[:8]}"
        asker = f" replica={r.replica_id}{directory} epoch={p.current_leader_epoch}"
    return "cluster=" + str(r.cluster_id) + asker


def _ro_resp(r: Any) -> str:
    p = _p(r.topics)
    if p is None:
        return f"error={e(r.error_code)}"
    eps = "".join(f" endpoint={n.node_id}:{n.host}:{n.port}" for n in r.node_endpoints)
    offset = f" offset={p.applied_offset}" if p.applied_offset >= 0 else ""
    return _leader(p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch) + offset + eps


def _av_resp(r: Any) -> str:
    feats = ",".join(f"{f.name}[{f.min_version},{f.max_version}]" for f in (r.supported_features or []))
    return f"{e(r.error_code)} features={feats}"


_SUMMARIES = {
    "VoteRequest": _vote_req,
    "VoteResponse": _vote_resp,
    "BeginQuorumEpochRequest": _qe_req,
    "BeginQuorumEpochResponse": _qe_resp,
    "EndQuorumEpochRequest": _qe_req,
    "EndQuorumEpochResponse": _qe_resp,
    "FetchRequest": _fetch_req,
    "FetchResponse": _fetch_resp,
    "FetchSnapshotRequest": _fs_req,
    "FetchSnapshotResponse": _fs_resp,
    "DescribeQuorumResponse": _dq_resp,
    "AddRaftVoterRequest": _voter_req,
    "AddRaftVoterResponse": _voter_resp,
    "RemoveRaftVoterRequest": _voter_req,
    "RemoveRaftVoterResponse": _voter_resp,
    "UpdateRaftVoterRequest": _voter_req,
    "UpdateRaftVoterResponse": _upd_resp,
    "ApiVersionsResponse": _av_resp,
    "ReadOffsetRequest": _ro_req,
    "ReadOffsetResponse": _ro_resp,
}


def election_state(es: ElectionState) -> str:
    s = f"epoch={es.epoch}"
    if es.leader_id is not None:
        s += f" leader={es.leader_id}"
    if es.voted_key is not None:
        s += f" voted={es.voted_key.id}"
    return s
