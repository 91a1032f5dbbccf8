"""Fetch (apiKey 1), leader side: validation, divergence and snapshot redirects, replica progress and the
fetch purgatory (kraft-node.md §4.5, §4.6, §5.2).

Validation order: cluster id; topic id and partition (top-level INVALID_REQUEST); partition
INVALID_REQUEST for a negative MaxWaitMs, FetchOffset or LastFetchedEpoch or LastFetchedEpoch above
CurrentLeaderEpoch; the leader-only checks. Then the fetch is evaluated. It is answered at once when it
has an error, records, a divergence or snapshot redirect, ``MaxWaitMs == 0``, or (v18) a follower HW
below ours; otherwise it is parked until the LEO passes its offset, the HW moves, ``MaxWaitMs`` passes or
we stop leading.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraftwire.node import batches as _batches

from . import errors, responses
from .api import InvariantViolation, METADATA_PARTITION, METADATA_TOPIC_ID, ReplicaKey, RequestReceived, SnapshotId
from .common import cluster_id_ok, validate_leader_only
from .leader import LeaderState, ParkedFetch
from .log_ops import DIVERGING, SNAPSHOT, latest_snapshot, validate_offset_and_epoch
from .messages import FETCH_HW_UNSUPPORTED, key_of

if TYPE_CHECKING:
    from .core import KRaftCore


def _partition(req: Any, version: int) -> Any:
    t = req.topics
    if len(t) != 1 or len(t[0].partitions) != 1 or t[0].partitions[0].partition != METADATA_PARTITION:
        return None
    if version >= 13 and t[0].topic_id != METADATA_TOPIC_ID:
        return None
    if version < 13 and t[0].topic != "__cluster_metadata":
        return None
    return t[0].partitions[0]


def replica_id_of(req: Any, version: int) -> int:
    return req.replica_state.replica_id if version >= 15 else req.replica_id


def handle_fetch_request(core: "KRaftCore", ev: RequestReceived) -> None:
    req, v = ev.request, ev.api_version
    if not cluster_id_ok(core, req.cluster_id):
        return core.respond(ev, responses.fetch_response(v, errors.INCONSISTENT_CLUSTER_ID))
    p = _partition(req, v)
    if p is None:
        return core.respond(ev, responses.fetch_response(v, errors.INVALID_REQUEST))
    if (
        req.max_wait_ms < 0
        or p.fetch_offset < 0
        or p.last_fetched_epoch < 0
        or p.last_fetched_epoch > p.current_leader_epoch
    ):
        return respond_fetch_error(core, ev.source, ev.correlation_id, v, errors.INVALID_REQUEST)
    err = validate_leader_only(core, p.current_leader_epoch)
    if err != errors.NONE:
        return respond_fetch_error(core, ev.source, ev.correlation_id, v, err)
    st = core.state
    assert isinstance(st, LeaderState)
    fetch = ParkedFetch(ev.source, ev.correlation_id, v, req, core.now + req.max_wait_ms)
    if not _try_complete(core, st, fetch, force=False):
        st.parked.append(fetch)


def respond_fetch_error(core: "KRaftCore", source: int, cid: int, version: int, perr: int) -> None:
    st = core.state
    core.respond_to(
        source,
        cid,
        version,
        responses.fetch_response(
            version,
            errors.NONE,
            perr,
            st.leader_id,
            st.epoch,
            st.high_watermark,
            core.log.start_offset(),
            ep=core.leader_endpoint(),
        ),
    )


def _try_complete(core: "KRaftCore", st: LeaderState, fetch: ParkedFetch, force: bool) -> bool:
    """Answer ``fetch`` if it is due (or ``force``); returns True when answered.

    A failure while reading the log or encoding its batches (a storage error) is answered with a
    partition-level UNKNOWN_SERVER_ERROR, as Kafka's ``tryCompleteFetchRequest`` does; the replica's
    progress is then left as it was."""
    req, v = fetch.request, fetch.api_version
    p = req.topics[0].partitions[0]
    log = core.log
    diverging = snapshot_id = None
    records = b""
    hw_moved = False
    try:
        latest = latest_snapshot(core.snapshots)
        if p.fetch_offset == 0 and latest is not None:
            snapshot_id = latest
        else:
            val = validate_offset_and_epoch(log, core.snapshots, p.fetch_offset, p.last_fetched_epoch)
            if val.kind == DIVERGING:
                diverging = (val.epoch, val.end_offset)
            elif val.kind == SNAPSHOT:
                snapshot_id = SnapshotId(val.end_offset, val.epoch)
            else:
                batches = log.read(p.fetch_offset, req.max_bytes) if p.fetch_offset < log.end_offset() else ()
                records = _batches.encode_batches(batches) if batches else b""
    except InvariantViolation:
        raise
    except Exception:  # noqa: BLE001 - any storage failure becomes an error answer, never a crash
        respond_fetch_error(core, fetch.source, fetch.correlation_id, v, errors.UNKNOWN_SERVER_ERROR)
        return True
    if diverging is None and snapshot_id is None:
        rid = replica_id_of(req, v)
        if rid >= 0:
            key = key_of(rid, p.replica_directory_id) if v >= 17 else ReplicaKey(rid, None)
            hw_moved = st.update_replica(key, p.fetch_offset, core.now, log.end_offset())
            st.record_voter_fetch(key, core.now, core.cfg.check_quorum_timeout_ms)
    follower_hw = getattr(p, "high_watermark", FETCH_HW_UNSUPPORTED) if v >= 18 else FETCH_HW_UNSUPPORTED
    due = (
        force
        or bool(records)
        or req.max_wait_ms == 0
        or diverging is not None
        or snapshot_id is not None
        or (st.high_watermark is not None and follower_hw < st.high_watermark)
    )
    if due:
        core.respond_to(
            fetch.source,
            fetch.correlation_id,
            v,
            responses.fetch_response(
                v,
                errors.NONE,
                errors.NONE,
                st.leader_id,
                st.epoch,
                st.high_watermark,
                log.start_offset(),
                records,
                diverging,
                snapshot_id,
                core.leader_endpoint(),
            ),
        )
    if hw_moved:
        from .leader_ops import on_high_watermark_advanced

        on_high_watermark_advanced(core, st)
    return due


def retry_parked(core: "KRaftCore", st: LeaderState, only_new_data: bool) -> None:
    """Re-evaluate parked fetches: after new data (those below LEO) or an HW change (all of them)."""
    if not st.parked:
        return
    leo = core.log.end_offset()
    waiting, st.parked = st.parked, []
    for f in waiting:
        offset = f.request.topics[0].partitions[0].fetch_offset
        if only_new_data and offset >= leo:
            st.parked.append(f)
        elif not _try_complete(core, st, f, force=not only_new_data):
            st.parked.append(f)


def expire_parked(core: "KRaftCore", st: LeaderState) -> None:
    if not st.parked:
        return
    now = core.now
    due = [f for f in st.parked if now >= f.deadline]
    if not due:
        return
    st.parked = [f for f in st.parked if now < f.deadline]
    for f in due:
        _try_complete(core, st, f, force=True)
