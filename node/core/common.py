"""Validation shared by the request handlers and the common response handling (kraft-node.md §4.1, §4.9)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from . import errors
from .api import Endpoint, InvariantViolation, Role
from .transitions import maybe_transition

if TYPE_CHECKING:
    from .core import KRaftCore


def cluster_id_ok(core: "KRaftCore", cluster_id: str | None) -> bool:
    """A null cluster id is accepted; any other value (even "") must equal ours."""
    return cluster_id is None or cluster_id == core.cfg.cluster_id


def validate_voter_only(core: "KRaftCore", remote_id: int, epoch: int) -> int:
    if epoch < core.state.epoch:
        return errors.FENCED_LEADER_EPOCH
    if remote_id < 0:
        return errors.INVALID_REQUEST
    return errors.NONE


def validate_leader_only(core: "KRaftCore", epoch: int) -> int:
    st = core.state
    if epoch < st.epoch:
        return errors.FENCED_LEADER_EPOCH
    if epoch > st.epoch:
        return errors.UNKNOWN_LEADER_EPOCH
    if st.role is not Role.LEADER:
        return errors.NOT_LEADER_OR_FOLLOWER
    if core.shutdown_deadline is not None:
        return errors.BROKER_NOT_AVAILABLE
    return errors.NONE


class PartitionInfo(NamedTuple):
    """What every KRaft response says about the partition: error, leader, epoch, leader endpoints."""

    error: int
    leader_id: int | None
    epoch: int
    endpoints: Mapping[str, Endpoint]


def endpoints_from(core: "KRaftCore", node_endpoints: Any, leader_id: int | None) -> dict[str, Endpoint]:
    if leader_id is None or not node_endpoints:
        return {}
    name = core.listener_name() or "CONTROLLER"
    for ne in node_endpoints:
        if ne.node_id == leader_id:
            return {name: Endpoint(ne.host, ne.port)}
    return {}


def partition_info(core: "KRaftCore", response: Any) -> PartitionInfo | None:
    """``None`` when the response has a top-level error (no partition to read)."""
    top = getattr(response, "error_code", errors.NONE)
    name = type(response).__name__
    if name == "FetchResponse":
        topics = response.responses
    else:
        topics = getattr(response, "topics", None)
    if name == "UpdateRaftVoterResponse":
        cl = response.current_leader
        lid = None if cl.leader_id < 0 else cl.leader_id
        eps = {core.listener_name() or "CONTROLLER": Endpoint(cl.host, cl.port)} if lid is not None and cl.host else {}
        return PartitionInfo(top, lid, cl.leader_epoch, eps)
    if top != errors.NONE or not topics or not topics[0].partitions:
        return None
    p = topics[0].partitions[0]
    if name in ("FetchResponse", "FetchSnapshotResponse"):
        lid, epoch = p.current_leader.leader_id, p.current_leader.leader_epoch
    else:
        lid, epoch = p.leader_id, p.leader_epoch
    lid = None if lid < 0 else lid
    eps = endpoints_from(core, getattr(response, "node_endpoints", None), lid)
    return PartitionInfo(p.error_code, lid, epoch, eps)


def common_outcome(core: "KRaftCore", response: Any) -> tuple[bool | None, PartitionInfo | None]:
    """What every response handler does first: ``(done, info)``. ``done`` is the handler's result when
    the common handling settles the response (``False`` for one without a partition), else ``None``:
    continue with ``info``."""
    info = partition_info(core, response)
    if info is None:
        return False, None
    return handle_common_response(core, info), info


def handle_common_response(core: "KRaftCore", info: PartitionInfo) -> bool | None:
    """Kafka's ``maybeHandleCommonResponse``: ``None`` means "continue with the API handler";
    otherwise the response is fully handled and the value says whether it was a success."""
    st = core.state
    err, lid, epoch = info.error, info.leader_id, info.epoch
    eps = dict(info.endpoints) or (dict(core.voters().endpoints(lid)) if lid is not None else {})
    if epoch < st.epoch or err == errors.UNKNOWN_LEADER_EPOCH:
        return True  # stale: nothing to learn, no reason to back off
    if epoch > st.epoch or err in (errors.FENCED_LEADER_EPOCH, errors.NOT_LEADER_OR_FOLLOWER):
        maybe_transition(core, epoch, lid, eps)
        return True
    if lid is not None and st.leader_id is None and st.role is not Role.LEADER:
        maybe_transition(core, epoch, lid, eps)
        return None if err == errors.NONE else True  # an error: retry at once, now as a follower
    if err == errors.BROKER_NOT_AVAILABLE:
        return False
    if err == errors.INVALID_VOTER_KEY:
        return True  # Kafka only logs it
    if err == errors.INVALID_REQUEST:
        raise InvariantViolation("peer says our request was invalid")
    return None
