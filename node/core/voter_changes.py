"""AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter (82): the leader side (docs/kraft.md §7.2-§7.5).

One change at a time. Shared preconditions, in order: nothing pending, the leader has an HW,
kraft.version ≥ 1 (else UNSUPPORTED_VERSION), the last VotersRecord committed (else
REQUEST_TIMED_OUT). A new voter set takes effect as soon as its VotersRecord is appended; the pending
slot frees when it commits. A leader that removed itself keeps leading as a non-voter and resigns once
the removal commits, whether or not the request is still pending then.

Add and Remove answers carry Kafka's error messages: "" for the leader-only check, which Kafka answers
without one; null on success; otherwise Kafka's text for the check that failed (replica keys written
as Kafka's ``ReplicaKey.toString()`` writes them), or the error's default message.
"""

from __future__ import annotations

import base64
from typing import Iterable

from kraftwire.generated import add_raft_voter_request as _add
from kraftwire.generated import api_versions_response as _avr
from kraftwire.generated import remove_raft_voter_request as _rem
from kraftwire.generated import update_raft_voter_request as _upd

from kraftwire.generated import errors

from . import messages, responses
from .api import ZERO_UUID, Endpoint, ReplicaKey, RequestReceived, ResponseReceived, VoterSpec
from .common import cluster_id_ok, validate_leader_only
from .leader import LeaderState, PendingVoterChange
from .leader_ops import append_control, respond_change
from .messages import as_message, key_of
from .replica import Replica
from .voters import VoterSet

Refusal = tuple[int, str | None]
"""An error code and the ErrorMessage that goes with it (None: the error's default message)."""

ACCEPTED: Refusal = (errors.NONE, None)


def key_text(key: ReplicaKey) -> str:
    """``key`` as Kafka writes a ReplicaKey in its messages (a directory id in Kafka's base64 form)."""
    d = key.directory_id
    text = "<undefined>" if d is None else base64.urlsafe_b64encode(d.bytes).rstrip(b"=").decode("ascii")
    return f"ReplicaKey(id={key.id}, directoryId={text})"


def _keys_text(keys: Iterable[ReplicaKey]) -> str:
    return "[" + ", ".join(key_text(k) for k in sorted(keys, key=lambda k: k.id)) + "]"


def _preconditions(replica: Replica, st: LeaderState, verb: str) -> Refusal:
    """``verb``: "adding" or "removing", for the UNSUPPORTED_VERSION text."""
    if st.pending_change is not None:
        return (
            errors.REQUEST_TIMED_OUT,
            "Request timed out waiting for leader to handle previous voter change request",
        )
    hw = st.high_watermark
    if hw is None:
        return (
            errors.REQUEST_TIMED_OUT,
            "Request timed out waiting for leader to establish HWM and fence previous voter changes",
        )
    kv = replica.control.kraft_version()
    if kv == 0:
        return (
            errors.UNSUPPORTED_VERSION,
            f"Cluster doesn't support {verb} voter because the kraft.version feature is {kv}",
        )
    off = replica.control.last_voters_offset()
    if off is None or off >= hw:
        at = "Optional.empty" if off is None else f"Optional[{off}]"
        return (
            errors.REQUEST_TIMED_OUT,
            f"Request timed out waiting for voters to commit the latest voter change at {at} with HWM {hw}",
        )
    return ACCEPTED


def _listeners(req: _add.AddRaftVoterRequest | _upd.UpdateRaftVoterRequest) -> dict[str, Endpoint]:
    return {lst.name: Endpoint(lst.host, lst.port) for lst in req.listeners}


def _listeners_text(listeners: dict[str, Endpoint]) -> str:
    return ", ".join(f"{name}={ep.host}:{ep.port}" for name, ep in listeners.items())


def _has_default_listener(replica: Replica, listeners: dict[str, Endpoint]) -> bool:
    name = replica.listener_name()
    return bool(listeners) if name is None else name in listeners


def _leader_checks(
    replica: Replica, req: _add.AddRaftVoterRequest | _rem.RemoveRaftVoterRequest, what: str
) -> Refusal:
    """``what``: "Add" or "Remove", for the INVALID_REQUEST text."""
    if not cluster_id_ok(replica, req.cluster_id):
        given = "null" if req.cluster_id is None else req.cluster_id
        return (
            errors.INCONSISTENT_CLUSTER_ID,
            f'The given id "{given}" doesn\'t match the cluster id "{replica.cfg.cluster_id}"',
        )
    err = validate_leader_only(replica, replica.state.epoch)
    if err != errors.NONE:
        return err, responses.NO_MESSAGE
    if req.voter_id < 0 or req.voter_directory_id == ZERO_UUID:
        return errors.INVALID_REQUEST, f"{what} voter request didn't include a valid voter"
    return ACCEPTED


