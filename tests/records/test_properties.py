"""Property tests: random batches round-trip through every codec, and the JSON view round-trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwire.records import (
    CODEC_NAMES,
    batch_from_json,
    batch_to_json,
    batches_to_json,
    decode_batches,
    encode_batch,
)

INT64 = st.integers(-(2**63), 2**63 - 1)
blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(
    st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=20))), max_size=4
)
records = st.lists(st.tuples(blobs, blobs, headers, st.integers(0, 2**50)), min_size=1, max_size=30)
batch_options = st.fixed_dictionaries(
    {
        "base_offset": st.integers(0, 2**62),
        "leader_epoch": st.integers(-1, 2**31 - 1),
        "producer_id": st.integers(-1, 2**62),
        "producer_epoch": st.integers(-1, 2**15 - 1),
        "base_sequence": st.integers(-1, 2**31 - 1),
        "transactional": st.booleans(),
    }
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("codec", CODEC_NAMES)
@SETTINGS
@given(rows=records, options=batch_options)
def test_random_batches_round_trip(codec, rows, options):
    data = encode_batch(rows, compression=codec, **options)
    (batch,), tail = decode_batches(data)
    assert tail == b""
    assert batch.compression == codec
    assert batch.base_offset == options["base_offset"]
    assert batch.partition_leader_epoch == options["leader_epoch"]
    assert (batch.producer_id, batch.producer_epoch) == (
        options["producer_id"],
        options["producer_epoch"],
    )
    assert batch.base_sequence == options["base_sequence"]
    assert batch.is_transactional == options["transactional"]
    assert [(r.key, r.value, r.headers, r.timestamp) for r in batch.records] == [
        (key, value, list(hdrs), ts) for key, value, hdrs, ts in rows
    ]
    assert [r.offset for r in batch.records] == [
        options["base_offset"] + i for i in range(len(rows))
    ]
    assert batch.encode() == data


@SETTINGS
@given(rows=records, options=batch_options, codec=st.sampled_from(CODEC_NAMES))
def test_json_view_round_trips(rows, options, codec):
    data = encode_batch(rows, compression=codec, **options)
    (batch,), _ = decode_batches(data)
    view = json.loads(json.dumps(batch_to_json(batch)))
    assert view["recordCount"] == len(rows) and view["compression"] == codec
    assert batch_from_json(view).encode() == data


@SETTINGS
@given(
    parts=st.lists(st.tuples(records, st.sampled_from(CODEC_NAMES)), min_size=1, max_size=4),
    cut=st.integers(0, 200),
)
def test_buffers_of_batches_with_a_partial_tail(parts, cut):
    batches = []
    offset = 0
    for rows, codec in parts:
        batches.append(encode_batch(rows, base_offset=offset, compression=codec))
        offset += len(rows)
    data = b"".join(batches)
    cut = min(cut, len(batches[-1]))
    decoded, tail = decode_batches(data[: len(data) - cut])
    complete = len(batches) if cut == 0 else len(batches) - 1
    assert len(decoded) == complete
    assert tail == (batches[-1][: len(batches[-1]) - cut] if cut else b"")
    assert batches_to_json(data)["partialTail"] == ""


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_long_varints_round_trip(codec):
    """Lengths and deltas past two varint bytes, negative deltas, int64-range timestamps."""
    rows = [
        (b"k" * 20_000, b"v" * 70_000, [("h" * 9000, b"x" * 17_000)], 2**62),
        (None, b"", [], 0),  # timestamp delta -2**62 from the base
        (b"", None, [("", None)] * 300, 2**62 + 123_456_789_012),
    ]
    data = encode_batch(rows, base_offset=2**40, compression=codec)
    (batch,), _ = decode_batches(data)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in batch.records] == [
        (key, value, list(headers), ts) for key, value, headers, ts in rows
    ]
    assert batch.encode() == data
