"""Fixtures for the records-layer tests: the record-batch blobs of ../shared/kafka-vectors, and a
package generated from upstream metadata-log and coordinator specs."""

from __future__ import annotations

import base64
import importlib
import json
import subprocess
import sys

from pathlib import Path

import pytest
from shared import shared_path
from varints import uvarint

# The records tests share their inputs (view_inputs.py) as a plain module.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Every JSON key of a `records`-typed field in the specs whose vectors carry record bytes.
RECORDS_KEYS = {
    "records",
    "unalignedRecords",
    "recordSet",
    "myRecords",
    "myNullableRecords",
    "myCompactRecords",
    "myCompactNullableRecords",
}
RECORDS_SPECS = (
    "FetchResponse",
    "ProduceRequest",
    "FetchSnapshotResponse",
    "ShareFetchResponse",
    "SimpleRecordsMessage",
    "AllTypeMessage",
)


def _walk(node, found: dict) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in RECORDS_KEYS and isinstance(value, str):
                found.setdefault(value, None)
            else:
                _walk(value, found)
    elif isinstance(node, list):
        for item in node:
            _walk(item, found)


@pytest.fixture(scope="session")
def vector_blobs() -> list[bytes]:
    """The distinct non-empty `records` values of the vectors (each one or more v2 batches)."""
    directory = shared_path("kafka-vectors")
    found: dict = {}
    for spec in RECORDS_SPECS:
        path = directory / f"{spec}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            _walk(json.loads(line)["json"], found)
    blobs = [base64.b64decode(text) for text in found]
    blobs = [blob for blob in blobs if blob]
    if not blobs:
        pytest.skip("no records values found in ../shared/kafka-vectors")
    return sorted(blobs)


SPECS = {
    "metadata/src/main/resources/common/metadata": [
        "TopicRecord",
        "PartitionRecord",
        "RegisterBrokerRecord",
        "FeatureLevelRecord",
        "NoOpRecord",
    ],
    "storage/src/main/resources/message": ["RemoteLogSegmentMetadataRecord"],
    "group-coordinator/src/main/resources/common/message": [
        "OffsetCommitKey",
        "OffsetCommitValue",
        "ConsumerGroupMetadataKey",
        "ConsumerGroupMetadataValue",
    ],
    "share-coordinator/src/main/resources/common/message": [
        "ShareSnapshotKey",
        "ShareSnapshotValue",
    ],
    "transaction-coordinator/src/main/resources/common/message": [
        "TransactionLogKey",
        "TransactionLogValue",
    ],
}
PACKAGE = "kraftwire_records_test_pkg"


@pytest.fixture(scope="session")
def pkg(tmp_path_factory):
    """A generated package with metadata (two families) and coordinator (three families) specs."""
    schemas = shared_path("kafka-schemas")
    tree = tmp_path_factory.mktemp("specs")
    for folder, stems in SPECS.items():
        family = tree / folder.split("/")[0]
        family.mkdir(exist_ok=True)
        for stem in stems:
            (family / f"{stem}.json").symlink_to(schemas / folder / f"{stem}.json")
    out = tmp_path_factory.mktemp("gen")
    command = [sys.executable, "-m", "kraftwire", "codegen", "--package", PACKAGE]
    command += ["--schemas", *sorted(str(p) for p in tree.iterdir()), "--out", str(out / PACKAGE)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(out))


METADATA_STEMS = ("TopicRecord", "PartitionRecord", "FeatureLevelRecord", "NoOpRecord")


@pytest.fixture(scope="session")
def metadata_frames(pkg) -> list[bytes]:
    """Metadata-log values of Kafka's vectors (bodies written by its Java classes), framed as the
    metadata log frames them: frame version 1, record type, version."""
    frames = []
    for stem in METADATA_STEMS:
        record_type = pkg.lookup(stem).API_KEY
        for line in shared_path("kafka-vectors", f"{stem}.jsonl").read_text().splitlines():
            vector = json.loads(line)
            head = uvarint(1) + uvarint(record_type) + uvarint(vector["version"])
            frames.append(head + bytes.fromhex(vector["hex"]))
    return frames
