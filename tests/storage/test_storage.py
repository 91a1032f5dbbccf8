"""File storage on real files: restart round trips, torn and corrupt tails, the lock, a full disk."""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import sys
import uuid

import pytest

from kraftwire.node.core.api import (
    BOOTSTRAP_SNAPSHOT_ID,
    ElectionState,
    Endpoint,
    LogBatch,
    ReplicaKey,
    SnapshotId,
    VoterSpec,
)
from kraftwire.node.storage import (
    FileLog,
    FileOps,
    FileQuorumStateStore,
    FileSnapshotStore,
    StorageError,
    format_directory,
    open_directory,
    uuid_from_str,
    uuid_to_str,
)
from kraftwire.node.storage.layout import partition_dir


def data_batch(base: int, epoch: int, count: int = 3) -> LogBatch:
    return LogBatch(
        base, epoch, tuple(f"r{base + i}".encode() for i in range(count)), False, 1000 + base
    )


def fill(log: FileLog, epochs: list[int], count: int = 3) -> list[LogBatch]:
    written = []
    for epoch in epochs:
        batch = data_batch(log.end_offset(), epoch, count)
        log.append([batch])
        written.append(batch)
    return written


def contents(log: FileLog) -> list[tuple[int, int, tuple]]:
    return [(b.base_offset, b.epoch, b.records) for b in log.batches()]


@pytest.fixture
def part(tmp_path):
    path = tmp_path / "__cluster_metadata-0"
    path.mkdir()
    return str(path)


def test_restart_round_trip_with_segment_roll(part):
    log = FileLog.open(part, segment_bytes=200)
    fill(log, [1, 1, 2, 2, 2, 5, 5])
    log.flush(log.end_offset())
    before, epochs = contents(log), list(log.epochs())
    assert len(log.segment_paths()) > 2  # rolled
    log.close()
    again = FileLog.open(part, segment_bytes=200)
    assert contents(again) == before
    assert list(again.epochs()) == epochs == [(1, 0), (2, 6), (5, 15)]
    assert again.repairs == []
    with open(os.path.join(part, "leader-epoch-checkpoint")) as f:
        assert f.read() == "0\n3\n1 0\n2 6\n5 15\n"
    assert sorted(os.listdir(part))[0] == "00000000000000000000.log"


def test_truncate_is_durable_across_restart(part):
    log = FileLog.open(part, segment_bytes=300)
    fill(log, [1, 1, 2, 2, 3, 3, 3])
    log.flush(log.end_offset())
    log.truncate_to(9)
    fill(log, [4])
    log.flush(log.end_offset())
    expected = contents(log)
    log.close()
    again = FileLog.open(part, segment_bytes=300)
    assert contents(again) == expected
    assert [b.epoch for b in again.batches()] == [1, 1, 2, 4]


@pytest.mark.parametrize("cut", [1, 10, 60, 70, 100])
def test_torn_tail_is_cut_and_flushed_batches_kept(part, cut):
    log = FileLog.open(part)
    flushed = fill(log, [1, 1, 2])
    log.flush(log.end_offset())
    (torn,) = fill(log, [2])  # this one is torn below
    log.close()
    segment = os.path.join(part, "00000000000000000000.log")
    size = os.path.getsize(segment)
    last = len(torn.raw)
    with open(segment, "r+b") as f:
        f.truncate(size - last + cut if cut < last else size - 1)
    again = FileLog.open(part)
    assert contents(again) == [(b.base_offset, b.epoch, b.records) for b in flushed]
    assert again.repairs and "cut" in again.repairs[0]
    assert os.path.getsize(segment) == size - last
    fill(again, [3])  # appends continue on a clean boundary
    again.close()
    assert [b.epoch for b in FileLog.open(part).batches()] == [1, 1, 2, 3]


def test_flipped_byte_in_tail_batch_fails_crc_and_is_cut(part):
    log = FileLog.open(part)
    fill(log, [1, 2, 2, 3])
    log.close()
    segment = os.path.join(part, "00000000000000000000.log")
    with open(segment, "r+b") as f:
        data = bytearray(f.read())
        data[-5] ^= 0xFF  # inside the last batch's records, covered by the CRC
        f.seek(0)
        f.write(data)
    again = FileLog.open(part)
    assert [b.epoch for b in again.batches()] == [1, 2, 2]
    assert (
        "CRC" in again.losses[0] and "lost 1 batches, 3 records (offsets 9..11)" in again.losses[0]
    )
    assert again.repairs == []  # a whole batch lost is no torn tail


