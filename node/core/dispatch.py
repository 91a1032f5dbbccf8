"""Routes inbound requests, responses and request failures to their handlers (by API key)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from . import describe, errors, fetch_follower, fetch_leader, messages as m, quorum_epoch, responses
from . import snapshots, vote, voter_changes
from .api import RequestFailed, RequestReceived, ResponseReceived
from .requests import InFlight

if TYPE_CHECKING:
    from .core import KRaftCore


def _api_versions(core: "KRaftCore", ev: RequestReceived) -> None:
    core.respond(ev, responses.api_versions_response(ev.api_version, tuple(core.cfg.supported_kraft_version)))


REQUEST_HANDLERS: dict[int, Callable[["KRaftCore", RequestReceived], None]] = {
    m.API_API_VERSIONS: _api_versions,
    m.API_VOTE: vote.handle_vote_request,
    m.API_BEGIN_QUORUM_EPOCH: quorum_epoch.handle_begin_quorum_epoch_request,
    m.API_END_QUORUM_EPOCH: quorum_epoch.handle_end_quorum_epoch_request,
    m.API_FETCH: fetch_leader.handle_fetch_request,
    m.API_FETCH_SNAPSHOT: snapshots.handle_fetch_snapshot_request,
    m.API_DESCRIBE_QUORUM: describe.handle_describe_quorum_request,
    m.API_ADD_RAFT_VOTER: voter_changes.handle_add_raft_voter_request,
    m.API_REMOVE_RAFT_VOTER: voter_changes.handle_remove_raft_voter_request,
    m.API_UPDATE_RAFT_VOTER: voter_changes.handle_update_raft_voter_request,
}

RESPONSE_HANDLERS: dict[int, Callable[["KRaftCore", ResponseReceived], bool]] = {
    m.API_VOTE: vote.handle_vote_response,
    m.API_BEGIN_QUORUM_EPOCH: quorum_epoch.handle_begin_quorum_epoch_response,
    m.API_END_QUORUM_EPOCH: quorum_epoch.handle_end_quorum_epoch_response,
    m.API_FETCH: fetch_follower.handle_fetch_response,
    m.API_FETCH_SNAPSHOT: snapshots.handle_fetch_snapshot_response,
    m.API_API_VERSIONS: voter_changes.handle_api_versions_response,
    m.API_UPDATE_RAFT_VOTER: voter_changes.handle_update_raft_voter_response,
    m.API_ADD_RAFT_VOTER: voter_changes.handle_auto_join_response,
    m.API_REMOVE_RAFT_VOTER: voter_changes.handle_auto_join_response,
}


def dispatch_request(core: "KRaftCore", ev: RequestReceived) -> None:
    handler = REQUEST_HANDLERS.get(ev.request.API_KEY)
    if handler is not None:
        handler(core, ev)


def dispatch_response(core: "KRaftCore", ev: ResponseReceived) -> None:
    flight = core.requests.accept(ev.source, ev.correlation_id)
    if flight is None:
        return  # stale: not the request in flight to that node
    handler = RESPONSE_HANDLERS.get(ev.response.API_KEY)
    ok = handler(core, ev) if handler is not None else True
    if ok:
        core.requests.on_success(ev.source)
    else:
        core.requests.on_failure(ev.source, core.now)


def dispatch_failure(core: "KRaftCore", ev: RequestFailed) -> None:
    flight = core.requests.accept(ev.destination, ev.correlation_id)
    if flight is None:
        return
    core.requests.on_failure(ev.destination, core.now)
    if ev.error_code == errors.CLUSTER_AUTHORIZATION_FAILED:
        from .api import InvariantViolation

        raise InvariantViolation("cluster authorization failed")
    _on_failed(core, ev.destination, flight, ev.error_code)


def on_request_timeout(core: "KRaftCore", dest: int, flight: InFlight) -> None:
    _on_failed(core, dest, flight, errors.REQUEST_TIMED_OUT)


def _on_failed(core: "KRaftCore", dest: int, flight: InFlight, error: int) -> None:
    """Most failures need nothing beyond the retry backoff: the next poll sends again (a FetchSnapshot
    from the same position). These two change state."""
    if flight.api_key == m.API_VOTE and error == errors.UNSUPPORTED_VERSION:
        vote.on_vote_unsupported(core, dest)
    elif flight.api_key == m.API_API_VERSIONS:
        voter_changes.on_api_versions_failed(core, dest)
