"""The JSON text of decoded bodies: which writer writes it must never show in the text."""

from __future__ import annotations

import json
import struct

import pytest

import kraftwire.generated as bundled
from kraftwire.records import encode_batch, encode_metadata_record
from kraftwire.spark_decoders.kafka.bodies import BodyDecoder

FETCH = 1
FETCH_VERSION = 12  # topics by name


def _metadata_frame(package, record_name: str, fields: dict) -> bytes:
    """One metadata-log record value, at version 0."""
    return encode_metadata_record(package.lookup(record_name).from_json(fields, 0), 0)


def _fetch_response_payload(
    package, topic: str, records: bytes, version: int = FETCH_VERSION
) -> bytes:
    """A Fetch response of one partition; from version 13 on, ``topic`` is a topic id (base64)."""
    response = package.lookup("FetchResponse").from_json(
        {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "sessionId": 0,
            "responses": [
                {
                    ("topicId" if version >= 13 else "topic"): topic,
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
        version,
    )
    response.responses[0].partitions[0].records = records
    frame = package.encode_response(response, version, 7)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


# The metadata log's topic, by name and (Fetch v13+) by its fixed topic id (UUID 1).
METADATA_TOPIC_BY = [(FETCH_VERSION, "__cluster_metadata"), (13, "AAAAAAAAAAAAAAAAAAAAAQ")]


@pytest.mark.parametrize("version, topic", METADATA_TOPIC_BY)
def test_a_float_in_a_metadata_record_is_written_as_json_writes_it(upstream, version, topic):
    """A ClientQuotaRecord's float64 value in ``__cluster_metadata`` traffic: Python's json writes
    0.0000001 as ``1e-07`` (orjson, the faster writer of float-free bodies, would write ``1e-7``).
    """
    quota = _metadata_frame(
        upstream,
        "ClientQuotaRecord",
        {
            "entity": [{"entityType": "client-id", "entityName": "c1"}],
            "key": "producer_byte_rate",
            "value": 1e-07,
            "remove": False,
        },
    )
    payload = _fetch_response_payload(
        upstream, topic, encode_batch([(None, quota, [], 0)]), version
    )
    decoded = BodyDecoder(upstream).response(payload, FETCH, version)
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


def test_a_record_header_key_that_is_not_utf8_gives_text_arrow_and_files_can_hold(upstream):
    """Record header keys that were not UTF-8 come back as surrogateescape text; the body's JSON
    must still be UTF-8 text (Arrow, Parquet and jsonl refuse lone surrogates), with the key's
    value intact once parsed."""
    import pyarrow as pa

    version = 9
    produce = upstream.lookup("ProduceRequest").from_json(
        {
            "transactionalId": None,
            "acks": -1,
            "timeoutMs": 1500,
            "topicData": [{"name": "events", "partitionData": [{"index": 0, "records": ""}]}],
        },
        version,
    )
    produce.topic_data[0].partition_data[0].records = encode_batch(
        [(b"k", b"v", [(b"\xffkey".decode("utf-8", "surrogateescape"), b"h")], 0)]
    )
    payload = upstream.encode_request(produce, version, 5, "client")[4:]
    decoded = BodyDecoder(upstream).request(payload, 0, version)
    assert decoded.problem is None, decoded.message
    decoded.json_text.encode("utf-8")  # no lone surrogate left in the text
    pa.array([decoded.json_text], pa.string())
    view = json.loads(decoded.json_text)
    batch = view["topicData"][0]["partitionData"][0]["records"]["batches"][0]
    assert batch["records"][0]["headers"][0]["key"] == "\udcffkey"


@pytest.mark.parametrize("version, topic", METADATA_TOPIC_BY)
def test_metadata_records_view_through_the_compiled_views_as_through_to_json(
    upstream, version, topic
):
    """``message_view=json_view`` (the decoders' faster view of each metadata record) gives
    exactly the records layer's own view: every field, tagged and default ones included."""
    from kraftwire.records import batches_to_json

    frames = [
        _metadata_frame(
            upstream, "TopicRecord", {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAg"}
        ),
        _metadata_frame(
            upstream,
            "PartitionRecord",
            {
                "partitionId": 4,
                "topicId": "AAAAAAAAAAAAAAAAAAAAAg",
                "replicas": [1, 2],
                "isr": [1],
                "removingReplicas": [],
                "addingReplicas": [],
                "leader": 1,
                "leaderRecoveryState": 1,
                "leaderEpoch": 3,
                "partitionEpoch": 5,
            },
        ),
    ]
    records = encode_batch([(None, frame, [], 0) for frame in frames])
    payload = _fetch_response_payload(upstream, topic, records, version)
    decoded = BodyDecoder(upstream).response(payload, FETCH, version)
    view = json.loads(decoded.json_text)["responses"][0]["partitions"][0]["records"]
    expected = batches_to_json(records, values="metadata", family="metadata", package=upstream)
    assert [r["metadata"]["name"] for r in expected["batches"][0]["records"]] == [
        "TopicRecord",
        "PartitionRecord",
    ]
    assert view == json.loads(json.dumps(expected))


@pytest.mark.skipif(
    bundled.CODEC_IMPLEMENTATION == "pure",
    reason="compiled codecs not built (make native) or KRAFTWIRE_PURE is set",
)
def test_a_body_its_compiled_class_writes_is_what_its_view_gives():
    """Compiled classes write the text of a body without records or floats themselves
    (``to_json_text``); every bundled vector decodes to the same columns with that way turned
    off, which writes the view (``jsonview.dumps``)."""
    from shared import shared_path
    from vectors import load_vectors

    writing, viewing = BodyDecoder(bundled), BodyDecoder(bundled)
    written = 0
    for vector in load_vectors(shared_path("kafka-vectors")):
        if vector.spec not in bundled.SPECS:
            continue
        body_class = bundled.lookup(vector.spec)
        api_key = body_class.API_KEY
        if api_key is None or not writing.knows(api_key, vector.version):
            continue
        message = body_class.decode(vector.data, vector.version)
        request = vector.spec.endswith("Request")
        if request:
            frame = bundled.encode_request(message, vector.version, 7, "tester")
        else:
            frame = bundled.encode_response(message, vector.version, 7)
        decode = "request" if request else "response"
        codec = viewing._codec(api_key, vector.version, request)
        codec.writes_text = False
        expected = getattr(viewing, decode)(frame[4:], api_key, vector.version)
        assert getattr(writing, decode)(frame[4:], api_key, vector.version) == expected
        written += writing._codec(api_key, vector.version, request).writes_text
    assert written > 100
