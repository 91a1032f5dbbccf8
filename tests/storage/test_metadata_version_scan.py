"""holds_metadata_version_record: the one pass over a batch's values that the node makes for every
committed batch judges each value as is_metadata_version_record does, whatever the values are."""

from __future__ import annotations

from kraftwire.node.storage.kafka_metadata import (
    feature_level_record,
    holds_metadata_version_record,
    is_metadata_version_record,
)

METADATA_VERSION = feature_level_record("metadata.version", 33)
OTHER = feature_level_record("group.version", 1)


def test_it_finds_the_record_among_others_and_only_it() -> None:
    assert holds_metadata_version_record((b"a", OTHER, METADATA_VERSION))
    assert holds_metadata_version_record([bytearray(METADATA_VERSION)])
    assert holds_metadata_version_record(v for v in (b"", METADATA_VERSION))  # any iterable
    assert not holds_metadata_version_record((b"a", OTHER, b"metadata.version", b""))
    assert not holds_metadata_version_record(())


def test_values_that_are_not_bytes_are_judged_one_by_one() -> None:
    for values in (("text", METADATA_VERSION), (None, 7, METADATA_VERSION), ("text", b"a")):
        expected = any(map(is_metadata_version_record, values))
        assert holds_metadata_version_record(values) is expected


def test_the_head_found_across_or_inside_values_is_not_the_record() -> None:
    """The joined values are searched first: the head split over two values, or inside one, is found
    there but no value starts with it."""
    head, tail = METADATA_VERSION[:5], METADATA_VERSION[5:]
    assert not holds_metadata_version_record((b"x" + head, tail))
    assert not holds_metadata_version_record((b"x" + METADATA_VERSION,))
    assert holds_metadata_version_record((b"x" + head, tail, METADATA_VERSION))
    assert not holds_metadata_version_record([memoryview(METADATA_VERSION)])  # not bytes: as before