def test_corrupt_batch_in_an_older_segment_drops_later_segments(part):
    log = FileLog.open(part, segment_bytes=200)
    fill(log, [1] * 8)
    log.close()
    names = sorted(n for n in os.listdir(part) if n.endswith(".log"))
    assert len(names) >= 3
    contents = {name: open(os.path.join(part, name), "rb").read() for name in names}
    with open(os.path.join(part, names[1]), "r+b") as f:
        f.seek(30)
        f.write(b"\xff\xff")
    again = FileLog.open(part, segment_bytes=200)
    kept = sorted(n for n in os.listdir(part) if n.endswith(".log"))
    assert kept == names[:2]
    assert again.end_offset() == int(names[1][:20])
    # nothing deleted: the cut segment's bytes (its first batch failed) and every later segment
    # are kept beside the log
    contents[names[1]] = contents[names[1]][:30] + b"\xff\xff" + contents[names[1]][32:]
    assert os.path.getsize(os.path.join(part, names[1])) == 0
    for name in names[1:]:
        [side] = [n for n in os.listdir(part) if n.startswith(name + ".corrupt-")]
        assert open(os.path.join(part, side), "rb").read() == contents[name]
    assert len(again.losses) == len(names) - 1 and again.repairs == []


def test_snapshot_store_files_and_leftovers(part):
    store = FileSnapshotStore(part)
    store.write(SnapshotId(12, 3), b"abc")
    store.begin_partial(SnapshotId(20, 4))
    store.append_partial(SnapshotId(20, 4), b"xy")
    assert store.partial_size(SnapshotId(20, 4)) == 2
    names = os.listdir(part)
    assert "00000000000000000012-0000000003.checkpoint" in names
    assert any(n.endswith(".checkpoint.part") for n in names)
    reopened = FileSnapshotStore(part)  # a crash mid-download: the .part is removed
    assert reopened.ids() == [SnapshotId(12, 3)]
    assert not any(n.endswith(".part") for n in os.listdir(part))
    assert reopened.read(SnapshotId(12, 3), 1, 10) == b"bc"


def test_log_restarts_at_snapshot_after_download_and_after_delete_before(part):
    snaps = FileSnapshotStore(part)
    log = FileLog.open(part, segment_bytes=200)
    fill(log, [1, 1, 1, 2, 2, 2])
    snaps.write(SnapshotId(9, 1), b"s")
    log.delete_before(9)
    log.flush(log.end_offset())
    expected = contents(log)
    log.close()
    again = FileLog.open(part, snaps.ids(), segment_bytes=200)
    assert again.start_offset() == 9 and contents(again) == expected
    again.truncate_fully_and_start_at(SnapshotId(40, 7))
    again.close()
    third = FileLog.open(part, snaps.ids(), segment_bytes=200)
    assert (third.start_offset(), third.end_offset()) == (40, 40)
    assert sorted(n for n in os.listdir(part) if n.endswith(".log")) == ["00000000000000000040.log"]


def test_quorum_state_file_format(part):
    store = FileQuorumStateStore(part)
    assert store.read() is None
    directory = uuid.UUID(int=12345)
    state = ElectionState(5, None, ReplicaKey(2, directory), 1)
    store.write(state)
    with open(os.path.join(part, "quorum-state")) as f:
        text = f.read()
    assert json.loads(text) == {
        "leaderId": -1,
        "leaderEpoch": 5,
        "votedId": 2,
        "votedDirectoryId": uuid_to_str(directory),
        "data_version": 1,
    }
    assert "\n" not in text and not os.path.exists(os.path.join(part, "quorum-state.tmp"))
    assert store.read() == state
    store.write(ElectionState(7, 3, None, 0))
    assert json.loads(open(os.path.join(part, "quorum-state")).read())["data_version"] == 0
    assert store.read() == ElectionState(7, 3, None, 0)
    with open(os.path.join(part, "quorum-state"), "w") as f:
        f.write('{"data_version": 4}')
    with pytest.raises(StorageError, match="data_version 4"):
        store.read()


