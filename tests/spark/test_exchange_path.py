"""The per-exchange path's shortcuts give what the general code they stand for gives."""

from __future__ import annotations

import datetime as dt
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.spark_decoders.kafka.exchanges import Endpoints, Matcher
from kraftwire.spark_decoders.kafka.framing import Frame
from kraftwire.spark_decoders.kafka.headers import (
    read_request_head,
    request_body_start,
    request_body_start_after,
)
from kraftwire.spark_decoders.kafka.rows import OrderedRows, timestamp, utc_datetime
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

# Request headers: API key, version and correlation id, then a client id of any length (null,
# invalid negative, ASCII, UTF-8 text, any bytes; sometimes longer than what follows), then a
# tagged-field count of zero or anything.
_client_ids = st.one_of(
    st.text(max_size=12).map(str.encode),
    st.binary(max_size=12),
    st.sampled_from([b"consumer-1", b"raft-client-2", b""]),
)
request_headers = st.one_of(
    st.builds(
        lambda fixed, client_id, cut, rest: fixed
        + struct.pack(">h", len(client_id))
        + client_id[: len(client_id) - cut]
        + rest,
        st.binary(min_size=8, max_size=8),
        _client_ids,
        st.integers(0, 2),
        st.one_of(st.just(b"\x00"), st.binary(max_size=8)),
    ),
    st.builds(
        lambda fixed, length, rest: fixed + struct.pack(">h", length) + rest,
        st.binary(min_size=8, max_size=8),
        st.integers(-(2**15), -1) | st.just(-1),
        st.binary(max_size=6),
    ),
    st.binary(max_size=16),
)


def _plain_header_end(payload: bytes, header_version: int) -> int | None:
    """The rule, spelled out on its own: Kafka's client id is a nullable string (int16 length, -1
    for null, then that many bytes of UTF-8); after one, header v1 ends there and v2 one byte
    later when that byte is a zero tagged-field count; anything else is the codec's."""
    if len(payload) < 10 or header_version not in (1, 2):
        return None
    length = int.from_bytes(payload[8:10], "big", signed=True)
    end = 10 + max(length, 0)
    if length < -1 or end > len(payload) or not _is_utf8(payload[10:end]):
        return None
    if header_version == 1:
        return end
    return end + 1 if end < len(payload) and payload[end] == 0 else None


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=800, deadline=None)
@given(payload=request_headers, header_version=st.integers(0, 3))
def test_body_start_after_a_read_head_equals_reading_the_header_again(payload, header_version):
    """The exchange path reads a request's head once: where its body starts is then found from
    that head, as ``request_body_start`` finds it from the payload alone, by the rule."""
    head = read_request_head(payload)
    expected = request_body_start(payload, header_version)
    assert expected == _plain_header_end(payload, header_version)
    if head is not None:
        assert request_body_start_after(head, payload, header_version) == expected


NEAR_NOW_NS = 1_700_000_000_000_000_000
# Timestamps a few seconds, milliseconds and microseconds apart, so that many share their second
# or their millisecond with the one before (as busy traffic does), some only the millisecond's
# digits; and anywhere at all, past the year 9999 included.
clustered_ns = st.builds(
    lambda second, millisecond, rest: NEAR_NOW_NS + second * 10**9 + millisecond * 10**6 + rest,
    st.integers(-2, 2),
    st.integers(0, 2) | st.integers(997, 999),
    st.integers(0, 10**6 - 1),
) | st.integers(-(2**63), 2**64 * 1000)


@settings(max_examples=500, deadline=None)
@given(values=st.lists(clustered_ns, max_size=40))
def test_datetimes_reused_from_the_last_millisecond_equal_the_epoch_arithmetic(values):
    """``rows.utc_datetime`` reuses the datetime of the millisecond and second before; in any
    order it gives what epoch + timedelta gives, None past the year 9999."""
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    for ts_ns in values:
        try:
            expected = epoch + dt.timedelta(microseconds=ts_ns // 1000)
        except OverflowError:
            expected = None
        got = utc_datetime(ts_ns)
        assert got == expected and repr(got) == repr(expected), ts_ns
        assert timestamp(ts_ns) == expected
    assert timestamp(None) is None


def _matcher(rows: list[dict]) -> Matcher:
    import kraftwire.generated as package

    endpoints = Endpoints(("/c.pcap",), "conn", "10.0.0.1", 40001, "10.0.0.2", 9093)
    return Matcher(endpoints, BodyDecoder(package), rows.append)


PAST_9999_NS = 146_000 * 365 * 86_400 * 10**9


@pytest.mark.parametrize("late", ["request", "response", "both"])
def test_a_timestamp_past_the_year_9999_is_left_out_on_its_side_only(late):
    [vote] = kraft_exchanges(1)
    times = {"request": NEAR_NOW_NS, "response": NEAR_NOW_NS + 2000}
    for side in ("request", "response") if late == "both" else (late,):
        times[side] += PAST_9999_NS
    rows: list[dict] = []
    matcher = _matcher(rows)
    matcher.request(Frame(vote.request[4:], len(vote.request) - 4, 1, 1, times["request"], None))
    matcher.response(
        Frame(vote.response[4:], len(vote.response) - 4, 2, 2, times["response"], None)
    )
    [row] = rows
    assert (row["request_ts"] is None) == (late != "response")
    assert (row["response_ts"] is None) == (late != "request")
    assert row["latency_us"] == (times["response"] - times["request"]) / 1000
    assert row["status"] == "ok" and "past the year 9999" in row["decode_error"]


def test_a_response_past_the_year_9999_without_its_request_is_left_out():
    [vote] = kraft_exchanges(1)
    rows: list[dict] = []
    matcher = _matcher(rows)
    late = NEAR_NOW_NS + PAST_9999_NS
    matcher.response(Frame(vote.response[4:], len(vote.response) - 4, 2, 2, late, None))
    [row] = rows
    assert row["status"] == "no_request" and row["response_ts"] is None
    assert row["correlation_id"] == vote.correlation_id
    assert "past the year 9999" in row["decode_error"]


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3) | st.none()), max_size=60))
def test_ordered_rows_come_out_as_a_stable_sort_of_the_rows(keys):
    """Rows with equal keys abound (their order is the order they came in), and a key may hold
    None where the others hold numbers, as long as equal parts before it decide."""
    rows = [{"first": first, "second": second, "came": n} for n, (first, second) in enumerate(keys)]

    def key(row: dict) -> tuple:
        return (row["first"], row["second"] is None, row["second"] or 0)

    emitted = OrderedRows(key)
    for row in rows:
        emitted.add(row)
    assert emitted.in_order() == sorted(rows, key=key)
