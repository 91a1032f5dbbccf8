"""Captures of several nodes decoded together: an exchange two captures saw is one row, which names
both files; exchanges only one capture saw, or repeated later, stay rows of their own."""

from __future__ import annotations

import json

import pytest

from captures import T0, conversation, pcap_of, write
from kraftwire.cli import main
from kraftwire.spark_decoders.api import decode_local
from kraftwire.spark_decoders.output.sightings import merge_sightings
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

EXCHANGES = kraft_exchanges(6, seed=4)


def node_capture(tmp_path, name: str, exchanges=EXCHANGES, shift_ns: int = 0, **options) -> str:
    """One node's capture of the connection: its own sequence numbers, its own clock."""
    conv = conversation(exchanges, t0=T0 + shift_ns, **options)
    return write(tmp_path, name, pcap_of(conv.packets))


@pytest.fixture
def two_nodes(tmp_path) -> list[str]:
    client = node_capture(tmp_path, "node1.pcap")
    server = node_capture(tmp_path, "node2.pcap", shift_ns=40_000, client_isn=91, server_isn=7)
    return [client, server]


def test_an_exchange_both_captures_saw_is_one_row_naming_both(two_nodes):
    rows = decode_local(two_nodes)
    assert len(rows) == len(EXCHANGES)
    assert [r["correlation_id"] for r in rows] == [e.correlation_id for e in EXCHANGES]
    assert all(r["capture_files"] == two_nodes for r in rows)
    assert all(r["capture_file"] == two_nodes[0] and r["status"] == "ok" for r in rows)
    one = decode_local(two_nodes[:1])
    assert [r["request_json"] for r in rows] == [r["request_json"] for r in one]
    assert all(r["capture_files"] == [two_nodes[0]] for r in one)


def test_the_table_and_jsonl_show_the_capture_files(two_nodes, tmp_path, capsys):
    assert main(["decode", *two_nodes]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[0] == "capture" and lines[-1] == f"{len(EXCHANGES)} exchanges"
    assert all(line.split()[0] == "node1.pcap,node2.pcap" for line in lines[1:-1])
    out = tmp_path / "rows.jsonl"
    assert main(["decode", *two_nodes, "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["capture_files"] for row in rows] == [two_nodes] * len(EXCHANGES)


def test_the_more_complete_sighting_is_kept(tmp_path):
    """The server's capture ends before the last response: the client's row of it is kept."""
    client = node_capture(tmp_path, "client.pcap")
    cut = conversation(EXCHANGES, t0=T0 + 40_000, close=False, client_isn=91, server_isn=7)
    server = write(tmp_path, "server.pcap", pcap_of(cut.packets[:-1]))
    rows = decode_local([client, server])
    assert len(rows) == len(EXCHANGES)
    last = rows[-1]
    assert last["status"] == "ok" and last["capture_file"] == client
    assert last["capture_files"] == [client, server]


def test_what_only_one_capture_saw_or_a_later_repeat_stays_apart(tmp_path):
    client = node_capture(tmp_path, "client.pcap")
    # the other capture saw only the first three exchanges
    partial = node_capture(tmp_path, "partial.pcap", EXCHANGES[:3], 40_000, client_isn=91)
    rows = decode_local([client, partial])
    assert [len(r["capture_files"]) for r in rows] == [2, 2, 2, 1, 1, 1]
    # the same requests an hour later (the port and correlation ids used again): other exchanges
    later = node_capture(tmp_path, "later.pcap", shift_ns=3600 * 10**9, client_isn=91)
    rows = decode_local([client, later])
    assert len(rows) == 2 * len(EXCHANGES) and all(len(r["capture_files"]) == 1 for r in rows)


def test_two_rows_of_one_capture_never_merge(two_nodes):
    rows = decode_local(two_nodes[:1])
    twice = [dict(rows[0]), dict(rows[0], capture_file="other.pcap", capture_files=["other.pcap"])]
    assert len(merge_sightings(twice)) == 1
    assert len(merge_sightings([rows[0], dict(rows[0]), twice[1]])) == 2


def test_among_answered_sightings_the_servers_shorter_latency_is_kept(two_nodes):
    client_view = decode_local(two_nodes[:1])[0]
    server_view = dict(
        client_view, capture_file="server.pcap", capture_files=["server.pcap"], latency_us=120.0
    )
    [merged] = merge_sightings([client_view, server_view])
    assert merged["capture_file"] == "server.pcap" and merged["latency_us"] == 120.0
    assert merged["capture_files"] == ["server.pcap", client_view["capture_file"]]