def handle_add_raft_voter_request(replica: Replica, ev: RequestReceived) -> None:
    req = as_message(ev.request, _add.AddRaftVoterRequest)

    def reply(refusal: Refusal) -> None:
        replica.respond(ev, responses.add_raft_voter_response(*refusal))

    refusal = _leader_checks(replica, req, "Add")
    if refusal != ACCEPTED:
        return reply(refusal)
    listeners = _listeners(req)
    if not _has_default_listener(replica, listeners):
        text = (
            f"Add voter request didn't include the endpoint ({_listeners_text(listeners)}) "
            f"for the default listener {replica.listener_name()}"
        )
        return reply((errors.INVALID_REQUEST, text))
    st = replica.state
    assert isinstance(st, LeaderState)
    refusal = _preconditions(replica, st, "adding")
    if refusal != ACCEPTED:
        return reply(refusal)
    key = ReplicaKey(req.voter_id, req.voter_directory_id)
    voters = replica.voters()
    if voters.get(req.voter_id) is not None:
        keys = _keys_text(spec.key for spec in voters)
        return reply(
            (
                errors.DUPLICATE_VOTER,
                f"The voter id for {key_text(key)} is already part of the set of voters {keys}.",
            )
        )
    if not replica.requests.is_ready(req.voter_id, replica.now):
        return reply(
            (errors.REQUEST_TIMED_OUT, f"New voter {key_text(key)} is not ready to receive requests")
        )
    ack = bool(getattr(req, "ack_when_committed", True)) if ev.api_version >= 1 else True
    _probe(replica, st, ev, "add", VoterSpec(key, listeners, (0, 0)), ack)


def handle_api_versions_response(replica: Replica, ev: ResponseReceived) -> bool:
    st = replica.state
    if not isinstance(st, LeaderState):
        return True
    change = st.pending_change
    if change is None or not change.awaiting_api_versions or change.key.id != ev.source:
        return True
    resp = as_message(ev.response, _avr.ApiVersionsResponse)
    change.awaiting_api_versions = False
    if resp.error_code != errors.NONE:
        text = (
            f"Aborted add voter operation for {key_text(change.key)} "
            f"since API_VERSIONS returned an error {errors.name(resp.error_code)}"
        )
        _finish(replica, st, change, errors.REQUEST_TIMED_OUT, text)
        return False  # an error answer puts the destination into retry backoff
    feature = next((f for f in resp.supported_features or () if f.name == "kraft.version"), None)
    lo, hi = (feature.min_version, feature.max_version) if feature is not None else (0, 0)
    if change.kind == "update":
        if (lo, hi) != tuple(change.spec.kraft_version_range):
            return _finish(replica, st, change, errors.INVALID_REQUEST)
        return _complete_update(replica, st, change)
    kv = replica.control.kraft_version()
    if not lo <= kv <= hi:
        span = f"(min: {lo}, max: {hi})" if feature is not None else "undefined"
        text = (
            f"Aborted add voter operation for {key_text(change.key)} "
            f"since the kraft.version range {span} doesn't support the finalized version {kv}"
        )
        return _finish(replica, st, change, errors.INVALID_REQUEST, text)
    p = st.observer_states.get(change.key)
    if (
        p is None
        or p.last_caught_up_ms < 0
        or replica.now - p.last_fetch_ms > replica.cfg.caught_up_window_ms
    ):
        text = f"Aborted add voter operation for {key_text(change.key)} since it is lagging behind"
        return _finish(replica, st, change, errors.REQUEST_TIMED_OUT, text)
    spec = VoterSpec(change.key, change.spec.listeners, (lo, hi))
    _append_voters(replica, st, change, replica.voters().with_voter(spec))
    if not change.ack_when_committed:
        respond_change(replica, change, errors.NONE)
    return True


def on_api_versions_failed(replica: Replica, dest: int) -> None:
    st = replica.state
    if not isinstance(st, LeaderState):
        return
    change = st.pending_change
    if change is not None and change.awaiting_api_versions and change.key.id == dest:
        _finish(replica, st, change, errors.REQUEST_TIMED_OUT)


def handle_remove_raft_voter_request(replica: Replica, ev: RequestReceived) -> None:
    req = as_message(ev.request, _rem.RemoveRaftVoterRequest)

    def reply(refusal: Refusal) -> None:
        replica.respond(ev, responses.remove_raft_voter_response(*refusal))

    refusal = _leader_checks(replica, req, "Remove")
    if refusal != ACCEPTED:
        return reply(refusal)
    st = replica.state
    assert isinstance(st, LeaderState)
    refusal = _preconditions(replica, st, "removing")
    if refusal != ACCEPTED:
        return reply(refusal)
    key = ReplicaKey(req.voter_id, req.voter_directory_id)
    voters = replica.voters()
    spec = voters.get(key.id)
    if spec is None or spec.key != key or len(voters) <= 1:
        keys = _keys_text(s.key for s in voters)
        return reply(
            (errors.VOTER_NOT_FOUND, f"Cannot remove voter {key_text(key)} from the set of voters {keys}")
        )
    change = PendingVoterChange(
        "remove",
        ev.source,
        ev.correlation_id,
        ev.api_version,
        replica.now + replica.cfg.request_timeout_ms,
        key,
    )
    st.pending_change = change
    _append_voters(replica, st, change, voters.without_voter(key))


