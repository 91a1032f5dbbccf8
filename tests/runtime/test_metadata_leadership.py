"""kraftwire.metadata.leadership: a kraftwire leader of a Kafka cluster's metadata log (one that holds
the metadata.version FeatureLevelRecord) resigns its epoch, so that a Kafka controller becomes the
active controller again; ``keep`` leaves it leading. The records here are encoded with codecs
generated from Kafka's own metadata record specs, not written by hand.

The whole path against real Kafka controllers is in tests/interop/test_kafka_cluster.py."""

from __future__ import annotations

import pytest

from kraftwire.node.core.api import CommittedBatch, LeaderAndEpoch, LeaderChanged, SnapshotLoaded
from kraftwire.node.core.values import SnapshotId
from kraftwire.node.runtime.config import ConfigError, config_from_properties
from kraftwire.node.runtime.metadata_leadership import (
    MetadataLeadership,
    is_metadata_version_record,
)
from kraftwire.records import encode_metadata_record
from shared import shared_path

BASE = {
    "node.id": "3",
    "process.roles": "controller",
    "listeners": "CONTROLLER://127.0.0.1:19093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.bootstrap.servers": "127.0.0.1:19093",
    "metadata.log.dir": "/tmp/x",
}


@pytest.fixture(scope="module")
def metadata():
    from kraftwire.codegen.package_cache import generated_codecs

    package, _ = generated_codecs([shared_path("kafka-schemas", "metadata")])
    return package


def feature(metadata, name: str, level: int, version: int = 0) -> bytes:
    record = metadata.lookup("FeatureLevelRecord")(name=name, feature_level=level)
    return encode_metadata_record(record, version)


def test_only_the_metadata_version_feature_marks_a_kafka_metadata_log(metadata):
    assert is_metadata_version_record(feature(metadata, "metadata.version", 27))
    assert not is_metadata_version_record(feature(metadata, "kraft.version", 1))
    assert not is_metadata_version_record(feature(metadata, "metadata.versions", 27))
    no_op = encode_metadata_record(metadata.lookup("NoOpRecord")(), 0)
    assert not is_metadata_version_record(no_op)
    assert not is_metadata_version_record(b"metadata.version") and not is_metadata_version_record(
        b""
    )


def commit(offset: int, *records: bytes) -> CommittedBatch:
    return CommittedBatch(offset, offset + len(records) - 1, 1, records)


def test_a_leader_of_a_kafka_metadata_log_resigns_each_epoch_once(metadata):
    watch = MetadataLeadership(3)
    assert watch.observe(commit(0, b"plain record")) is None
    assert watch.observe(LeaderChanged(LeaderAndEpoch(3, 4))) is None  # not a Kafka log (yet)
    assert watch.observe(LeaderChanged(LeaderAndEpoch(1, 5))) is None
    assert watch.observe(commit(1, feature(metadata, "metadata.version", 27))) is None
    assert watch.observe(LeaderChanged(LeaderAndEpoch(3, 6))) == 6
    assert watch.observe(commit(2, b"x")) is None  # asked once per epoch
    assert watch.observe(LeaderChanged(LeaderAndEpoch(3, 8))) == 8


def test_a_snapshot_marks_the_log_and_keep_never_resigns(metadata):
    snapshot = SnapshotLoaded(SnapshotId(10, 2), (feature(metadata, "metadata.version", 27),))
    resigning = MetadataLeadership(3)
    resigning.observe(snapshot)
    assert resigning.observe(LeaderChanged(LeaderAndEpoch(3, 4))) == 4
    keeping = MetadataLeadership(3, "keep")
    keeping.observe(snapshot)
    assert keeping.observe(LeaderChanged(LeaderAndEpoch(3, 4))) is None


def test_the_setting_takes_resign_or_keep_only():
    assert config_from_properties(BASE).metadata_leadership == "resign"
    keep = config_from_properties({**BASE, "kraftwire.metadata.leadership": "keep"})
    assert keep.metadata_leadership == "keep"
    with pytest.raises(ConfigError, match="kraftwire.metadata.leadership.*resign, keep"):
        config_from_properties({**BASE, "kraftwire.metadata.leadership": "lead"})
