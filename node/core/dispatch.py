"""Routes inbound requests, responses and request failures to their handlers (by API key)."""

from __future__ import annotations

from typing import Callable

from kraftwire.generated import api_keys, errors

from . import describe, fetch_client, fetch_follower, fetch_leader
from . import quorum_epoch, read_offset, responses, snapshots, vote, voter_changes, voter_client
from .api import InvariantViolation, PeerRefused, RequestFailed, RequestReceived, ResponseReceived
from .common import refuse
from .replica import Replica
from .requests import InFlight


def _api_versions(replica: Replica, ev: RequestReceived) -> None:
    lo, hi = replica.cfg.supported_kraft_version
    replica.respond(ev, responses.api_versions_response(ev.api_version, (lo, hi)))


def _fetch(replica: Replica, ev: RequestReceived) -> None:
    if fetch_client.is_client_fetch(ev):
        fetch_client.handle_client_fetch(replica, ev)
    else:
        fetch_leader.handle_fetch_request(replica, ev)


REQUEST_HANDLERS: dict[int, Callable[[Replica, RequestReceived], None]] = {
    api_keys.API_VERSIONS: _api_versions,
    api_keys.VOTE: vote.handle_vote_request,
    api_keys.BEGIN_QUORUM_EPOCH: quorum_epoch.handle_begin_quorum_epoch_request,
    api_keys.END_QUORUM_EPOCH: quorum_epoch.handle_end_quorum_epoch_request,
    api_keys.FETCH: _fetch,
    api_keys.FETCH_SNAPSHOT: snapshots.handle_fetch_snapshot_request,
    api_keys.DESCRIBE_QUORUM: describe.handle_describe_quorum_request,
    api_keys.ADD_RAFT_VOTER: voter_changes.handle_add_raft_voter_request,
    api_keys.REMOVE_RAFT_VOTER: voter_changes.handle_remove_raft_voter_request,
    api_keys.UPDATE_RAFT_VOTER: voter_changes.handle_update_raft_voter_request,
    api_keys.READ_OFFSET: read_offset.handle_read_offset_request,
}

RESPONSE_HANDLERS: dict[int, Callable[[Replica, ResponseReceived], bool]] = {
    api_keys.VOTE: vote.handle_vote_response,
    api_keys.BEGIN_QUORUM_EPOCH: quorum_epoch.handle_begin_quorum_epoch_response,
    api_keys.END_QUORUM_EPOCH: quorum_epoch.handle_end_quorum_epoch_response,
    api_keys.FETCH: fetch_follower.handle_fetch_response,
    api_keys.FETCH_SNAPSHOT: snapshots.handle_fetch_snapshot_response,
    api_keys.API_VERSIONS: voter_changes.handle_api_versions_response,
    api_keys.UPDATE_RAFT_VOTER: voter_client.handle_update_raft_voter_response,
    api_keys.ADD_RAFT_VOTER: voter_client.handle_auto_join_response,
    api_keys.REMOVE_RAFT_VOTER: voter_client.handle_auto_join_response,
}


def _what(message: object) -> str:
    return type(message).__name__


def dispatch_request(replica: Replica, ev: RequestReceived) -> None:
    """A request the handler refuses without an answer of its own (:class:`PeerRefused`) is logged and
    left unanswered; the handlers refuse the known cases with an error answer first."""
    key = ev.request.API_KEY
    handler = REQUEST_HANDLERS.get(key) if key is not None else None
    if handler is None:
        return
    try:
        handler(replica, ev)
    except PeerRefused as exc:
        refuse(replica, ev.source, _what(ev.request), str(exc))


def dispatch_response(replica: Replica, ev: ResponseReceived) -> None:
    if read_offset.is_read_offset_answer(replica, ev.correlation_id):
        try:
            return read_offset.handle_read_offset_response(replica, ev)
        except PeerRefused as exc:  # a lie in a leader's ReadOffset answer: ignored and logged
            return refuse(replica, ev.source, _what(ev.response), str(exc))
    flight = replica.requests.accept(ev.source, ev.correlation_id)
    if flight is None:
        return  # stale: not the request in flight to that node
    key = ev.response.API_KEY
    handler = RESPONSE_HANDLERS.get(key) if key is not None else None
    try:
        ok = handler(replica, ev) if handler is not None else True
    except PeerRefused as exc:  # ignored, logged, and that peer backs off like after any failure
        refuse(replica, ev.source, _what(ev.response), str(exc))
        ok = False
    if ok:
        replica.requests.on_success(ev.source)
    else:
        replica.requests.on_failure(ev.source, replica.now)


def dispatch_failure(replica: Replica, ev: RequestFailed) -> None:
    if read_offset.is_read_offset_answer(replica, ev.correlation_id):
        return read_offset.handle_read_offset_failure(replica, ev)
    flight = replica.requests.accept(ev.destination, ev.correlation_id)
    if flight is None:
        return
    replica.requests.on_failure(ev.destination, replica.now)
    if ev.error_code == errors.CLUSTER_AUTHORIZATION_FAILED:
        raise InvariantViolation("cluster authorization failed")
    _on_failed(replica, ev.destination, flight, ev.error_code)


def on_request_timeout(replica: Replica, dest: int, flight: InFlight) -> None:
    _on_failed(replica, dest, flight, errors.REQUEST_TIMED_OUT)


def _on_failed(replica: Replica, dest: int, flight: InFlight, error: int) -> None:
    """Most failures need nothing beyond the retry backoff: the next poll sends again (a FetchSnapshot
    from the same position). These two change state."""
    if flight.api_key == api_keys.VOTE and error == errors.UNSUPPORTED_VERSION:
        vote.on_vote_unsupported(replica, dest)
    elif flight.api_key == api_keys.API_VERSIONS:
        voter_changes.on_api_versions_failed(replica, dest)
