"""The frames and connections tables, against captures whose frames, packets and bytes are known."""

from __future__ import annotations

import json

import pytest

from captures import T0, conversation, pcap_of, write
from kraftwire.cli import main
from kraftwire.spark_decoders import decode_local
from kraftwire.spark_decoders.packets.layers import ACK, RST
from kraftwire.spark_decoders.kafka.rows import timestamp
from kraftwire.synthetic_capture import Conversation
from kraftwire.spark_decoders.output.tables import column_names
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(120)


def _frames(path):
    return decode_local([path], table="frames")


def _connections(path):
    return decode_local([path], table="connections")


def test_frames_are_the_exchanges_halves(tmp_path):
    exchanges = kraft_exchanges(14, seed=5)
    path = write(tmp_path, "k.pcap", pcap_of(conversation(exchanges, mss=200).packets))
    rows = decode_local([path])
    frames = _frames(path)
    assert len(frames) == 2 * len(exchanges) and all(f["status"] == "ok" for f in frames)
    by_key = {(f["direction"], f["correlation_id"]): f for f in frames}
    for row in rows:
        for direction in ("request", "response"):
            frame = by_key[(direction, row["correlation_id"])]
            assert (frame["frame"], frame["size"], frame["ts"]) == (
                row[f"{direction}_frame"],
                row[f"{direction}_size"],
                row[f"{direction}_ts"],
            )
            assert (frame["api_key"], frame["api_version"], frame["conn_id"]) == (
                row["api_key"],
                row["api_version"],
                row["conn_id"],
            )
    requests = [f for f in frames if f["direction"] == "request"]
    assert [f["frame_index"] for f in requests] == list(range(len(exchanges)))
    assert [f["frame"] for f in frames] == sorted(f["frame"] for f in frames)


def _segmented(exchanges, mss):
    conv = Conversation(("10.0.0.1", 40001), ("10.0.0.2", 9093))
    plan = []
    for e in exchanges:
        plan.append((True, conv.segments(True, e.request, mss)))
        plan.append((False, conv.segments(False, e.response, mss)))
    return conv, plan


def _emit(conv, plan, lost=()):
    ts = T0
    acked = {True: conv.client_isn, False: conv.server_isn}
    for from_client, segments in plan:
        for seq, data in segments:
            if (seq, data) not in lost:
                conv.emit(
                    ts, conv.segment_packet(from_client, seq, data, ack=acked[not from_client])
                )
                ts += 1000
        acked[from_client] = segments[-1][0] + len(segments[-1][1])


def test_frame_statuses_of_a_damaged_stream(tmp_path):
    """No handshake and the first request's head missing (its response has no request), and a
    segment lost inside the Fetch response (that frame is cut by a gap)."""
    exchanges = kraft_exchanges(7, seed=6)
    conv, plan = _segmented(exchanges, mss=9)
    plan[0] = (True, plan[0][1][2:])
    fetch = 2 * [e.api_key for e in exchanges].index(1) + 1
    _emit(conv, plan, lost=[plan[fetch][1][3]])
    frames = _frames(write(tmp_path, "damaged.pcap", pcap_of(conv.packets)))
    first_response = next(f for f in frames if f["direction"] == "response")
    assert first_response["status"] == "no_request"
    assert (first_response["correlation_id"], first_response["api_key"]) == (1, None)
    cut = [f for f in frames if f["status"] == "gap"]
    assert [(f["direction"], f["api_key"]) for f in cut] == [("response", 1)]
    assert len(frames) == 2 * 7 - 1  # the first request is not a frame: its head is missing
    assert sum(f["status"] == "ok" for f in frames) == 2 * 7 - 3


def test_snaplen_cut_frame_is_truncated(tmp_path):
    exchanges = kraft_exchanges(7, seed=1)
    data = pcap_of(conversation(exchanges, mss=1460).packets, snaplen=54 + 40 + 30)
    path = write(tmp_path, "snap.pcap", data)
    cut = [f for f in _frames(path) if f["status"] != "ok"]
    assert [(f["direction"], f["api_key"], f["status"]) for f in cut] == [
        ("response", 1, "truncated")
    ]
    [connection] = _connections(path)
    assert connection["truncated"] and not connection["midstream_start"]


