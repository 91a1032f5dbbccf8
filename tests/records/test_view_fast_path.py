"""batches_to_json's fast path (``_v2_view``) against the object path it replaces for v2 batches.

The object path is the reference: decode_batches, then batch_to_json for each batch. For any buffer
both give equal views, down to the JSON text (so the key order too), or raise the same exception with
the same text. Valid buffers must take the fast path (else these tests would compare the object path
with itself); corrupt ones fall back to the object path, which says what is wrong.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import types
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared import shared_path
from varints import uvarint

import kraftwire.generated as bundled
from kraftwire.records import (
    CODEC_NAMES,
    Record,
    RecordBatch,
    batch_to_json,
    batches_to_json,
    control_record,
    crc32c,
    decode_batches,
    decode_metadata_record,
    encode_batch,
)
from kraftwire.generated._logrecords import MetadataValueView, metadata_value_view
from kraftwire.generated._v2_view import read_batch_views

LIMIT = 1 << 20
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT16, INT32, INT64 = (st.integers(-(2**b), 2**b - 1) for b in (15, 31, 63))
blobs = st.one_of(st.none(), st.binary(max_size=200))
# Header keys are text; a key that was not UTF-8 on the wire reads back with surrogateescape.
header_keys = st.binary(max_size=12).map(lambda raw: raw.decode("utf-8", "surrogateescape"))
headers = st.lists(st.tuples(header_keys, st.one_of(st.none(), st.binary(max_size=20))), max_size=3)
# Real control records (so that some decode) beside arbitrary bytes (whose decodeError is compared).
CONTROL_PAIRS = [
    (control.key_bytes(), control.value_bytes())
    for control in (control_record(0, 7), control_record(1, 0), control_record(4))
]
# Attribute bits beyond the codec: LogAppendTime, transactional, control, delete horizon, unused.
FLAGS = st.sets(st.sampled_from([0x08, 0x10, 0x20, 0x40, 0x80, 0x4000])).map(sum)


@st.composite
def records(draw, control: bool) -> list[Record]:
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        if control and draw(st.booleans()):
            key, value = draw(st.sampled_from(CONTROL_PAIRS))
        else:
            key, value = draw(blobs), draw(blobs)
        offset_delta = draw(st.one_of(st.integers(0, 200), INT32))
        timestamp_delta = draw(st.one_of(st.integers(-5, 200), st.integers(-(2**50), 2**50)))
        rows.append(
            (offset_delta, timestamp_delta, key, value, draw(headers), draw(st.integers(0, 255)))
        )
    return rows


@st.composite
def batches(draw) -> bytes:
    codec = draw(st.integers(0, len(CODEC_NAMES) - 1))
    attributes = codec | draw(FLAGS)
    base_offset = draw(st.integers(-(2**40), 2**40))
    base_timestamp = draw(st.integers(-(2**40), 2**40))
    rows = draw(records(control=bool(attributes & 0x20)))
    batch = RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=draw(INT32),
        attributes=attributes,
        last_offset_delta=draw(INT32),
        base_timestamp=base_timestamp,
        max_timestamp=draw(INT64),
        producer_id=draw(INT64),
        producer_epoch=draw(INT16),
        base_sequence=draw(INT32),
        records=[
            Record(base_offset + offset, base_timestamp + ts, key, value, hdrs, attrs)
            for offset, ts, key, value, hdrs, attrs in rows
        ],
    )
    return batch.encode()


@st.composite
def buffers(draw) -> bytes:
    """One to four batches, sometimes followed by the first bytes of another."""
    data = b"".join(draw(st.lists(batches(), min_size=1, max_size=4)))
    if draw(st.booleans()):
        partial = draw(batches())
        data += partial[: draw(st.integers(1, len(partial) - 1))]
    return data


view_options = st.fixed_dictionaries(
    {
        "decode_control": st.booleans(),
        "values": st.sampled_from([None, "metadata", "coordinator"]),
        "family": st.sampled_from([None, "metadata", "group"]),
    }
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


def reseal(data: bytearray, start: int = 0) -> bytes:
    """Fix the CRC of the batch at ``start`` after an edit, so the records' checks are reached."""
    (length,) = struct.unpack_from(">i", data, start + 8)
    stop = min(len(data), start + 12 + length)
    struct.pack_into(">I", data, start + 17, crc32c(bytes(data[start + 21 : stop])))
    return bytes(data)


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
    """A byte changed (with the CRC fixed up after it, or not), a record count changed, the buffer
    cut short, or garbage added: same view or same error from both."""
    kind = edit.draw(st.sampled_from(["flip", "flip and reseal", "count", "cut", "append"]))
    changed = bytearray(data)
    if kind == "count":  # the first batch's record count, near the truth or anywhere
        count = edit.draw(st.one_of(st.integers(-2, 10), INT32))
        changed = bytearray(reseal(changed[:57] + struct.pack(">i", count) + changed[61:]))
    elif kind == "cut":
        changed = changed[: edit.draw(st.integers(0, len(data) - 1))]
    elif kind == "append":
        changed += edit.draw(st.binary(min_size=1, max_size=80))
    else:
        where = edit.draw(st.integers(0, len(data) - 1))
        changed[where] ^= edit.draw(st.integers(1, 255))
        if kind == "flip and reseal":  # the first batch's CRC: an edit after it still fails there
            changed = bytearray(reseal(changed))
    got = outcome(batches_to_json, bytes(changed), **options)
    assert got == outcome(object_path, bytes(changed), **options)