@pytest.mark.parametrize("field", ["leaderEpoch", "leaderId", "votedId"])
def test_quorum_state_outside_int32_is_reported(part, field):
    """Issue 26: a Vote at epoch 2^31-1 once drove nodes to write epochs like 2147483714; such a file
    is reported on start (one line naming the file and the field), not loaded."""
    store = FileQuorumStateStore(part)
    fields = {"leaderId": 1, "leaderEpoch": 7, "votedId": 1, "data_version": 1}
    fields[field] = 2147483714
    with open(os.path.join(part, "quorum-state"), "w") as f:
        f.write(json.dumps(fields))
    with pytest.raises(StorageError) as failure:
        store.read()
    message = str(failure.value)
    assert "\n" not in message and "quorum-state" in message
    assert f"{field} 2147483714 is outside int32 (-2147483648..2147483647)" in message
    fields[field] = 2147483647  # the largest int32 still loads
    with open(os.path.join(part, "quorum-state"), "w") as f:
        f.write(json.dumps(fields))
    assert store.read() is not None


def test_kafka_uuid_text_form():
    assert uuid_to_str(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_from_str("AAAAAAAAAAAAAAAAAAAAAQ") == uuid.UUID(int=1)
    with pytest.raises(ValueError, match="not a Kafka uuid"):
        uuid_from_str("short")


def test_format_open_bootstrap_and_refusals(tmp_path):
    log_dir = str(tmp_path / "meta")
    voters = [
        VoterSpec(ReplicaKey(1, uuid.UUID(int=7)), {"CONTROLLER": Endpoint("127.0.0.1", 9093)})
    ]
    meta = format_directory(log_dir, "MkU3OEVBNTcwNTJENDM2Qg", 1, 1, voters)
    assert BOOTSTRAP_SNAPSHOT_ID in FileSnapshotStore(partition_dir(log_dir)).ids()
    with pytest.raises(StorageError, match="already formatted"):
        format_directory(log_dir, "other", 1, 1, voters)
    storage = open_directory(log_dir)
    try:
        assert storage.meta == meta
        assert storage.bootstrap().kraft_version == 1
        assert storage.bootstrap().voters == tuple(voters)
        with pytest.raises(StorageError, match="in use by another process"):
            open_directory(log_dir)
        # the lock holds against another process too
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                f"from kraftwire.node.storage import open_directory; open_directory({log_dir!r})",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert probe.returncode != 0 and "in use by another process" in probe.stderr
    finally:
        storage.close()
    open_directory(log_dir).close()  # released


class FullDisk(FileOps):
    """Writes succeed until ``budget`` bytes have been written, then fail with ENOSPC."""

    def __init__(self, budget: int) -> None:
        self.budget = budget

    def write(self, f, data: bytes) -> None:
        if len(data) > self.budget:
            f.write(data[: self.budget])  # a partial write, as a filling disk produces
            self.budget = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self.budget -= len(data)
        super().write(f, data)


def test_full_disk_stops_the_log_cleanly_and_keeps_flushed_data(part):
    ops = FullDisk(budget=10_000)
    log = FileLog.open(part, ops=ops)
    flushed = []
    with pytest.raises(StorageError, match="No space left"):
        while True:
            flushed += fill(log, [1])
            log.flush(log.end_offset())
    with pytest.raises(StorageError, match="failed earlier"):
        fill(log, [1])
    log.close()
    again = FileLog.open(part)
    assert contents(again) == [(b.base_offset, b.epoch, b.records) for b in flushed]
    assert again.repairs == []  # the partial write was taken back


def test_quorum_state_write_on_full_disk_keeps_old_state(part):
    FileQuorumStateStore(part).write(ElectionState(3, 1, None, 1))
    store = FileQuorumStateStore(part, FullDisk(budget=5))
    with pytest.raises(StorageError, match="No space left"):
        store.write(ElectionState(4, None, ReplicaKey(2, None), 1))
    assert FileQuorumStateStore(part).read() == ElectionState(3, 1, None, 1)


def test_random_batches_survive_restart(part):
    rng = random.Random(7)
    log = FileLog.open(part, segment_bytes=500)
    epoch = 1
    for _ in range(60):
        if rng.random() < 0.2:
            epoch += 1
        batch = LogBatch(
            log.end_offset(),
            epoch,
            tuple(rng.randbytes(rng.randrange(0, 50)) for _ in range(rng.randrange(1, 5))),
        )
        log.append([batch])
        if rng.random() < 0.1 and log.end_offset() > 10:
            log.truncate_to(log.batches()[len(log.batches()) // 2].base_offset)
    log.flush(log.end_offset())
    expected = contents(log)
    epochs = list(log.epochs())
    log.close()
    again = FileLog.open(part, segment_bytes=500)
    assert contents(again) == expected and list(again.epochs()) == epochs
