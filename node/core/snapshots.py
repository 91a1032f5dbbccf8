"""Snapshots (KIP-630): creating one, serving it over FetchSnapshot (59), downloading it as a follower,
and reading one back (docs/kraft.md §4.7, §8).

A snapshot's bytes are record batches with base offsets from 0 and the snapshot epoch: a control
batch with ``SnapshotHeaderRecord`` (+ ``KRaftVersionRecord`` and ``VotersRecord`` when kraft.version
≥ 1), the data batches, and a control batch with ``SnapshotFooterRecord``. Creating one moves the log
start to it at once (retention is "keep only the latest"), so lagging followers exercise FetchSnapshot.
The bootstrap checkpoint (0, 0) is never served.
"""

from __future__ import annotations

from kraftwire.generated import errors
from kraftwire.generated import fetch_snapshot_request as _fsq
from kraftwire.generated import fetch_snapshot_response as _fsr
from kraftwire.generated import k_raft_version_record as _kv
from kraftwire.generated import snapshot_footer_record as _footer
from kraftwire.generated import snapshot_header_record as _header

from . import batches as _batches, responses
from .api import (
    BOOTSTRAP_SNAPSHOT_ID,
    CreateSnapshot,
    Endpoint,
    LogBatch,
    PeerRefused,
    RequestReceived,
    ResponseReceived,
    SnapshotId,
    SnapshotWrite,
    WireMessage,
)
from .common import cluster_id_ok, common_outcome, validate_leader_only
from .leader import LeaderState
from .log_ops import read_snapshot
from .messages import as_message, fetch_snapshot_request, key_of, metadata_partition, single_partition
from .replica import Replica
from .states import FollowerState


# -- creating ----------------------------------------------------------------------------


def create_snapshot(replica: Replica, ev: CreateSnapshot) -> SnapshotId | None:
    end, log = ev.end_offset, replica.log
    if end <= log.start_offset():
        return None
    hw = replica.state.high_watermark
    if hw is None or end > hw:
        raise ValueError(f"snapshot end offset {end} is above the high watermark {hw}")
    last = log.batch_at(end - 1)
    if last is None or last.next_offset != end:
        raise ValueError(f"snapshot end offset {end} is not at a batch boundary")
    sid = SnapshotId(end, last.epoch)
    if sid in replica.snapshots.ids():
        return sid
    header: list[WireMessage] = [_header.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=ev.last_contained_timestamp)]
    kv = replica.control.kraft_version_at(end - 1)
    if kv >= 1:
        header.append(_kv.KRaftVersionRecord(version=0, k_raft_version=kv))
        header.append(replica.control.voters_at(end - 1).to_record())
    batches = [LogBatch(0, sid.epoch, tuple(header), True, replica.now)]
    for chunk in _chunks(ev.records, replica.cfg.max_batch_size_bytes):
        batches.append(LogBatch(batches[-1].next_offset, sid.epoch, chunk, False, replica.now))
    batches.append(
        LogBatch(batches[-1].next_offset, sid.epoch, (_footer.SnapshotFooterRecord(version=0),), True, replica.now)
    )
    replica.snapshots.write(sid, _batches.encode_batches(batches))
    replica.out.snapshot(SnapshotWrite(sid, "created"))
    _move_log_start(replica, sid)
    return sid


def _chunks(records: tuple[bytes, ...], max_bytes: int) -> list[tuple[bytes, ...]]:
    """The data records in batches of at most ``max_bytes`` of values (one record at least): a
    reader need not hold a whole snapshot as one batch."""
    out: list[tuple[bytes, ...]] = []
    start = size = 0
    for i, record in enumerate(records):
        if i > start and size + len(record) > max_bytes:
            out.append(records[start:i])
            start, size = i, 0
        size += len(record)
    if start < len(records):
        out.append(records[start:])
    return out


def _move_log_start(replica: Replica, sid: SnapshotId) -> None:
    """Keep only the newest snapshot and start the log there (SnapshotAtLogStart holds)."""
    if sid.end_offset > replica.log.start_offset():
        replica.log.delete_before(sid.end_offset)
    for old in list(replica.snapshots.ids()):
        if old < sid and old != BOOTSTRAP_SNAPSHOT_ID:
            replica.snapshots.delete(old)
            replica.out.snapshot(SnapshotWrite(old, "deleted"))
    replica.control.trim_prefix(sid.end_offset - 1)


# -- serving (leader) -----------------------------------------------------------------------------------


