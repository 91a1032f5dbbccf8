"""Pairing: acks=0 Produce expects no response, the server side is found without its port, a
correlation id may be reused, and a body that fails to decode keeps its pair."""

from __future__ import annotations

import pytest

from captures import T0, conversation, pcap_of, write
from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.spark_decoders.decode.pipeline import DecodeOptions, decode_files
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(300)


def _produce(upstream, acks: int, correlation_id: int) -> bytes:
    request = upstream.lookup("ProduceRequest").from_json(
        {"transactionalId": None, "acks": acks, "timeoutMs": 1000, "topicData": []}, 9
    )
    return upstream.encode_request(request, 9, correlation_id, "producer")


def test_acks0_produce_expects_no_response(tmp_path, upstream):
    vote = kraft_exchanges(1)[0]
    conv = conversation([], close=False)
    conv.send(True, _produce(upstream, 0, 1), T0 + 10**6)
    conv.send(True, vote.request, T0 + 2 * 10**6)
    conv.send(False, vote.response, T0 + 3 * 10**6)
    rows, _ = decode_files(
        [write(tmp_path, "acks0.pcap", pcap_of(conv.packets))], BodyDecoder(upstream)
    )
    assert [(r["api_key"], r["status"], r["correlation_id"]) for r in rows] == [
        (0, "acks0", 1),
        (52, "ok", 1),
    ]
    assert '"acks":0' in rows[0]["request_json"]


@pytest.mark.parametrize("handshake", [True, False])
def test_server_side_inferred_on_an_unknown_port(tmp_path, handshake):
    exchanges = kraft_exchanges(7, seed=3)
    conv = conversation(
        exchanges, client=("10.9.0.1", 1234), server=("10.9.0.2", 20001), handshake=handshake
    )
    path = write(tmp_path, "port.pcap", pcap_of(conv.packets))
    rows, _ = decode_files([path], BodyDecoder(__import__("kraftwire.generated").generated))
    assert [r["status"] for r in rows] == ["ok"] * 7
    assert {(r["client_port"], r["server_port"]) for r in rows} == {(1234, 20001)}
    # Told the wrong way round (server port 1234): a captured SYN still wins; without one, the
    # configured port does.
    rows, _ = decode_files(
        [path],
        BodyDecoder(__import__("kraftwire.generated").generated),
        DecodeOptions(server_ports=frozenset({1234})),
    )
    expected = (1234, 20001) if handshake else (20001, 1234)
    assert {(r["client_port"], r["server_port"]) for r in rows} == {expected}


def test_reused_correlation_id_pairs_with_the_latest_request(tmp_path):
    a, b = kraft_exchanges(2, seed=5)
    conv = conversation([], close=False)
    second = b.request[:8] + a.request[8:12] + b.request[12:]  # b's request with a's correlation id
    conv.send(True, a.request, T0 + 10**6)
    conv.send(True, second, T0 + 2 * 10**6)
    conv.send(False, a.response, T0 + 3 * 10**6)
    rows, _ = decode_files(
        [write(tmp_path, "reuse.pcap", pcap_of(conv.packets))],
        BodyDecoder(__import__("kraftwire.generated").generated),
    )
    assert [(r["api_key"], r["request_frame"], r["response_frame"]) for r in rows] == [
        (a.api_key, 4, None),
        (b.api_key, 5, 6),
    ]
    assert rows[0]["status"] == "no_response"


def test_body_that_fails_to_decode_keeps_its_pair(tmp_path):
    [vote] = kraft_exchanges(1)
    broken = vote.request[:-3]  # the body is cut short; the frame size says so
    broken = (len(broken) - 4).to_bytes(4, "big") + broken[4:]
    conv = conversation([], close=False)
    conv.send(True, broken, T0 + 10**6)
    conv.send(False, vote.response, T0 + 2 * 10**6)
    rows, _ = decode_files(
        [write(tmp_path, "broken.pcap", pcap_of(conv.packets))],
        BodyDecoder(__import__("kraftwire.generated").generated),
    )
    [row] = rows
    assert row["status"] == "decode_error" and row["response_json"] is not None
    assert row["response_frame"] == 5 and "request" in row["decode_error"]


def test_requests_left_unanswered_are_reported_in_the_order_they_were_sent(tmp_path):
    """Two requests completed by one packet, the second reusing the id of an earlier one: at the
    end each gets its no_response row, in the order the requests were sent (the reused id's
    request counts as sent last, not where the earlier request with its id stood)."""
    a, b, c = kraft_exchanges(3, seed=9)
    reused = c.request[:8] + a.request[8:12] + c.request[12:]  # c's request with a's id
    conv = conversation([], close=False)
    conv.send(True, a.request, T0 + 10**6)
    conv.send(True, b.request + reused, T0 + 2 * 10**6)  # one packet completes both
    rows, _ = decode_files(
        [write(tmp_path, "unanswered.pcap", pcap_of(conv.packets))],
        BodyDecoder(__import__("kraftwire.generated").generated),
    )
    ids = [int.from_bytes(frame[8:12], "big", signed=True) for frame in (a.request, b.request)]
    assert [(r["correlation_id"], r["request_frame"], r["status"]) for r in rows] == [
        (ids[0], 4, "no_response"),
        (ids[1], 5, "no_response"),
        (ids[0], 5, "no_response"),
    ]
    assert rows[2]["api_key"] == c.api_key
