"""Fetch (apiKey 1), leader side: validation, divergence and snapshot redirects, replica progress and the
fetch purgatory (docs/kraft.md §4.5, §4.6, §5.2).

Validation order: cluster id; topic id and partition (top-level INVALID_REQUEST); partition
INVALID_REQUEST for a negative MaxWaitMs, FetchOffset or LastFetchedEpoch or LastFetchedEpoch above
CurrentLeaderEpoch; the leader-only checks. Then the fetch is evaluated. It is answered at once when it
has an error, records, a divergence or snapshot redirect, ``MaxWaitMs == 0``, or (v18) a follower HW
below ours; otherwise it is parked until the LEO passes its offset, the HW moves, ``MaxWaitMs`` passes or
we stop leading.

The leader's high watermark moves here and only here: on a follower's Fetch, or when the driver has
flushed the leader's own appends (:func:`on_flushed`). :func:`on_high_watermark_advanced` is the one
reaction to it: settle a committed voter change, then answer the parked fetches.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kraftwire.generated import errors
from kraftwire.generated import fetch_request as _fetch

from . import batches as _batches, responses
from .api import METADATA_TOPIC_ID, InvariantViolation, ReplicaKey, RequestReceived, SnapshotId
from .common import cluster_id_ok, validate_leader_only
from .leader import LeaderState, ParkedFetch
from .leader_ops import answer_confirmed_reads, on_leader_commit, respond_fetch_error
from .log_ops import DIVERGING, SNAPSHOT, latest_snapshot, validate_offset_and_epoch
from .messages import FETCH_HW_UNSUPPORTED, as_message, key_of, metadata_partition
from .replica import Replica


def _partition(req: _fetch.FetchRequest, version: int) -> Any:
    """Fetch v13+ names the topic by id, older versions by name."""
    if version >= 13:
        return metadata_partition(req.topics, "topic_id", "partition", METADATA_TOPIC_ID)
    return metadata_partition(req.topics, "topic", "partition")


def replica_id_of(req: _fetch.FetchRequest, version: int) -> int:
    return req.replica_state.replica_id if version >= 15 else req.replica_id


def handle_fetch_request(replica: Replica, ev: RequestReceived) -> None:
    req, v = as_message(ev.request, _fetch.FetchRequest), ev.api_version
    if not cluster_id_ok(replica, req.cluster_id):
        return replica.respond(ev, responses.fetch_response(v, errors.INCONSISTENT_CLUSTER_ID))
    p = _partition(req, v)
    if p is None:
        return replica.respond(ev, responses.fetch_response(v, errors.INVALID_REQUEST))
    if (
        req.max_wait_ms < 0
        or p.fetch_offset < 0
        or p.last_fetched_epoch < 0
        or p.last_fetched_epoch > p.current_leader_epoch
    ):
        return respond_fetch_error(replica, ev.source, ev.correlation_id, v, errors.INVALID_REQUEST)
    err = validate_leader_only(replica, p.current_leader_epoch)
    if err != errors.NONE:
        return respond_fetch_error(replica, ev.source, ev.correlation_id, v, err)
    st = replica.state
    assert isinstance(st, LeaderState)
    fetch = ParkedFetch(ev.source, ev.correlation_id, v, req, replica.now + req.max_wait_ms)
    if not _try_complete(replica, st, fetch, force=False):
        st.parked.append(fetch)


class _Answer(NamedTuple):
    """What a fetch gets from the log: its records, or a divergence ``(epoch, end_offset)``, or a
    snapshot to download instead."""

    records: bytes = b""
    diverging: tuple[int, int] | None = None
    snapshot_id: SnapshotId | None = None


def _try_complete(replica: Replica, st: LeaderState, fetch: ParkedFetch, force: bool) -> bool:
    """Answer ``fetch`` if it is due (or ``force``); returns True when answered.

    A failure while reading the log or encoding its batches (a storage error) is answered with a
    partition-level UNKNOWN_SERVER_ERROR, as Kafka's ``tryCompleteFetchRequest`` does; the replica's
    progress is then left as it was."""
    req, v = fetch.request, fetch.api_version
    p = req.topics[0].partitions[0]
    try:
        answer = _read(replica, p.fetch_offset, p.last_fetched_epoch, req.max_bytes)
    except InvariantViolation:
        raise
    except Exception:  # noqa: BLE001 - any storage failure becomes an error answer, never a crash
        respond_fetch_error(replica, fetch.source, fetch.correlation_id, v, errors.UNKNOWN_SERVER_ERROR)
        return True
    hw_moved = False
    if answer.diverging is None and answer.snapshot_id is None:
        hw_moved = _record_progress(replica, st, req, v)
    follower_hw = getattr(p, "high_watermark", FETCH_HW_UNSUPPORTED) if v >= 18 else FETCH_HW_UNSUPPORTED
    due = (
        force
        or bool(answer.records)
        or req.max_wait_ms == 0
        or answer.diverging is not None
        or answer.snapshot_id is not None
        or (st.high_watermark is not None and follower_hw < st.high_watermark)
    )
    if due:
        response = responses.fetch_response(
            v,
            errors.NONE,
            errors.NONE,
            st.leader_id,
            st.epoch,
            st.high_watermark,
            replica.log.start_offset(),
            answer.records,
            answer.diverging,
            answer.snapshot_id,
            replica.leader_endpoint(),
        )
        replica.respond_to(fetch.source, fetch.correlation_id, v, response)
    if hw_moved:
        on_high_watermark_advanced(replica, st)
    return due


def _read(replica: Replica, fetch_offset: int, last_fetched_epoch: int, max_bytes: int) -> _Answer:
    """Judge the follower's position (docs/kraft.md §4.6) and read from it when it is valid."""
    log = replica.log
    latest = latest_snapshot(replica.snapshots)
    if fetch_offset == 0 and latest is not None:
        return _Answer(snapshot_id=latest)
    val = validate_offset_and_epoch(log, replica.snapshots, fetch_offset, last_fetched_epoch)
    if val.kind == DIVERGING:
        return _Answer(diverging=(val.epoch, val.end_offset))
    if val.kind == SNAPSHOT:
        return _Answer(snapshot_id=SnapshotId(val.end_offset, val.epoch))
    batches = log.read(fetch_offset, max_bytes) if fetch_offset < log.end_offset() else ()
    return _Answer(records=_batches.encode_batches(batches) if batches else b"")


