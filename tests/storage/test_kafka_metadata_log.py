"""Telling a Kafka metadata log from a kraftwire one: Kafka's FeatureLevelRecord for metadata.version
in the bootstrap checkpoint, a snapshot or the log; ``storage format --feature`` writes it as Kafka's
StorageTool does."""

from __future__ import annotations

import subprocess
import sys

from kraftwire.node.core import batches as batch_codec
from kraftwire.node.core.api import BOOTSTRAP_SNAPSHOT_ID, LogBatch, SnapshotId
from kraftwire.node.storage import FileSnapshotStore, format_directory, open_directory
from kraftwire.node.storage.kafka_metadata import (
    KafkaMetadataLogDetector,
    feature_level_record,
    is_metadata_version_record,
)
from kraftwire.node.storage.layout import partition_dir

# The value of the record Kafka 4.4.0's StorageTool wrote at offset 1 of its bootstrap checkpoint
# (``format --release-version`` default, metadata.version 4.4-IV2 = level 33).
KAFKA_METADATA_VERSION_33 = (
    bytes.fromhex("010c0011") + b"metadata.version" + bytes.fromhex("002100")
)


def test_the_record_is_written_as_kafkas_storage_tool_writes_it() -> None:
    assert feature_level_record("metadata.version", 33) == KAFKA_METADATA_VERSION_33
    assert is_metadata_version_record(KAFKA_METADATA_VERSION_33)
    assert not is_metadata_version_record(feature_level_record("group.version", 1))
    assert not is_metadata_version_record(b"metadata.version")
    assert not is_metadata_version_record(b"")


def _format(tmp_path, data_records=()) -> str:
    log_dir = str(tmp_path / "node")
    format_directory(log_dir, "cluster-id-of-22-chars", 1, 0, data_records=data_records)
    return log_dir


def test_a_bootstrap_checkpoint_with_metadata_version_makes_a_kafka_metadata_log(tmp_path) -> None:
    storage = open_directory(_format(tmp_path, [KAFKA_METADATA_VERSION_33]))
    try:
        assert KafkaMetadataLogDetector().check(storage.snapshots, storage.log)
        data = storage.snapshots.read(BOOTSTRAP_SNAPSHOT_ID, 0, 1 << 20)
        layout = [
            (b.base_offset, b.is_control, len(b.records)) for b in batch_codec.decode_batches(data)
        ]
        assert layout == [(0, True, 1), (1, False, 1), (2, True, 1)]  # header, features, footer
        assert storage.bootstrap().kraft_version == 0  # the node still reads its bootstrap
    finally:
        storage.close()


def test_a_kraftwire_log_is_not_one_until_the_record_is_appended(tmp_path) -> None:
    storage = open_directory(_format(tmp_path))
    detector = KafkaMetadataLogDetector()
    try:
        assert not detector.check(storage.snapshots, storage.log)
        storage.log.append([LogBatch(0, 1, (b"a", b"b"), False, 1)])
        assert not detector.check(storage.snapshots, storage.log)
        storage.log.append([LogBatch(2, 1, (b"c", KAFKA_METADATA_VERSION_33), False, 2)])
        assert detector.check(storage.snapshots, storage.log)
        storage.log.truncate_to(2)
        assert detector.check(storage.snapshots, storage.log)  # once seen, the answer stays
    finally:
        storage.close()


def test_a_truncated_and_rewritten_tail_is_read_again(tmp_path) -> None:
    storage = open_directory(_format(tmp_path))
    detector = KafkaMetadataLogDetector()
    try:
        storage.log.append(
            [LogBatch(0, 1, (b"a",), False, 1), LogBatch(1, 1, (b"b", b"c"), False, 1)]
        )
        assert not detector.check(storage.snapshots, storage.log)  # read up to offset 3
        storage.log.truncate_to(1)
        storage.log.append([LogBatch(1, 2, (KAFKA_METADATA_VERSION_33, b"x", b"y"), False, 2)])
        assert detector.check(storage.snapshots, storage.log)
    finally:
        storage.close()


def test_a_snapshot_holding_the_record_makes_a_kafka_metadata_log(tmp_path) -> None:
    directory = tmp_path / "part"
    directory.mkdir()
    store = FileSnapshotStore(str(directory))
    store.write(
        SnapshotId(10, 3),
        batch_codec.encode_batches([LogBatch(0, 3, (KAFKA_METADATA_VERSION_33,), False, 1)]),
    )

    class EmptyLog:
        def start_offset(self) -> int:
            return 10

        def end_offset(self) -> int:
            return 10

        def read(self, start: int, max_bytes: int) -> list:
            return []

    assert KafkaMetadataLogDetector().check(store, EmptyLog())


def test_storage_format_feature_writes_the_record(tmp_path) -> None:
    config = tmp_path / "node.properties"
    config.write_text(
        "node.id=1\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:9999\n"
        "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers=127.0.0.1:9999\n"
        f"metadata.log.dir={tmp_path / 'log'}\n"
    )
    command = [sys.executable, "-m", "kraftwire", "storage", "format", "-c", str(config)]
    command += ["-t", "MkU3OEVBNTcwNTJENDM2Qg", "--standalone", "-f", "metadata.version=33"]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    store = FileSnapshotStore(partition_dir(str(tmp_path / "log")))
    found = batch_codec.decode_batches(store.read(BOOTSTRAP_SNAPSHOT_ID, 0, 1 << 20))
    assert [r for b in found if not b.is_control for r in b.records] == [KAFKA_METADATA_VERSION_33]
    bad = subprocess.run(command[:-1] + ["metadata.version"], capture_output=True, timeout=60)
    assert bad.returncode == 2 and b"is not NAME=LEVEL" in bad.stderr