def handle_update_raft_voter_request(replica: Replica, ev: RequestReceived) -> None:
    """Validation up to the ApiVersions probe; :func:`_complete_update` does the rest (§7.5)."""
    req, st = as_message(ev.request, _upd.UpdateRaftVoterRequest), replica.state

    def reply(e: int) -> None:
        s = replica.state
        replica.respond(
            ev, responses.update_raft_voter_response(e, s.leader_id, s.epoch, replica.leader_endpoint())
        )

    if not cluster_id_ok(replica, req.cluster_id):
        return reply(errors.INCONSISTENT_CLUSTER_ID)
    err = validate_leader_only(replica, req.current_leader_epoch)
    if err != errors.NONE:
        return reply(err)
    assert isinstance(st, LeaderState)
    feat = req.k_raft_version_feature
    lo, hi = feat.min_supported_version, feat.max_supported_version
    if req.voter_id < 0 or req.voter_directory_id == ZERO_UUID or lo < 0 or hi < 0 or hi < lo:
        return reply(errors.INVALID_REQUEST)
    if st.pending_change is not None or st.high_watermark is None:
        return reply(errors.REQUEST_TIMED_OUT)
    listeners = _listeners(req)
    if not _has_default_listener(replica, listeners):
        return reply(errors.INVALID_REQUEST)
    if not replica.requests.is_ready(req.voter_id, replica.now):
        return reply(errors.REQUEST_TIMED_OUT)
    _probe(
        replica,
        st,
        ev,
        "update",
        VoterSpec(key_of(req.voter_id, req.voter_directory_id), listeners, (lo, hi)),
    )


def _complete_update(replica: Replica, st: LeaderState, change: PendingVoterChange) -> bool:
    """The probed voter answered ApiVersions with the range it claimed: apply the update."""
    lo, hi = change.spec.kraft_version_range
    kv = replica.control.kraft_version()
    if not lo <= kv <= hi:
        return _finish(replica, st, change, errors.INVALID_REQUEST)
    voters: VoterSet | None
    if kv >= 1:
        off, hw = replica.control.last_voters_offset(), st.high_watermark
        if off is None or hw is None or off >= hw:  # (a pending change implies a known HW)
            return _finish(replica, st, change, errors.REQUEST_TIMED_OUT)
        voters = replica.voters()
    else:
        voters = st.volatile_voters
        if voters is None:
            return _finish(replica, st, change, errors.REQUEST_TIMED_OUT)
    current = voters.get(change.key.id)
    if current is None or (kv >= 1 and current.key != change.key):
        return _finish(replica, st, change, errors.VOTER_NOT_FOUND)
    st.record_voter_fetch(current.key, replica.now)
    if kv >= 1:
        respond_change(replica, change, errors.NONE)  # the slot stays taken until the record commits
        _append_voters(replica, st, change, voters.with_voter(change.spec))
        return True
    # kraft.version 0: update the leader's in-memory set, matched by id (kept for the upgrade). Kafka
    # compare-and-sets it against a concurrent upgrade; here the upgrade runs between two events and
    # sets kraft.version 1, which the checks above catch (the voter set is not yet committed).
    st.volatile_voters = voters.with_voter(change.spec)
    return _finish(replica, st, change, errors.NONE)


def _probe(
    replica: Replica, st: LeaderState, ev: RequestReceived, kind: str, spec: VoterSpec, ack: bool = True
) -> None:
    """Send ApiVersions to the voter's default endpoint; the change stays pending (the one slot) until
    the answer, a failure or the request timeout."""
    name = replica.listener_name()
    endpoint = spec.listeners[name] if name is not None else next(iter(spec.listeners.values()))
    replica.send_request(spec.key.id, messages.api_versions_request(), endpoint=endpoint)
    st.pending_change = PendingVoterChange(
        kind,
        ev.source,
        ev.correlation_id,
        ev.api_version,
        replica.now + replica.cfg.request_timeout_ms,
        spec.key,
        spec,
        ack_when_committed=ack,
        awaiting_api_versions=True,
    )


def _append_voters(replica: Replica, st: LeaderState, change: PendingVoterChange, voters: VoterSet) -> None:
    change.record_offset = append_control(replica, st, [voters.to_record()])
    st.update_voters(replica.voters(), replica.now)


def _finish(
    replica: Replica, st: LeaderState, change: PendingVoterChange, error: int, message: str | None = None
) -> bool:
    respond_change(replica, change, error, message)
    if st.pending_change is change:
        st.pending_change = None
    return True


def expire_pending_change(replica: Replica, st: LeaderState) -> None:
    change = st.pending_change
    if change is not None and replica.now >= change.deadline:
        _finish(replica, st, change, errors.REQUEST_TIMED_OUT)