def last_record_grown(data: bytes) -> bytes:
    """The last record's length one more than its fields take, one byte added after them, and the
    batch length and CRC made to fit: only the record-length check can tell."""
    changed = bytearray(data)
    start = len(data) - 7  # KNOWN's second record: its length, then 6 bytes of one-byte fields
    assert changed[start] == 12  # that length, zig-zag encoded
    changed[start] = 14
    changed += b"\x00"
    struct.pack_into(">i", changed, 8, len(changed) - 12)
    return reseal(changed)


KNOWN_CORRUPTIONS = [
    lambda b: b[:-1] + bytes([b[-1] ^ 1]),  # CRC mismatch
    lambda b: reseal(bytearray(b[:57]) + struct.pack(">i", 9) + b[61:]),  # count too large
    lambda b: reseal(bytearray(b[:57]) + struct.pack(">i", 1) + b[61:]),  # bytes left over
    lambda b: reseal(bytearray(b[:57]) + struct.pack(">i", -1) + b[61:]),  # negative count
    lambda b: reseal(bytearray(b[:61]) + b"\x7f" + b[62:]),  # record length past the end
    lambda b: reseal(bytearray(b[:-1]) + b"\x02"),  # header count too large
    lambda b: b[:16] + b"\x03" + b[17:],  # invalid magic
    lambda b: b[:8] + struct.pack(">i", 13) + b[12:],  # batch length smaller than any batch
    lambda b: reseal(bytearray(b[:21]) + b"\x00\x03" + b[23:]),  # lz4 data that is not lz4
    last_record_grown,  # a record longer than its fields (the record or the batch check sees it)
]
KNOWN = [(b"k", b"v", [("h", b"1")], 1), (None, None, [], 2)]


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


def test_decompression_limit_and_bad_options_as_before():
    data = encode_batch([(None, b"x" * 5000, [], 1)], compression="gzip")
    assert outcome(batches_to_json, data) == outcome(object_path, data)
    small = {"max_decompressed_bytes": 100}
    with pytest.raises(Exception) as reference:
        object_path(data, **small)
    with pytest.raises(reference.type) as fast:
        batches_to_json(data, **small)
    assert str(fast.value) == str(reference.value)
    with pytest.raises(ValueError, match="values must be None"):
        batches_to_json(data, values="bogus")
    assert batches_to_json(b"", values="bogus") == {"batches": [], "partialTail": ""}


def test_vector_records_fields(vector_blobs):
    """Every records field of Kafka's vectors (written by its Java classes)."""
    for blob in vector_blobs:
        assert outcome(batches_to_json, blob) == outcome(object_path, blob)


# -- metadata-log values: MetadataValueView against decode_metadata_record ----------------------------

METADATA_STEMS = ("TopicRecord", "PartitionRecord", "FeatureLevelRecord", "NoOpRecord")