def test_connection_counts_packets_bytes_frames_and_retransmits(tmp_path):
    """Every request in 16-byte segments; the first one's first segment is sent twice, then a
    segment overlapping its end by 10 bytes and bringing 6 new ones, which the next segment
    repeats: len(first) + 10 + 6 bytes retransmitted, 3 packets more from the client."""
    exchanges = kraft_exchanges(14, seed=8)
    conv = Conversation(("10.0.0.1", 40001), ("10.0.0.2", 9093))
    conv.handshake(T0)
    ts, sent = T0 + 10**6, {True: 0, False: 0}
    for e in exchanges:
        for from_client, data in ((True, e.request), (False, e.response)):
            segments = conv.segments(from_client, data, 16)
            if from_client and e is exchanges[0]:
                (seq, first), (_, second) = segments[:2]
                resent = [(seq, first), (seq + len(first) - 10, first[-10:] + second[:6])]
                segments[1:1] = resent
            for seq, payload in segments:
                conv.emit(ts, conv.segment_packet(from_client, seq, payload))
                sent[from_client] += 1
                ts += 1000
    conv.close(ts)
    path = write(tmp_path, "retransmits.pcap", pcap_of(conv.packets))
    [row] = _connections(path)
    assert (row["packets_to_server"], row["packets_to_client"]) == (
        sent[True] + 4,
        sent[False] + 2,
    )
    first = len(exchanges[0].request[:16])
    assert (row["bytes_to_server"], row["bytes_to_client"]) == (
        sum(len(e.request) for e in exchanges) + first + 16,
        sum(len(e.response) for e in exchanges),
    )
    assert row["retransmitted_bytes"] == first + 10 + 6
    assert (row["requests"], row["responses"], row["gaps"]) == (14, 14, 0)
    assert (row["client_ip"], row["client_port"], row["server_port"]) == ("10.0.0.1", 40001, 9093)
    assert row["first_frame"] == 1
    assert (row["first_ts"], row["last_ts"]) == (timestamp(T0), timestamp(ts + 2000))
    assert row["closed"] and not (row["reset"] or row["midstream_start"] or row["truncated"])
    assert decode_local([path])[0]["status"] == "ok"  # the retransmissions did not damage it


def test_connection_flags_midstream_gap_and_reset(tmp_path):
    exchanges = kraft_exchanges(7, seed=1)
    conv, plan = _segmented(exchanges, mss=1460)
    _emit(conv, plan, lost=plan[4][1])  # a whole request lost, later acknowledged: a gap
    conv.emit(T0 + 10**9, conv._packet(True, T0 + 10**9, RST | ACK))
    [row] = _connections(write(tmp_path, "flags.pcap", pcap_of(conv.packets)))
    assert row["midstream_start"] and row["gaps"] == 1 and row["reset"] and row["closed"]
    assert (row["requests"], row["responses"]) == (6, 7)
    assert row["bytes_to_server"] == sum(len(e.request) for e in exchanges) - len(plan[4][1][0][1])


def test_port_reuse_gives_two_connection_rows(tmp_path):
    first = conversation(kraft_exchanges(3, seed=1))
    second = conversation(kraft_exchanges(2, seed=2), t0=T0 + 10**10, client_isn=777)
    rows = _connections(write(tmp_path, "reuse.pcap", pcap_of(first.packets + second.packets)))
    assert [(r["requests"], r["first_frame"]) for r in rows] == [
        (3, 1),
        (2, len(first.packets) + 1),
    ]
    assert rows[0]["conn_id"] != rows[1]["conn_id"] and all(r["closed"] for r in rows)


@pytest.mark.parametrize("table", ["frames", "connections"])
def test_cli_table_option_writes_that_tables_columns(table, tmp_path):
    path = write(tmp_path, "k.pcap", pcap_of(conversation(kraft_exchanges(7, seed=2)).packets))
    out = tmp_path / "rows.jsonl"
    assert main(["decode", path, "--table", table, "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == (14 if table == "frames" else 1)
    assert all(list(row) == list(column_names(table)) for row in rows)
    pq = pytest.importorskip("pyarrow.parquet")
    parquet = tmp_path / "rows.parquet"
    assert (
        main(["decode", path, "--table", table, "--format", "parquet", "--out", str(parquet)]) == 0
    )
    assert pq.read_table(parquet).to_pylist() == decode_local([path], table=table)


def test_capture_ending_inside_a_frame_flags_it_truncated(tmp_path):
    exchanges = kraft_exchanges(4, seed=3)  # the last is a Fetch with a long response
    conv, plan = _segmented(exchanges, mss=20)
    plan[-1] = (False, plan[-1][1][:2])  # the capture stops 40 bytes into the last response
    _emit(conv, plan)
    path = write(tmp_path, "cut.pcap", pcap_of(conv.packets))
    last = _frames(path)[-1]
    assert (last["direction"], last["api_key"], last["status"]) == ("response", 1, "truncated")
    [connection] = _connections(path)
    assert connection["truncated"] and not connection["closed"]
