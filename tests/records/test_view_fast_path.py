"""batches_to_json's fast path (``_v2_view``) against the object path it replaces for v2 batches.

The object path is the reference: decode_batches, then batch_to_json for each batch. For any buffer
both give equal views, down to the JSON text (so the key order too), or raise the same exception with
the same text. Valid buffers must take the fast path (else these tests would compare the object path
with itself); corrupt ones fall back to the object path, which says what is wrong.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import types
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from view_inputs import (
    CONTROL_PAIRS,
    KNOWN,
    KNOWN_CORRUPTIONS,
    BAD_OPTIONS,
    LIMIT,
    SETTINGS,
    buffers,
    edited,
    metadata_buffers,
    metadata_options,
    metadata_values,
    reseal,
    result,
    view_options,
)

import kraftwire.generated as bundled
from kraftwire.generated._logrecords import MetadataValueView, metadata_value_view
from kraftwire.generated._v2_view import read_batch_views
from kraftwire.records import (
    CODEC_NAMES,
    DecodeError,
    Record,
    RecordBatch,
    batch_to_json,
    batches_to_json,
    decode_batches,
    decode_metadata_record,
    encode_batch,
)


def object_path(data, *, max_decompressed_bytes: int = LIMIT, package=bundled, **options) -> dict:
    """What batches_to_json returned before the fast path: the Record/RecordBatch objects' view."""
    decoded, tail = decode_batches(data, max_decompressed_bytes=max_decompressed_bytes)
    return {
        "batches": [batch_to_json(batch, package=package, **options) for batch in decoded],
        "partialTail": base64.b64encode(tail).decode("ascii"),
    }


def outcome(view, data: bytes, **options) -> tuple[str, object]:
    """("ok", JSON text) or ("raised", (type, text)): what one path made of ``data``."""
    try:
        result = view(data, max_decompressed_bytes=LIMIT, package=bundled, **options)
    except Exception as exc:
        return "raised", (type(exc), str(exc))
    return "ok", json.dumps(result)


def legacy_entry(offset: int, key: bytes | None, value: bytes | None) -> bytes:
    """A magic 1 message set entry, uncompressed (the fast path leaves these to the object path)."""
    body = bytearray([1, 0]) + struct.pack(">q", 1_600_000_000_000)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


# -- valid buffers ------------------------------------------------------------------------------------


@SETTINGS
@given(data=buffers(), options=view_options)
def test_fast_view_equals_the_object_path(data, options):
    raw_data = options["values"] is not None
    assert read_batch_views(data, LIMIT, options["decode_control"], raw_data) is not None
    fast = batches_to_json(data, max_decompressed_bytes=LIMIT, package=bundled, **options)
    reference = object_path(data, **options)
    assert fast == reference
    assert json.dumps(fast) == json.dumps(reference)


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_control_transactional_and_header_batches_take_the_fast_path(codec):
    data = encode_batch(
        [(b"k", None, [("trace", b"1"), ("empty", None)], 5), (None, b"v" * 300, [], 6)],
        compression=codec,
        transactional=True,
        producer_id=9,
        producer_epoch=2,
        timestamp_type="LogAppendTime",
        log_append_time=77,
    )
    control = encode_batch(
        [(*CONTROL_PAIRS[0], [], 8), (*CONTROL_PAIRS[2], [], 8)],
        base_offset=2,
        compression=codec,
        control=True,
    )
    assert read_batch_views(data + control, LIMIT, True, False) is not None
    view = batches_to_json(data + control + control[:30])
    assert view == object_path(data + control + control[:30])
    assert [record["control"]["type"] for record in view["batches"][1]["records"]] == [0, 4]
    assert view["partialTail"] == batches_to_json(control[:30])["partialTail"] != ""


def test_long_varints_and_the_delete_horizon():
    rows = [
        Record(2**40 + 2**31 - 1, -(2**62), b"k" * 20_000, None, [("h" * 300, b"x" * 9000)], 200),
        Record(2**40, 2**62, None, b"", [("", None)] * 200, 0),
    ]
    batch = RecordBatch(base_offset=2**40, attributes=0x40 | 0x08, base_timestamp=0, records=rows)
    data = batch.encode()
    assert read_batch_views(data, LIMIT, True, False) is not None
    view = batches_to_json(data)
    assert view == object_path(data)
    assert view["batches"][0]["deleteHorizonMs"] == 0
    assert list(view["batches"][0])[-2:] == ["deleteHorizonMs", "records"]


def test_no_buffer_an_empty_one_and_other_bytes_like_inputs():
    data = encode_batch([(b"k", b"v", [], 1)])
    assert batches_to_json(None) == batches_to_json(b"") == {"batches": [], "partialTail": ""}
    assert (
        batches_to_json(bytearray(data)) == batches_to_json(memoryview(data)) == object_path(data)
    )


# -- everything else: the object path decides, with its own errors -----------------------------------


@SETTINGS
@given(data=buffers(), options=view_options, edit=st.data())
def test_corrupt_buffers_give_what_the_object_path_gives(data, options, edit):
    """Any of view_inputs.edited's edits: same view or same error from both."""
    changed = edit.draw(edited(data))
    assert outcome(batches_to_json, changed, **options) == outcome(object_path, changed, **options)


