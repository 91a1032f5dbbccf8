"""Captures whose every row is known exactly: Kafka's header rules, out-of-order and lossy TCP.

Each capture is built with ``synth`` (segments sent out of order, segments the capture missed, a
snap length, a capture that just ends) and its rows are checked field by field.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest

from captures import T0, assert_json_equal, assert_rows_match, decode, pcap_of, write
from kraftwire.generated import lookup
from kraftwire.records import encode_batch
from kraftwire.synthetic_capture import Conversation
from kraftwire.spark_decoders.kafka.traffic import Exchange, exchange_of, kraft_exchanges

pytestmark = pytest.mark.timeout(120)

CLIENT, SERVER = ("10.0.0.1", 40001), ("10.0.0.2", 9093)
UTF8_CLIENT = "consumer-ü-2"


def _exchange(request_body, response_body, version: int, correlation_id: int, client_id: str):
    api_key = request_body.API_KEY
    return exchange_of(api_key, version, correlation_id, client_id, request_body, response_body)


def _renamed(exchanges: list[Exchange], client_id: str) -> list[Exchange]:
    """The same exchanges sent by a client of another id."""
    return [
        _exchange(e.request_body, e.response_body, e.api_version, e.correlation_id, client_id)
        for e in exchanges
    ]


def _view(row: dict) -> tuple:
    return (
        row["request_frame"],
        row["response_frame"],
        row["api_key"],
        row["correlation_id"],
        row["client_id"],
        row["status"],
        row["decode_error"],
    )


def _micros(when) -> int:
    return int(when.timestamp()) * 1_000_000 + when.microsecond


def _ok(request_frame: int, response_frame: int, exchange: Exchange) -> tuple:
    fields = (exchange.api_key, exchange.correlation_id, exchange.client_id, "ok", None)
    return (request_frame, response_frame, *fields)


class _Capture:
    """A conversation whose packets are numbered as a pcap of it numbers them."""

    def __init__(self, handshake: bool = True) -> None:
        self.conv = Conversation(CLIENT, SERVER)
        self.ts = T0
        if handshake:
            self.conv.handshake(self.ts)

    def send(self, from_client: bool, data: bytes, mss: int = 1460) -> int:
        """Sends ``data`` in order; the number of its last packet."""
        self.ts += 1_000_000
        self.conv.send(from_client, data, self.ts, mss)
        return len(self.conv.packets)

    def send_in_order(self, from_client: bool, data: bytes, mss: int, order: list[int]) -> int:
        self.ts += 1_000_000
        self.conv.send_in_order(from_client, data, self.ts, mss, order)
        return len(self.conv.packets)

    def exchange(self, exchange: Exchange) -> tuple:
        return _ok(self.send(True, exchange.request), self.send(False, exchange.response), exchange)

    def ts_of(self, number: int) -> int:
        return self.conv.packets[number - 1][0]

    def rows(self, tmp_path, name: str = "truth.pcap", **options) -> list[dict]:
        rows, _ = decode(write(tmp_path, name, pcap_of(self.conv.packets, **options)))
        return rows


# -- 1. a client id is any UTF-8 ---------------------------------------------------------------


def test_a_utf8_client_id_is_read_like_any_other(tmp_path):
    """A consumer named with a non-ASCII letter: every exchange of its connection is found."""
    exchanges = _renamed(kraft_exchanges(7), UTF8_CLIENT)
    capture = _Capture()
    expected = [capture.exchange(e) for e in exchanges]
    rows = capture.rows(tmp_path)
    assert [_view(r) for r in rows] == expected
    assert_rows_match(rows, exchanges)


def test_a_utf8_client_id_is_found_again_after_a_mid_stream_start(tmp_path):
    """Plausibility, used to find the first frame of a stream whose start was not captured,
    admits such an id too: the half frame is passed over and every whole one read."""
    exchanges = _renamed(kraft_exchanges(4), UTF8_CLIENT)
    capture = _Capture(handshake=False)
    capture.send(True, exchanges[0].request[9:])  # the tail of a request before the capture
    expected = [capture.exchange(e) for e in exchanges[1:]]
    rows = capture.rows(tmp_path)
    assert [_view(r) for r in rows] == expected
    assert_rows_match(rows, exchanges[1:])


# -- 2. every API key ------------------------------------------------------------------------------


def _unknown_key_exchange(correlation_id: int) -> tuple[bytes, bytes]:
    """A request of API key 4242 (no codec knows it) and its response."""
    client_id = b"tool"
    header = struct.pack(">hhih", 4242, 0, correlation_id, len(client_id)) + client_id
    request = header + b"\x00\x07"
    response = struct.pack(">i", correlation_id) + b"\x00\x00"
    return (
        struct.pack(">i", len(request)) + request,
        struct.pack(">i", len(response)) + response,
    )


def test_kraftwires_read_offset_and_an_unknown_key_read_in_sync(tmp_path):
    """ReadOffset (key 1000, kraftwire's own) decodes; a key no codec knows, read in sync, is a
    row with its numbers and "no codec", and the exchanges after it are read as before."""
    read_offset = _exchange(
        lookup("ReadOffsetRequest")(), lookup("ReadOffsetResponse")(), 0, 7, "ops"
    )
    after = kraft_exchanges(2, first_correlation_id=9)
    capture = _Capture()
    expected = [capture.exchange(read_offset)]
    request, response = _unknown_key_exchange(8)
    expected.append(
        (
            capture.send(True, request),
            capture.send(False, response),
            4242,
            8,
            "tool",
            "unsupported_version",
            "no codec for API key 4242 v0",
        )
    )
    expected += [capture.exchange(e) for e in after]
    rows = capture.rows(tmp_path)
    assert [_view(r) for r in rows] == expected
    assert rows[0]["api_name"] == "ReadOffset"
    assert_rows_match([rows[0]], [read_offset])
    assert rows[1]["response_size"] == len(response) - 4
    assert_rows_match(rows[2:], after)


def test_a_key_of_the_codec_set_is_found_after_a_mid_stream_start(tmp_path):
    """Finding the first frame of a stream whose start was not captured admits the API keys of
    the codec set in use, kraftwire's ReadOffset (1000) among them."""
    read_offset = _exchange(
        lookup("ReadOffsetRequest")(), lookup("ReadOffsetResponse")(), 0, 31, "ops"
    )
    capture = _Capture(handshake=False)
    capture.send(True, kraft_exchanges(1)[0].request[9:])  # the tail of a frame before it
    expected = [capture.exchange(read_offset)]
    rows = capture.rows(tmp_path)
    assert [_view(r) for r in rows] == expected
    assert_rows_match(rows, [read_offset])


# -- 3. out-of-order segments ----------------------------------------------------------------------


def test_a_frame_completed_by_an_out_of_order_segment_is_that_segments(tmp_path):
    """Segments 1, 3, 2 of two pipelined requests: both complete when segment 2 arrives, so both
    take its number and time; so does a response sent the same way."""
    first, second = kraft_exchanges(2)
    data = first.request + second.request
    mss = -(-len(data) // 3)
    assert mss < len(first.request) < 2 * mss, "the first request must end in segment 2"
    capture = _Capture()
    filler = capture.send_in_order(True, data, mss, [0, 2, 1])
    assert len(first.response) in range(11, 16), "the response must be cut in three"
    response_filler = capture.send_in_order(False, first.response, 5, [0, 2, 1])
    last = capture.send(False, second.response)
    rows = capture.rows(tmp_path)
    assert [_view(r) for r in rows] == [
        _ok(filler, response_filler, first),
        _ok(filler, last, second),
    ]
    ts = capture.ts_of(filler)
    assert [_micros(r["request_ts"]) for r in rows] == [ts // 1000] * 2
    assert rows[0]["latency_us"] == (capture.ts_of(response_filler) - ts) / 1000
    assert_rows_match(rows, [first, second])


# -- 4 and 5. segments the capture missed, a snap length, a capture that ends ----------------------


FALSE_HEADER = struct.pack(">ihhih", 58_720_256, 1, 0, 256, -1)  # size, key 1, v0, id 256


def _produce(correlation_id: int) -> Exchange:
    """A Produce v9 whose one record's value holds, far into it, what looks like a request
    header (a 56 MiB Fetch v0)."""
    value = bytes(2200) + FALSE_HEADER + bytes(300)
    records = encode_batch([(None, value, None, 1_700_000_000_000)])
    request = lookup("ProduceRequest").from_json(
        {
            "transactionalId": None,
            "acks": -1,
            "timeoutMs": 1000,
            "topicData": [
                {
                    "name": "t",
                    "partitionData": [{"index": 0, "records": base64.b64encode(records).decode()}],
                }
            ],
        },
        9,
    )
    response = lookup("ProduceResponse").from_json(
        {
            "responses": [
                {
                    "name": "t",
                    "partitionResponses": [
                        {
                            "index": 0,
                            "errorCode": 0,
                            "baseOffset": 41,
                            "logAppendTimeMs": -1,
                            "logStartOffset": 0,
                            "recordErrors": [],
                            "errorMessage": None,
                        }
                    ],
                }
            ],
            "throttleTimeMs": 0,
        },
        9,
    )
    return _exchange(request, response, 9, correlation_id, "producer-1")


def test_a_gap_of_known_length_skips_to_the_end_of_the_damaged_frame(tmp_path):
    """A segment of a Produce request missed by the capture: the next segment's sequence number
    says how many bytes are missing, so the reader goes on at the end of the Produce frame (its
    size says where) and reads the three exchanges after it; a header-like run of bytes in the
    Produce body after the gap is never taken for a frame. The damaged request has no frame
    number, its intact response is decoded, and a request the capture's end cut off says so."""
    produce = _produce(5)
    assert len(produce.request) > 2000
    assert produce.request.index(FALSE_HEADER) > 2000, "the false header must follow the gap"
    after = kraft_exchanges(3, first_correlation_id=6)
    capture = _Capture()
    capture.send_in_order(True, produce.request, 1000, [0, 2])  # segment 2 (bytes 1000-1999) lost
    produce_response = capture.send(False, produce.response)
    size = len(produce.request) - 4
    expected = [
        (
            None,
            produce_response,
            0,
            5,
            "producer-1",
            "gap",
            "request frame incomplete: 1000 bytes missing from the capture after its first 996",
        )
    ]
    expected += [capture.exchange(e) for e in after]
    last = kraft_exchanges(4, first_correlation_id=9)[3]  # a Fetch: more than 40 bytes
    capture.send(True, last.request[:40])  # and then the capture ends
    # A row without a frame number sorts first in its file (``rows.sort_key``).
    expected.insert(
        0,
        (
            None,
            None,
            last.api_key,
            last.correlation_id,
            last.client_id,
            "truncated",
            f"request frame incomplete: the capture ended after its first 36 of"
            f" {len(last.request) - 4} bytes",
        ),
    )
    rows = capture.rows(tmp_path)
    assert [_view(r) for r in rows] == expected
    damaged = rows[1]
    assert (damaged["request_size"], damaged["request_ts"], damaged["latency_us"]) == (
        size,
        None,
        None,
    )
    assert damaged["request_json"] is None
    assert_json_equal(json.loads(damaged["response_json"]), produce.response_body.to_json(9))
    assert_rows_match(rows[2:], after)


@pytest.mark.parametrize(
    "lost,client_id,note",
    [
        (2, "raft-client-3", "20 bytes missing from the capture after its first 36"),
        (1, None, "20 bytes missing from the capture after its first 16"),
    ],
)
def test_a_damaged_request_with_an_intact_header_keeps_its_intact_response(
    tmp_path, lost, client_id, note
):
    """A Fetch request, 20 bytes a segment, one segment of which the capture missed: its API key,
    version and correlation id are whole, so its complete response is decoded; the request has
    no frame number, since it never completed. Its client id is there when its bytes were."""
    fetch = kraft_exchanges(4)[3]
    assert fetch.api_key == 1 and fetch.client_id == "raft-client-3" and len(fetch.request) > 60
    capture = _Capture()
    segments = -(-len(fetch.request) // 20)
    capture.send_in_order(True, fetch.request, 20, [i for i in range(segments) if i != lost])
    response = capture.send(False, fetch.response)
    rows = capture.rows(tmp_path)
    assert [_view(r) for r in rows] == [
        (
            None,
            response,
            1,
            fetch.correlation_id,
            client_id,
            "gap",
            f"request frame incomplete: {note}",
        )
    ]
    assert_json_equal(json.loads(rows[0]["response_json"]), fetch.response_body.to_json(17))
    assert rows[0]["error_codes"] == [0, fetch.response_body.responses[0].partitions[0].error_code]
    assert (rows[0]["api_version"], rows[0]["request_json"]) == (17, None)


def test_a_snap_length_cut_is_told_apart_and_the_stream_stays_in_sync(tmp_path):
    """Packets cut by a snap length of 120 bytes (66 of TCP payload): the cut frame says the snap
    length cut it, and the frames after it are read where its size says they start."""
    small = kraft_exchanges(3)[:1] + kraft_exchanges(3, first_correlation_id=20)[2:]
    produce = _produce(10)
    capture = _Capture()
    expected = [capture.exchange(small[0])]
    cut = capture.send(True, produce.request, mss=1000)
    assert cut and len(produce.request) > 2000
    produce_response = capture.send(False, produce.response)
    expected.append(
        (
            None,
            produce_response,
            0,
            10,
            "producer-1",
            "truncated",
            "request frame incomplete: the snap length cut 934 bytes after its first 62",
        )
    )
    expected.append(capture.exchange(small[1]))
    for exchange in small:
        assert len(exchange.request) <= 66 and len(exchange.response) <= 66, "must fit the snap"
    rows = capture.rows(tmp_path, snaplen=120)
    assert [_view(r) for r in rows] == expected