def _framed(frame_version: int, record_type: int, version: int, body: bytes) -> bytes:
    return uvarint(frame_version) + uvarint(record_type) + uvarint(version) + body


@pytest.fixture(scope="module")
def metadata_frames(pkg) -> list[bytes]:
    """Metadata-log values of Kafka's vectors (bodies written by its Java classes), framed."""
    frames = []
    for stem in METADATA_STEMS:
        record_type = pkg.lookup(stem).API_KEY
        for line in shared_path("kafka-vectors", f"{stem}.jsonl").read_text().splitlines():
            vector = json.loads(line)
            frames.append(_framed(1, record_type, vector["version"], bytes.fromhex(vector["hex"])))
    return frames


@st.composite
def metadata_values(draw, frames: list[bytes]) -> bytes | None:
    """A value of the metadata log: one of Kafka's, one edited, one reframed (frame versions, record
    types and versions of one and more bytes, known and not), arbitrary bytes, or null."""
    frame = draw(st.sampled_from(frames))
    kind = draw(st.sampled_from(["vector", "edited", "reframed", "bytes", "null"]))
    if kind == "vector":
        return frame
    if kind == "edited":
        where = draw(st.integers(0, len(frame) - 1))
        edit = draw(st.sampled_from(["flip", "cut", "append"]))
        if edit == "cut":
            return frame[:where]
        if edit == "append":
            return frame + draw(st.binary(min_size=1, max_size=4))
        return (
            frame[:where] + bytes([frame[where] ^ draw(st.integers(1, 255))]) + frame[where + 1 :]
        )
    if kind == "reframed":
        return _framed(
            draw(st.sampled_from([1, 1, 1, 0, 2, 128])),
            draw(st.sampled_from([0, 2, 3, 12, 99, 127, 128, 300, 40000])),
            draw(st.sampled_from([0, 1, 2, 127, 128, 300, 40000])),
            frame[3:],
        )
    return None if kind == "null" else draw(st.binary(max_size=12))


def _viewed(message, version):  # a message_view that is not to_json's, so that its use shows
    return {"viewed": message.to_json(version), "at": version}


metadata_options = st.fixed_dictionaries(
    {
        "family": st.sampled_from([None, "metadata", "storage", "no-such-family"]),
        "message_view": st.sampled_from([None, _viewed]),
    }
)


def _result(call) -> tuple[str, object]:
    try:
        return "ok", json.dumps(call())
    except Exception as exc:
        return "raised", (type(exc), str(exc))


@SETTINGS
@given(options=metadata_options, draw=st.data())
def test_metadata_value_view_equals_decode_metadata_record(pkg, metadata_frames, options, draw):
    """One view for many values (so its class cache is reused), bytes-like values included."""
    values = draw.draw(st.lists(metadata_values(metadata_frames), min_size=1, max_size=8))
    view = MetadataValueView(package=pkg, family=options["family"])
    for value in values:
        kinds = [value] if value is None else [value, bytearray(value), memoryview(value)]
        for given_value in kinds:
            expected = _result(
                lambda: decode_metadata_record(
                    given_value, package=pkg, family=options["family"]
                ).to_json(options["message_view"])
            )
            assert _result(lambda: view(given_value, options["message_view"])) == expected


@SETTINGS
@given(options=metadata_options, draw=st.data())
def test_fast_view_of_metadata_batches_equals_the_object_path(pkg, metadata_frames, options, draw):
    """Batches of metadata-log values (and control batches between them): the same view, with the
    same decodeError members, as batch_to_json on the decoded batches."""
    data = b""
    for index in range(draw.draw(st.integers(1, 3))):
        if draw.draw(st.integers(0, 3)) == 0:
            rows = [
                (*pair, [], index)
                for pair in draw.draw(
                    st.lists(st.sampled_from(CONTROL_PAIRS), min_size=1, max_size=3)
                )
            ]
            data += encode_batch(rows, base_offset=index * 10, control=True)
            continue
        values = draw.draw(st.lists(metadata_values(metadata_frames), min_size=1, max_size=5))
        codec = draw.draw(st.sampled_from(CODEC_NAMES))
        rows = [(None, value, [], index) for value in values]
        data += encode_batch(rows, base_offset=index * 10, compression=codec)
    options = {"values": "metadata", "package": pkg, **options}
    assert read_batch_views(data, LIMIT, True, True) is not None
    fast = _result(lambda: batches_to_json(data, **options))
    assert fast == _result(lambda: object_path(data, **options))


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