def _record_progress(replica: Replica, st: LeaderState, req: _fetch.FetchRequest, version: int) -> bool:
    """A fetch from a valid position is the replica's acknowledgement; returns True if the HW moved."""
    p = req.topics[0].partitions[0]
    rid = replica_id_of(req, version)
    if rid < 0:
        return False
    key = key_of(rid, p.replica_directory_id) if version >= 17 else ReplicaKey(rid, None)
    hw_moved = st.update_replica(key, p.fetch_offset, replica.now, replica.log.end_offset())
    st.record_voter_fetch(key, replica.now)
    return hw_moved


def on_flushed(replica: Replica, st: LeaderState, flushed_to: int) -> None:
    """The driver made the log durable up to ``flushed_to``: count the leader's own end offset."""
    end = min(flushed_to, replica.log.end_offset())
    if st.update_local_end_offset(end, replica.now):
        on_high_watermark_advanced(replica, st)
    else:
        retry_parked(replica, st, only_new_data=True)


def on_high_watermark_advanced(replica: Replica, st: LeaderState) -> None:
    """The leader's reaction to its HW moving: settle a committed voter change, answer confirmed reads
    (the first commit of the epoch may be what a read round waited for) and parked fetches."""
    on_leader_commit(replica, st)
    answer_confirmed_reads(replica, st)
    retry_parked(replica, st, only_new_data=False)


def retry_parked(replica: Replica, st: LeaderState, only_new_data: bool) -> None:
    """Re-evaluate parked fetches: after new data (those below LEO) or an HW change (all of them)."""
    if not st.parked:
        return
    leo = replica.log.end_offset()
    waiting, st.parked = st.parked, []
    for f in waiting:
        offset = f.request.topics[0].partitions[0].fetch_offset
        if only_new_data and offset >= leo:
            st.parked.append(f)
        elif not _try_complete(replica, st, f, force=not only_new_data):
            st.parked.append(f)


def expire_parked(replica: Replica, st: LeaderState) -> None:
    if not st.parked:
        return
    now = replica.now
    due = [f for f in st.parked if now >= f.deadline]
    if not due:
        return
    st.parked = [f for f in st.parked if now < f.deadline]
    for f in due:
        _try_complete(replica, st, f, force=True)