@pytest.mark.parametrize("edit", KNOWN_CORRUPTIONS)
def test_known_corruptions_raise_the_object_paths_errors(edit):
    data = edit(encode_batch(KNOWN))
    with pytest.raises(Exception) as reference:
        object_path(data)
    with pytest.raises(reference.type, match=f"^{re.escape(str(reference.value))}$"):
        batches_to_json(data)


def test_negative_count_in_an_empty_batch():
    data = bytearray(RecordBatch(records=[]).encode())
    data[57:61] = struct.pack(">i", -1)
    with pytest.raises(Exception) as reference:
        object_path(reseal(data))
    with pytest.raises(reference.type, match=f"^{re.escape(str(reference.value))}$"):
        batches_to_json(reseal(data))


def test_legacy_message_sets_and_mixed_buffers_use_the_object_path():
    legacy = legacy_entry(0, b"k", b"v") + legacy_entry(1, None, b"w")
    v2 = encode_batch([(b"k", b"v", [], 1)], base_offset=2)
    for data in (legacy, v2 + legacy, legacy + v2):
        assert read_batch_views(data, LIMIT, True, False) is None
        assert batches_to_json(data) == object_path(data)


def test_decompression_limit_as_the_object_path():
    data = encode_batch([(None, b"x" * 5000, [], 1)], compression="gzip")
    assert outcome(batches_to_json, data) == outcome(object_path, data)
    small = {"max_decompressed_bytes": 100}
    with pytest.raises(Exception) as reference:
        object_path(data, **small)
    with pytest.raises(reference.type) as fast:
        batches_to_json(data, **small)
    assert str(fast.value) == str(reference.value)


@pytest.mark.parametrize("data, options, error", BAD_OPTIONS)
def test_bad_options_and_data_are_named(data, options, error):
    with pytest.raises(Exception) as raised:
        batches_to_json(data, **options)
    assert f"{type(raised.value).__name__}: {raised.value}" == error


def test_vector_records_fields(vector_blobs):
    """Every records field of Kafka's vectors (written by its Java classes)."""
    for blob in vector_blobs:
        assert outcome(batches_to_json, blob) == outcome(object_path, blob)


# -- metadata-log values: MetadataValueView against decode_metadata_record ----------------------------


@SETTINGS
@given(options=metadata_options, draw=st.data())
def test_metadata_value_view_equals_decode_metadata_record(pkg, metadata_frames, options, draw):
    """One view for many values (so its class cache is reused), bytes-like values included."""
    values = draw.draw(st.lists(metadata_values(metadata_frames), min_size=1, max_size=8))
    view = MetadataValueView(package=pkg, family=options["family"])
    for value in values:
        kinds = [value] if value is None else [value, bytearray(value), memoryview(value)]
        for given_value in kinds:
            expected = result(
                lambda: decode_metadata_record(
                    given_value, package=pkg, family=options["family"]
                ).to_json(options["message_view"])
            )
            assert result(lambda: view(given_value, options["message_view"])) == expected


@SETTINGS
@given(options=metadata_options, draw=st.data())
def test_fast_view_of_metadata_batches_equals_the_object_path(pkg, metadata_frames, options, draw):
    """Batches of metadata-log values (and control batches between them): the same view, with the
    same decodeError members, as batch_to_json on the decoded batches."""
    data = draw.draw(metadata_buffers(metadata_frames))
    options = {"values": "metadata", "package": pkg, **options}
    assert read_batch_views(data, LIMIT, True, True) is not None
    fast = result(lambda: batches_to_json(data, **options))
    assert fast == result(lambda: object_path(data, **options))


def test_metadata_classes_are_looked_up_once_per_record_type(pkg, metadata_frames):
    asked = []

    def metadata_record_class(record_type, family=None):
        asked.append(record_type)
        return pkg.metadata_record_class(record_type, family)

    package = types.SimpleNamespace(metadata_record_class=metadata_record_class)
    view = metadata_value_view(package, "metadata")
    viewed = [view(frame) for frame in metadata_frames * 3]
    assert viewed == [
        decode_metadata_record(frame, package=pkg, family="metadata").to_json()
        for frame in metadata_frames * 3
    ]
    assert sorted(asked) == sorted({frame[1] for frame in metadata_frames})
    # One view per package and family; another family has its own.
    types_seen = len(asked)
    assert metadata_value_view(package, "metadata") is view
    assert metadata_value_view(package, None) is not view
    metadata_value_view(package, None)(metadata_frames[0])
    assert asked[types_seen:] and set(asked[types_seen:]) == {metadata_frames[0][1]}


def test_metadata_value_view_refuses_a_value_that_is_not_a_buffer():
    """A value that is not bytes goes through ``decode_metadata_record``; one that is no buffer at
    all is a DecodeError naming its type (``bytes()`` of it raised TypeError for a string, and made
    a run of zero bytes of an int)."""
    view = metadata_value_view(bundled, "metadata")
    for value in ("text", 5):
        with pytest.raises(DecodeError, match=f"must be bytes, not {type(value).__name__}"):
            view(value)


def test_decode_metadata_record_refuses_a_value_that_is_not_a_buffer():
    """The check sits where every reader of a metadata record passes (the view's slow path too)."""
    for value in ("text", 5):
        with pytest.raises(DecodeError, match=f"must be bytes, not {type(value).__name__}"):
            decode_metadata_record(value, package=bundled)
