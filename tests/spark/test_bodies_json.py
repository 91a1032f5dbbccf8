"""The JSON text of decoded bodies: which writer writes it must never show in the text."""

from __future__ import annotations

import json
import struct

from kraftwire.records import encode_batch
from kraftwire.spark_decoders.bodies import BodyDecoder

FETCH = 1
FETCH_VERSION = 12  # topics by name


def _metadata_frame(package, record_name: str, record_type: int, fields: dict) -> bytes:
    """One metadata-log record value: frame version, record type, record version, then the body."""
    body = package.lookup(record_name).from_json(fields, 0).encode(0)
    return bytes([1, record_type, 0]) + body


def _fetch_response_payload(package, topic: str, records: bytes) -> bytes:
    response = package.lookup("FetchResponse").from_json(
        {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "sessionId": 0,
            "responses": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partitionIndex": 0,
                            "errorCode": 0,
                            "highWatermark": 1,
                            "lastStableOffset": 1,
                            "logStartOffset": 0,
                            "abortedTransactions": [],
                            "preferredReadReplica": -1,
                            "records": "",
                        }
                    ],
                }
            ],
        },
        FETCH_VERSION,
    )
    response.responses[0].partitions[0].records = records
    frame = package.encode_response(response, FETCH_VERSION, 7)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


def test_a_float_in_a_metadata_record_is_written_as_json_writes_it(upstream):
    """A ClientQuotaRecord's float64 value in ``__cluster_metadata`` traffic: Python's json writes
    0.0000001 as ``1e-07`` (orjson, the faster writer of float-free bodies, would write ``1e-7``)."""
    quota = _metadata_frame(
        upstream,
        "ClientQuotaRecord",
        14,
        {
            "entity": [{"entityType": "client-id", "entityName": "c1"}],
            "key": "producer_byte_rate",
            "value": 1e-07,
            "remove": False,
        },
    )
    payload = _fetch_response_payload(
        upstream, "__cluster_metadata", encode_batch([(None, quota, [], 0)])
    )
    decoded = BodyDecoder(upstream).response(payload, FETCH, FETCH_VERSION)
    assert decoded.problem is None, decoded.message
    view = json.loads(decoded.json_text)
    records = view["responses"][0]["partitions"][0]["records"]["batches"][0]["records"]
    assert records[0]["metadata"]["data"]["value"] == 1e-07
    assert '"value":1e-07' in decoded.json_text
    assert decoded.json_text == json.dumps(view, ensure_ascii=False, separators=(",", ":"))


def test_a_body_of_other_traffic_is_the_same_text_either_writer_writes(upstream):
    payload = _fetch_response_payload(
        upstream, "events", encode_batch([("k\u00e9".encode(), b"v", [], 0)])
    )
    decoded = BodyDecoder(upstream).response(payload, FETCH, FETCH_VERSION)
    assert decoded.problem is None, decoded.message
    view = json.loads(decoded.json_text)
    assert decoded.json_text == json.dumps(view, ensure_ascii=False, separators=(",", ":"))


def test_a_float64_field_of_a_body_is_written_as_json_writes_it(upstream):
    version = 1
    response = upstream.lookup("DescribeClientQuotasResponse").from_json(
        {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "errorMessage": None,
            "entries": [
                {
                    "entity": [{"entityType": "user", "entityName": "u1"}],
                    "values": [{"key": "request_percentage", "value": 1e-07}],
                }
            ],
        },
        version,
    )
    payload = upstream.encode_response(response, version, 3)[4:]
    decoded = BodyDecoder(upstream).response(payload, 48, version)
    assert decoded.problem is None, decoded.message
    assert '"value":1e-07' in decoded.json_text