# -- the compiled reader (``kraftwire codegen --native``) against the pure one -------------------------

COPY = "kwview_compiled"  # a copy of the bundled package, so that its build is this test's own


@pytest.fixture(scope="module")
def compiled_copy(tmp_path_factory) -> Path:
    """The folder holding a copy of the bundled package with its ``_v2_view`` compiled (mypyc)."""
    pytest.importorskip("mypyc")
    from kraftwire.codegen.native.build import build_native

    root = tmp_path_factory.mktemp("compiled-view")
    package_dir = root / COPY
    package_dir.mkdir()
    for path in Path(bundled.__file__).parent.glob("*.py"):
        shutil.copyfile(path, package_dir / path.name)
    build_native([], COPY, package_dir)
    return root


@pytest.fixture(scope="module")
def readers(compiled_copy):
    """``(compiled read_batch_views, pure read_batch_views)`` of the copy."""
    sys.path.insert(0, str(compiled_copy))
    try:
        chooser = importlib.import_module(f"{COPY}._view_reader")
        pure = importlib.import_module(f"{COPY}._v2_view")
        assert chooser.IMPLEMENTATION == "native"
        assert not isinstance(chooser.read_batch_views, types.FunctionType)  # an extension's
        yield chooser.read_batch_views, pure.read_batch_views
    finally:
        sys.path.remove(str(compiled_copy))


@SETTINGS
@given(data=buffers(), raw=st.tuples(st.booleans(), st.booleans()), edit=st.data())
def test_compiled_reader_equals_the_pure_one(readers, data, raw, edit):
    """Same views, tail and handed-back records (or None for both) on valid and edited buffers."""
    kind = edit.draw(st.sampled_from(["as made", "flip", "flip and reseal", "cut"]))
    changed = bytearray(data)
    if kind == "cut":
        changed = changed[: edit.draw(st.integers(0, len(data) - 1))]
    elif kind != "as made":
        where = edit.draw(st.integers(0, len(data) - 1))
        changed[where] ^= edit.draw(st.integers(1, 255))
        if kind == "flip and reseal":
            changed = bytearray(reseal(changed))
    compiled, pure = readers
    got, expected = compiled(bytes(changed), LIMIT, *raw), pure(bytes(changed), LIMIT, *raw)
    assert got == expected
    if kind == "as made":
        assert got is not None
    if got is not None:
        assert json.dumps(got[0]) == json.dumps(expected[0])  # key order too


@pytest.mark.parametrize("edit", KNOWN_CORRUPTIONS)
def test_compiled_reader_leaves_the_known_corruptions_to_the_object_path(readers, edit):
    compiled, pure = readers
    data = edit(encode_batch(KNOWN))
    assert pure(data, LIMIT, True, True) is None
    assert compiled(data, LIMIT, True, True) is None


def _implementation(root: Path, **env: str) -> str:
    """Which reader a fresh interpreter chooses for the package copy in ``root``."""
    script = f"import {COPY}._view_reader as chooser; print(chooser.IMPLEMENTATION)"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_only_a_current_extension_is_chosen(compiled_copy, tmp_path):
    assert _implementation(compiled_copy) == "native"
    assert _implementation(compiled_copy, KRAFTWIRE_PURE="1") == "pure"
    stale = tmp_path / "stale"
    shutil.copytree(compiled_copy, stale)
    with open(stale / COPY / "_v2_view.py", "a", encoding="utf-8") as source:
        source.write("# edited after the build\n")
    assert _implementation(stale) == "pure"
    impostor = tmp_path / "impostor"
    shutil.copytree(compiled_copy, impostor)
    for path in (impostor / COPY).glob("_native__v2_view*"):
        path.unlink()
    digest = hashlib.sha256((impostor / COPY / "_v2_view.py").read_bytes()).hexdigest()
    (impostor / COPY / "_native__v2_view.py").write_text(
        f"from ._v2_view import *\nPURE_SOURCE_SHA256 = {digest!r}\n"
    )
    assert _implementation(impostor) == "pure"
