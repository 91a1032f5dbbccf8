"""Synthetic captures with known content for the spark_decoders tests."""

from __future__ import annotations

import json
from pathlib import Path

from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET, LINK_RAW, LINK_SLL2
from kraftwire.spark_decoders.decode.pipeline import decode_files
from kraftwire.synthetic_capture import (
    Conversation,
    ip_fragments,
    link_frame,
    pcap_bytes,
    pcapng_section,
)
from kraftwire.spark_decoders.kafka.traffic import Exchange, kraft_exchanges

T0 = 1_700_000_000_000_000_000


def conversation(
    exchanges: list[Exchange],
    client=("10.0.0.1", 40001),
    server=("10.0.0.2", 9093),
    t0: int = T0,
    handshake: bool = True,
    close: bool = True,
    mss: int = 1460,
    **options,
) -> Conversation:
    conv = Conversation(client, server, **options)
    ts = t0
    if handshake:
        conv.handshake(ts)
    for exchange in exchanges:
        ts += 1_000_000
        conv.send(True, exchange.request, ts, mss)
        ts += 500_000
        conv.send(False, exchange.response, ts, mss)
    if close:
        conv.close(ts + 1_000_000)
    return conv


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def pcap_of(packets, linktype: int = LINK_ETHERNET, vlans=(), **options) -> bytes:
    return pcap_bytes(
        [(ts, link_frame(linktype, ip, vlans)) for ts, ip in packets], linktype, **options
    )


def two_pcapng_sections(first: Conversation, second: Conversation) -> bytes:
    """``first`` in a little-endian section whose packets alternate between an Ethernet interface
    (default microseconds) and an SLL2 one (nanoseconds); ``second`` as raw IP in a big-endian
    section with a binary resolution (2^-20 s)."""
    one = pcapng_section(
        [(LINK_ETHERNET, None), (LINK_SLL2, 9)],
        [
            (i % 2, ts, link_frame(LINK_ETHERNET if i % 2 == 0 else LINK_SLL2, ip))
            for i, (ts, ip) in enumerate(first.packets)
        ],
    )
    two = pcapng_section(
        [(LINK_RAW, 0x80 | 20)], [(0, ts, ip) for ts, ip in second.packets], endian=">"
    )
    return one + two


def decode(paths, bodies=None):
    rows, stats = decode_files(
        paths if isinstance(paths, list) else [paths], bodies or BodyDecoder(_bundled())
    )
    return rows, stats


def _bundled():
    import kraftwire.generated as package

    return package


def assert_rows_match(rows: list[dict], exchanges: list[Exchange], status: str = "ok") -> None:
    """Every exchange appears once, in order, with its header fields and decoded bodies."""
    assert [r["correlation_id"] for r in rows] == [e.correlation_id for e in exchanges]
    for row, exchange in zip(rows, exchanges):
        assert row["status"] == status, row
        assert (row["api_key"], row["api_version"], row["client_id"]) == (
            exchange.api_key,
            exchange.api_version,
            exchange.client_id,
        )
        assert row["request_size"] == len(exchange.request) - 4
        assert row["response_size"] == len(exchange.response) - 4
        assert_json_equal(
            json.loads(row["request_json"]), exchange.request_body.to_json(exchange.api_version)
        )
        assert_json_equal(
            json.loads(row["response_json"]), exchange.response_body.to_json(exchange.api_version)
        )


def assert_json_equal(decoded, expected) -> None:
    """Equal, except that records fields are decoded batch views on the decoded side."""
    if isinstance(decoded, dict) and "batches" in decoded and isinstance(expected, str):
        from kraftwire.records import batches_to_json
        import base64

        assert decoded["batches"] == batches_to_json(base64.b64decode(expected))["batches"]
        return
    if isinstance(expected, dict):
        assert isinstance(decoded, dict) and decoded.keys() == expected.keys(), (decoded, expected)
        for key in expected:
            assert_json_equal(decoded[key], expected[key])
    elif isinstance(expected, list):
        assert isinstance(decoded, list) and len(decoded) == len(expected)
        for a, b in zip(decoded, expected):
            assert_json_equal(a, b)
    else:
        assert decoded == expected


def fragmented(packets, size, rng, duplicate=True):
    """Every data packet (all but the 3 of the handshake and the 3 of the close) sent as fragments
    of ``size`` bytes, in a shuffled order, with one fragment of each sent twice; returns the
    packets and, for each original packet, the number of the packet that completes it."""
    out, completes = [], []
    for ident, (ts, ip) in enumerate(packets, start=1):
        if not 3 < ident <= len(packets) - 3:
            out.append((ts, ip))
            completes.append(len(out))
            continue
        pieces = ip_fragments(ip, size, ident)
        rng.shuffle(pieces)
        if duplicate:
            pieces.insert(rng.randrange(len(pieces)), rng.choice(pieces))
        last = max(i for i, p in enumerate(pieces) if p not in pieces[:i])  # the last new one
        out.extend((ts + i, piece) for i, piece in enumerate(pieces))
        completes.append(len(out) - len(pieces) + last + 1)
    return out, completes
