"""Fixtures for the records-layer tests: the record-batch blobs of ../shared/kafka-vectors."""

from __future__ import annotations

import base64
import json

import pytest
from shared import shared_path

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
