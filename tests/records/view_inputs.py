"""Inputs of the records' JSON view tests (test_view_fast_path.py, test_compiled_views.py): record
batch buffers drawn by hypothesis, edits that corrupt them, and metadata-log values."""

from __future__ import annotations

import json
import struct

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from varints import uvarint

from kraftwire.records import CODEC_NAMES, Record, RecordBatch, control_record, crc32c, encode_batch

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


def reseal(data: bytearray, start: int = 0) -> bytes:
    """Fix the CRC of the batch at ``start`` after an edit, so the records' checks are reached."""
    (length,) = struct.unpack_from(">i", data, start + 8)
    stop = min(len(data), start + 12 + length)
    struct.pack_into(">I", data, start + 17, crc32c(bytes(data[start + 21 : stop])))
    return bytes(data)


@st.composite
def edited(draw, data: bytes) -> bytes:
    """``data`` with a byte changed (with the CRC fixed up after it, or not), the first batch's
    record count changed, cut short, or with garbage added."""
    kind = draw(st.sampled_from(["flip", "flip and reseal", "count", "cut", "append"]))
    changed = bytearray(data)
    if kind == "count":  # the first batch's record count, near the truth or anywhere
        count = draw(st.one_of(st.integers(-2, 10), INT32))
        changed = bytearray(reseal(changed[:57] + struct.pack(">i", count) + changed[61:]))
    elif kind == "cut":
        changed = changed[: draw(st.integers(0, len(data) - 1))]
    elif kind == "append":
        changed += draw(st.binary(min_size=1, max_size=80))
    else:
        where = draw(st.integers(0, len(data) - 1))
        changed[where] ^= draw(st.integers(1, 255))
        if kind == "flip and reseal":  # the first batch's CRC: an edit after it still fails there
            changed = bytearray(reseal(changed))
    return bytes(changed)


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


BAD_OPTIONS = [  # (data, options, error): each option is checked, even for an empty buffer
    (
        b"",
        {"values": "bogus"},
        "ValueError: values must be None, 'metadata' or 'coordinator', not 'bogus'",
    ),
    (b"", {"values": 5}, "ValueError: values must be None, 'metadata' or 'coordinator', not 5"),
    (b"", {"family": 3}, "TypeError: family must be a string or None, not 3"),
    (b"", {"decode_control": "yes"}, "TypeError: decode_control must be True or False, not 'yes'"),
    (
        b"",
        {"max_decompressed_bytes": "1"},
        "TypeError: max_decompressed_bytes must be an integer or None, not '1'",
    ),
    (
        b"",
        {"max_decompressed_bytes": True},
        "TypeError: max_decompressed_bytes must be an integer or None, not True",
    ),
    ("abc", {}, "TypeError: records data must be bytes-like or None, not string"),
    (5, {}, "TypeError: records data must be bytes-like or None, not integer"),
    ([1], {}, "TypeError: records data must be bytes-like or None, not array"),
]


# -- metadata-log values (``metadata_frames``, a conftest fixture: Kafka's, framed) -------------------


def framed(frame_version: int, record_type: int, version: int, body: bytes) -> bytes:
    return uvarint(frame_version) + uvarint(record_type) + uvarint(version) + body


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
        return framed(
            draw(st.sampled_from([1, 1, 1, 0, 2, 128])),
            draw(st.sampled_from([0, 2, 3, 12, 99, 127, 128, 300, 40000])),
            draw(st.sampled_from([0, 1, 2, 127, 128, 300, 40000])),
            frame[3:],
        )
    return None if kind == "null" else draw(st.binary(max_size=12))


@st.composite
def metadata_buffers(draw, frames: list[bytes]) -> bytes:
    """One to three batches of metadata-log values (any codec), some control batches between them."""
    data = b""
    for index in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 3)) == 0:
            pairs = draw(st.lists(st.sampled_from(CONTROL_PAIRS), min_size=1, max_size=3))
            rows = [(*pair, [], index) for pair in pairs]
            data += encode_batch(rows, base_offset=index * 10, control=True)
            continue
        values = draw(st.lists(metadata_values(frames), min_size=1, max_size=5))
        codec = draw(st.sampled_from(CODEC_NAMES))
        rows = [(None, value, [], index) for value in values]
        data += encode_batch(rows, base_offset=index * 10, compression=codec)
    return data


def viewed(message, version):  # a message_view that is not to_json's, so that its use shows
    return {"viewed": message.to_json(version), "at": version}


metadata_options = st.fixed_dictionaries(
    {
        "family": st.sampled_from([None, "metadata", "storage", "no-such-family"]),
        "message_view": st.sampled_from([None, viewed]),
    }
)


def result(call) -> tuple[str, object]:
    """("ok", JSON text) or ("raised", (type name, text)): what ``call()`` did."""
    try:
        return "ok", json.dumps(call())
    except Exception as exc:
        return "raised", (type(exc).__name__, str(exc))