def handle_fetch_snapshot_request(replica: Replica, ev: RequestReceived) -> None:
    req, v = as_message(ev.request, _fsq.FetchSnapshotRequest), ev.api_version
    build = responses.fetch_snapshot_response
    if not cluster_id_ok(replica, getattr(req, "cluster_id", None)):
        return replica.respond(ev, build(v, errors.INCONSISTENT_CLUSTER_ID))
    found = single_partition(req.topics)
    if found is None:
        return replica.respond(ev, build(v, errors.INVALID_REQUEST))
    p = found[1]
    sid = SnapshotId(p.snapshot_id.end_offset, p.snapshot_id.epoch)

    def answer(perr: int, size: int = 0, position: int = 0, data: bytes = b"") -> None:
        st, chunk_of = replica.state, sid if perr == errors.NONE else None
        replica.respond(
            ev, build(v, errors.NONE, perr, st.leader_id, st.epoch, chunk_of, size, position, data, replica.leader_endpoint())
        )

    if metadata_partition(req.topics, "name", "partition") is None:
        topic = found[0]
        return replica.respond(
            ev, responses.fetch_snapshot_unknown_partition(v, topic.name, p.partition, replica.leader_endpoint())
        )
    err = validate_leader_only(replica, p.current_leader_epoch)
    if err != errors.NONE:
        return answer(err)
    if sid == BOOTSTRAP_SNAPSHOT_ID or sid not in replica.snapshots.ids():
        return answer(errors.SNAPSHOT_NOT_FOUND)
    size = replica.snapshots.size(sid)
    if p.position < 0 or p.position >= size:
        return answer(errors.POSITION_OUT_OF_RANGE)
    st = replica.state
    if isinstance(st, LeaderState) and req.replica_id >= 0:
        key = key_of(req.replica_id, p.replica_directory_id)
        st.record_voter_fetch(key, replica.now)
    chunk = replica.snapshots.read(sid, p.position, min(req.max_bytes, size - p.position))
    answer(errors.NONE, size, p.position, chunk)


# -- downloading (follower) -----------------------------------------------------------------------------


def send_fetch_snapshot(replica: Replica, st: FollowerState, dest: int, endpoint: Endpoint | None) -> None:
    """The next chunk of the download, from ``dest``: the leader, or a bootstrap server while the leader
    is unreachable."""
    sid = st.snapshot_download
    assert sid is not None  # the caller checked a download is in progress
    position = replica.snapshots.partial_size(sid) or 0
    req = fetch_snapshot_request(
        replica.cfg.cluster_id, replica.local_key, st.epoch, sid, position, replica.cfg.fetch_snapshot_max_bytes
    )
    replica.send_request(dest, req, endpoint=endpoint)


def handle_fetch_snapshot_response(replica: Replica, ev: ResponseReceived) -> bool:
    info = common_outcome(replica, ev.response)
    if isinstance(info, bool):
        return info
    st = replica.state
    if not isinstance(st, FollowerState) or st.snapshot_download is None:
        return True
    p = as_message(ev.response, _fsr.FetchSnapshotResponse).topics[0].partitions[0]
    sid = SnapshotId(p.snapshot_id.end_offset, p.snapshot_id.epoch)
    if info.error == errors.SNAPSHOT_NOT_FOUND or sid.end_offset < 0 or sid.epoch < 0:
        replica.snapshots.abort_partial(st.snapshot_download)
        st.snapshot_download = None
        st.fetch_deadline = replica.now + replica.cfg.fetch_timeout_ms
        return True
    if info.error != errors.NONE:
        return False
    written = replica.snapshots.partial_size(sid)
    if sid != st.snapshot_download or written != p.position:  # Kafka throws (the process exits)
        raise PeerRefused(
            f"snapshot chunk {sid}@{p.position} does not continue {st.snapshot_download}@{written}"
        )
    written = replica.snapshots.append_partial(sid, p.unaligned_records or b"")
    st.has_fetched = True
    st.fetch_deadline = replica.now + replica.cfg.fetch_timeout_ms
    if written >= p.size:
        _finish_download(replica, st, sid)
    return True


def _finish_download(replica: Replica, st: FollowerState, sid: SnapshotId) -> None:
    """Freeze the download and start the log at it. A snapshot that does not decode is deleted before the
    log is touched and refused; the next Fetch starts the download again."""
    replica.snapshots.freeze_partial(sid)
    st.snapshot_download = None
    try:
        contents = read_snapshot(replica.snapshots, sid)
    except Exception as exc:  # noqa: BLE001 - whatever the peer sent, it must not end the process
        replica.snapshots.delete(sid)
        reason = f"snapshot {sid} does not decode: {type(exc).__name__}: {exc}"
        raise PeerRefused(reason[:300]) from exc
    replica.out.snapshot(SnapshotWrite(sid, "frozen"))
    replica.log.truncate_fully_and_start_at(sid)
    replica.out.truncated(sid.end_offset)
    replica.control.reset_from_snapshot(sid.end_offset, contents.control_records)
    for old in list(replica.snapshots.ids()):
        if old < sid and old != BOOTSTRAP_SNAPSHOT_ID:
            replica.snapshots.delete(old)
            replica.out.snapshot(SnapshotWrite(old, "deleted"))
    if st.high_watermark is None or st.high_watermark < sid.end_offset:
        st.high_watermark = sid.end_offset
