"""The three real captures decode, and agree with tshark on every exchange tshark finds."""

from __future__ import annotations

import json
from collections import Counter
import shutil
import subprocess

import pytest

from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.spark_decoders.decode.pipeline import decode_files
from shared import shared_path

pytestmark = pytest.mark.timeout(600)
CAPTURES = ["ndpi-kafka.pcapng", "go-sniffer-kafka.pcap", "arkime-kafka.pcap"]
FIELDS = [
    "frame.number",
    "kafka.api_key",
    "kafka.api_version",
    "kafka.correlation_id",
    "kafka.client_id",
    "kafka.request_frame",
    "kafka.topic_name",
    "kafka.partition_id",
    "kafka.error",
    "kafka.throttle_time",
    "kafka.required_acks",
    "kafka.timeout",
    "kafka.node_id",
    "kafka.host",
    "kafka.port",
    "kafka.producer_id",
    "_ws.malformed",
    "kafka.unsupported_api_version",
]


def tshark_pdus(path: str) -> list[dict]:
    """One dict per Kafka PDU tshark finds: frame number, header fields, and body fields (lists)."""
    out = subprocess.run(
        [
            "tshark",
            "-r",
            path,
            "-o",
            "kafka.tcp.ports:9092,9093",
            "-Y",
            "kafka",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=|",
        ]
        + [a for f in FIELDS for a in ("-e", f)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pdus = []
    for line in out.splitlines():
        values = line.split("\t")
        pdus.append({f: [v for v in value.split("|") if v] for f, value in zip(FIELDS, values)})
    return pdus


def _json_values(text: str | None, key: str) -> list:
    found: list = []

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key and not isinstance(v, (dict, list)):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    if text:
        walk(json.loads(text))
    return found


# tshark field -> (our JSON key, side) for the body fields compared
BODY_FIELDS = {
    "kafka.topic_name": "name",
    "kafka.partition_id": "partitionIndex,index,partition",
    "kafka.error": "errorCode",
    "kafka.throttle_time": "throttleTimeMs",
    "kafka.required_acks": "acks",
    "kafka.timeout": "timeoutMs",
    "kafka.node_id": "nodeId,controllerId,leaderId",
    "kafka.host": "host",
    "kafka.port": "port",
    "kafka.producer_id": "producerId",
}


@pytest.fixture(scope="module")
def upstream_bodies(upstream):
    return BodyDecoder(upstream)


@pytest.mark.skipif(
    shutil.which("tshark") is None, reason="tshark is not installed (.ci/run installs it)"
)
@pytest.mark.parametrize("name", CAPTURES)
def test_agrees_with_tshark(name, upstream_bodies):
    path = str(shared_path("captures") / name)
    rows, stats = decode_files([path], upstream_bodies)
    assert stats[path].problems == []
    by_request = {r["request_frame"]: r for r in rows if r["request_frame"] is not None}
    by_response = {r["response_frame"]: r for r in rows if r["response_frame"] is not None}
    compared = 0
    for pdu in tshark_pdus(path):
        frame = int(pdu["frame.number"][0])
        is_response = bool(pdu["kafka.request_frame"]) or not pdu["kafka.api_version"]
        row = by_response.get(frame) if is_response else by_request.get(frame)
        assert row is not None, f"{name}: tshark's PDU in frame {frame} has no row"
        assert row["correlation_id"] == int(pdu["kafka.correlation_id"][0])
        if pdu["kafka.request_frame"]:
            assert row["request_frame"] == int(pdu["kafka.request_frame"][0])
        if not is_response:
            assert row["api_key"] == int(pdu["kafka.api_key"][0])
            assert row["api_version"] == int(pdu["kafka.api_version"][0])
            assert (row["client_id"] or "") == (pdu["kafka.client_id"] or [""])[0]
        if row["status"] != "ok" or pdu["kafka.unsupported_api_version"]:
            # Header only: a body Kafka's current specs no longer define (Produce v1), or one
            # tshark dissects as another version ("Dissecting assuming vN").
            continue
        text = row["response_json"] if is_response else row["request_json"]
        for field, key in BODY_FIELDS.items():
            theirs = pdu[field]
            if not theirs:
                continue
            ours = Counter(str(v) for k in key.split(",") for v in _json_values(text, k))
            # Every value tshark shows is one of ours (the JSON may hold more: tshark labels some
            # fields differently, e.g. a Metadata controller id is a kafka.node_id too).
            assert not Counter(theirs) - ours, (name, frame, field, theirs, ours)
            compared += 1
    assert name == "arkime-kafka.pcap" or compared > 0
