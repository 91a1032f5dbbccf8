"""Bodies with records fields written as text: compiled codecs' ``to_json_text`` with the decoders'
records writer (``records.write_batches_json_text``) against the text of the view the decoders
wrote before (``_text_of_view``: the view, each records field expanded, ``jsonview.dumps``).

The codec classes here are the native modules of Kafka's specs run as interpreted Python (as
tests/codegen/native/test_json_views.py runs them), so the text path runs without a C compiler,
behind a package that hands them out; the records writer is the decoders' own (compiled when
``make native`` built the records layer). Each body is decoded both ways by the same decoder, and
the columns must be equal, character for character, whichever way the text path went: written, or
given up on and left to the view.
"""

from __future__ import annotations

import struct
import sys
import types
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwire.codegen.native.emit import native_module_source
from kraftwire.records import (
    encode_batch,
    encode_control_batch,
    encode_metadata_record,
    end_txn_marker_batch,
)
from kraftwire.spark_decoders.kafka.bodies import BodyDecoder

# Specs whose classes the package below hands out compiled-style: the bodies with records fields,
# and metadata-log records (ClientQuotaRecord's value is a float64, which has no text writer).
NATIVE_STEMS = [
    "FetchRequest",
    "FetchResponse",
    "ProduceRequest",
    "ProduceResponse",
    "FetchSnapshotResponse",
    "ShareFetchResponse",
    "TopicRecord",
    "PartitionRecord",
    "ClientQuotaRecord",
    "LeaderChangeMessage",
    "EndTxnMarker",
]
FETCH, PRODUCE = 1, 0
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # base64url of UUID(int=1)


class NativePackage(types.ModuleType):
    """``upstream`` with the classes of ``NATIVE_STEMS`` replaced by their native modules' classes,
    run interpreted (each module registered, as the decoders read a class's module)."""

    def __init__(self, upstream: types.ModuleType, specs: dict[str, Any]) -> None:
        super().__init__(f"{upstream.__name__}_native_view")
        self.upstream = upstream
        self.natives: dict[type, type] = {}
        for stem in NATIVE_STEMS:
            pure_class = upstream.lookup(stem)
            name = f"{upstream.__name__}._native_{specs[stem].module}"
            native = types.ModuleType(name)
            source = native_module_source(specs[stem], upstream.__name__)
            exec(compile(source, f"<{name}>", "exec"), native.__dict__)
            pure = sys.modules[pure_class.__module__]
            loader = sys.modules[f"{upstream.__name__}._native_loader"]
            native.bind(loader.Twin(pure, native, list(pure.__all__)))
            sys.modules[name] = native
            self.natives[pure_class] = getattr(native, pure_class.__name__)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.upstream, name)

    def _native(self, cls: type) -> type:
        return self.natives.get(cls, cls)

    def lookup(self, stem: str) -> type:
        return self._native(self.upstream.lookup(stem))

    def request_class(self, api_key: int) -> type:
        return self._native(self.upstream.request_class(api_key))

    def response_class(self, api_key: int) -> type:
        return self._native(self.upstream.response_class(api_key))

    def metadata_record_class(self, record_type: int, family: str | None = None) -> type:
        return self._native(self.upstream.metadata_record_class(record_type, family))


@pytest.fixture(scope="module")
def native_package(upstream) -> NativePackage:
    from shared import shared_path

    from kraftwire.codegen.generate import load_specs

    specs = {spec.stem: spec for spec in load_specs([shared_path("kafka-schemas")])}
    return NativePackage(upstream, specs)


def both_ways(decoder: BodyDecoder, payload: bytes, api_key: int, version: int, request: bool):
    """The body's columns through the text path and through the view; whether the text path
    wrote the text (None: it gave up, and the decoder wrote the view)."""
    codec = decoder._codec(api_key, version, request)
    assert codec.writes_text and codec.holds_records
    decode = decoder.request if request else decoder.response
    written = decode(payload, api_key, version)
    body, _ = codec.read(payload, codec.body_start(payload), version)
    text = body.to_json_text(version, decoder._records_text)
    codec.writes_text = False
    try:
        viewed = decode(payload, api_key, version)
    finally:
        codec.writes_text = True
    return written, viewed, text


def _frame_body(package, message, version: int, request: bool) -> bytes:
    if request:
        frame = package.encode_request(message, version, 7, "tester")
    else:
        frame = package.encode_response(message, version, 7)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


def fetch_response(package, version: int, topic: str, records: list[bytes]) -> bytes:
    """A Fetch response of one topic (named, or from v13 on by id) with a partition per buffer."""
    partitions = [
        {
            "partitionIndex": index,
            "errorCode": 0,
            "highWatermark": 1,
            "lastStableOffset": 1,
            "logStartOffset": 0,
            "abortedTransactions": [],
            "preferredReadReplica": -1,
            "records": "",
        }
        for index in range(len(records))
    ]
    response = package.upstream.lookup("FetchResponse").from_json(
        {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "sessionId": 0,
            "responses": [
                {("topicId" if version >= 13 else "topic"): topic, "partitions": partitions}
            ],
        },
        version,
    )
    for partition, data in zip(response.responses[0].partitions, records):
        partition.records = data
    return _frame_body(package.upstream, response, version, False)


def produce_request(package, version: int, topic: str, records: list[bytes]) -> bytes:
    request = package.upstream.lookup("ProduceRequest").from_json(
        {
            "transactionalId": None,
            "acks": -1,
            "timeoutMs": 1500,
            "topicData": [
                {
                    "name": topic,
                    "partitionData": [
                        {"index": index, "records": ""} for index in range(len(records))
                    ],
                }
            ],
        },
        version,
    )
    for partition, data in zip(request.topic_data[0].partition_data, records):
        partition.records = data
    return _frame_body(package.upstream, request, version, True)


# -- Kafka's vectors -------------------------------------------------------------------------------


def test_every_vector_of_a_body_with_records_gives_the_view_s_columns(native_package):
    """Every vector of ../shared whose spec has a records field, as a request or response frame."""
    from shared import shared_path
    from vectors import load_vectors

    decoder = BodyDecoder(native_package)
    checked = written = 0
    for vector in load_vectors(shared_path("kafka-vectors")):
        if vector.spec not in NATIVE_STEMS or not vector.spec.endswith(("Request", "Response")):
            continue
        body_class = native_package.upstream.lookup(vector.spec)
        request = vector.spec.endswith("Request")
        if not native_package.lookup(vector.spec).RECORDS_JSON_TEXT:
            continue
        codec = decoder._codec(body_class.API_KEY, vector.version, request)
        if not codec.holds_records:
            continue
        message = body_class.decode(vector.data, vector.version)
        payload = _frame_body(native_package.upstream, message, vector.version, request)
        by_text, by_view, text = both_ways(
            decoder, payload, body_class.API_KEY, vector.version, request
        )
        assert by_text == by_view, vector.name
        assert by_text.problem is None, vector.name
        checked += 1
        written += text is not None
    assert checked > 50
    assert written == checked  # no vector needed the view


# -- records bodies made up ------------------------------------------------------------------------

TOPICS_BY_NAME = ["__cluster_metadata", "events", "", "__cluster_metadata2"]
TOPIC_IDS = [METADATA_TOPIC_ID, "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAA"]
# key and value bytes, header keys that are not UTF-8 (their view holds lone surrogates)
SOME_BYTES = st.one_of(st.none(), st.binary(max_size=12))
HEADER_KEYS = st.one_of(st.text(max_size=6), st.sampled_from(["\udcffkey", "k\u00e9", 'q"\\']))
HEADERS = st.lists(st.tuples(HEADER_KEYS, SOME_BYTES), max_size=2)
CODECS = st.sampled_from(["none", "none", "gzip", "snappy", "lz4", "zstd"])


@st.composite
def metadata_values(draw) -> bytes:
    """A ``__cluster_metadata`` record value: a known record (a float one among them), an unknown
    record type, a longer frame, or bytes that are no frame."""
    kind = draw(st.sampled_from(["topic", "partition", "quota", "unknown", "long", "junk"]))
    if kind == "topic":
        fields = {"name": draw(st.text(max_size=8)), "topicId": METADATA_TOPIC_ID}
        return _metadata(draw, "TopicRecord", fields)
    if kind == "partition":
        fields = {
            "partitionId": draw(st.integers(0, 300)),
            "topicId": "AAAAAAAAAAAAAAAAAAAAAg",
            "replicas": draw(st.lists(st.integers(0, 5), max_size=3)),
            "isr": [1],
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": 1,
            "leaderRecoveryState": 0,
            "leaderEpoch": 3,
            "partitionEpoch": 5,
        }
        return _metadata(draw, "PartitionRecord", fields)
    if kind == "quota":
        fields = {
            "entity": [{"entityType": "client-id", "entityName": "c1"}],
            "key": "producer_byte_rate",
            "value": draw(st.sampled_from([1e-07, 1.5, 1e22, float("nan")])),
            "remove": False,
        }
        return _metadata(draw, "ClientQuotaRecord", fields)
    if kind == "unknown":
        return bytes([1, 120, 0]) + draw(st.binary(max_size=4))
    if kind == "long":  # a record type of two varint bytes: not the common frame
        return bytes([1, 0x82, 0x01, 0]) + draw(st.binary(max_size=4))
    return draw(st.binary(max_size=6))


def _metadata(draw, stem: str, fields: dict) -> bytes:
    return encode_metadata_record(PACKAGE[0].upstream.lookup(stem).from_json(fields, 0), 0)


PACKAGE: list[NativePackage] = []  # the fixture's package, for the strategies


@st.composite
def batches(draw) -> bytes:
    """One batch: of data records, of metadata-log values, or a control batch."""
    kind = draw(st.sampled_from(["data", "metadata", "metadata", "control", "marker"]))
    base_offset = draw(st.integers(0, 1 << 40))
    if kind == "marker":
        return end_txn_marker_batch(
            draw(st.booleans()), producer_id=7, producer_epoch=1, base_offset=base_offset
        )
    if kind == "control":
        return encode_control_batch([(draw(st.sampled_from([0, 1, 4])), None)], base_offset=3)
    if kind == "metadata":
        values = draw(st.lists(metadata_values(), min_size=1, max_size=3))
        records = [(None, value, [], 0) for value in values]
    else:
        records = draw(
            st.lists(
                st.tuples(SOME_BYTES, SOME_BYTES, HEADERS, st.just(1700000000000)),
                min_size=1,
                max_size=3,
            )
        )
    return encode_batch(
        records,
        base_offset=base_offset,
        compression=draw(CODECS),
        transactional=draw(st.booleans()),
    )


@st.composite
def records_fields(draw) -> bytes:
    """Back-to-back batches, maybe with a partial tail, a flipped byte or garbage; or nothing."""
    data = b"".join(draw(st.lists(batches(), max_size=3)))
    damage = draw(st.sampled_from(["none", "none", "cut", "flip", "garbage", "legacy"]))
    if damage == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    elif damage == "garbage":
        data += draw(st.binary(min_size=1, max_size=40))
    elif damage == "legacy":  # a magic 1 message set's header: the view's object path reads it
        data = struct.pack(">qi", 0, 14) + b"\0" * 4 + b"\x01" + data[17:]
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_made_up_fetch_responses_give_the_view_s_columns(native_package, data):
    PACKAGE[:] = [native_package]
    version = data.draw(st.sampled_from([4, 12, 13, 17]))
    topics = TOPIC_IDS if version >= 13 else TOPICS_BY_NAME
    topic = data.draw(st.sampled_from(topics))
    fields = data.draw(st.lists(records_fields(), min_size=1, max_size=2))
    payload = fetch_response(native_package, version, topic, fields)
    by_text, by_view, _ = both_ways(BodyDecoder(native_package), payload, FETCH, version, False)
    assert by_text == by_view


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_made_up_produce_requests_give_the_view_s_columns(native_package, data):
    PACKAGE[:] = [native_package]
    version = data.draw(st.sampled_from([3, 9, 12]))
    topic = data.draw(st.sampled_from(TOPICS_BY_NAME))
    fields = data.draw(st.lists(records_fields(), min_size=1, max_size=2))
    payload = produce_request(native_package, version, topic, fields)
    by_text, by_view, _ = both_ways(BodyDecoder(native_package), payload, PRODUCE, version, True)
    assert by_text == by_view


# -- which way each kind of body goes --------------------------------------------------------------


def _metadata_batch(package, *frames: tuple[str, dict]) -> bytes:
    values = [
        encode_metadata_record(package.upstream.lookup(stem).from_json(fields, 0), 0)
        for stem, fields in frames
    ]
    return encode_batch([(None, value, [], 0) for value in values])


TOPIC_RECORD = ("TopicRecord", {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAg"})
QUOTA_RECORD = (
    "ClientQuotaRecord",
    {
        "entity": [{"entityType": "client-id", "entityName": "c1"}],
        "key": "producer_byte_rate",
        "value": 1e-07,
        "remove": False,
    },
)


@pytest.mark.parametrize("version, topic", [(12, "__cluster_metadata"), (13, METADATA_TOPIC_ID)])
def test_metadata_records_are_written_as_text_in_the_metadata_topic(native_package, version, topic):
    decoder = BodyDecoder(native_package)
    records = _metadata_batch(native_package, TOPIC_RECORD) + end_txn_marker_batch(
        True, producer_id=1, producer_epoch=0
    )
    payload = fetch_response(native_package, version, topic, [records, b""])
    by_text, by_view, text = both_ways(decoder, payload, FETCH, version, False)
    assert by_text == by_view
    assert text is not None and text[0] == by_text.json_text
    assert '"metadata":{"type":2,"version":0,"name":"TopicRecord","data":{' in text[0]
    assert '"control":{"keyVersion":0,"type":1,"typeName":"COMMIT"' in text[0]


@pytest.mark.parametrize("topic", ["events", ""])
def test_other_topics_values_stay_base64(native_package, topic):
    decoder = BodyDecoder(native_package)
    payload = fetch_response(
        native_package, 12, topic, [_metadata_batch(native_package, TOPIC_RECORD)]
    )
    by_text, by_view, text = both_ways(decoder, payload, FETCH, 12, False)
    assert by_text == by_view and text is not None
    assert '"metadata"' not in text[0]


def test_a_float_is_written_as_the_view_with_floats_writes_it(native_package):
    payload = fetch_response(
        native_package, 12, "__cluster_metadata", [_metadata_batch(native_package, QUOTA_RECORD)]
    )
    by_text, by_view, text = both_ways(BodyDecoder(native_package), payload, FETCH, 12, False)
    assert by_text == by_view
    assert text is not None and '"value":1e-07' in text[0]  # json's float text, not orjson's 1e-7


def test_what_the_text_path_gives_up_on_goes_to_the_view(native_package):
    """A lone surrogate in a header key (the view escapes the whole body for it), and a corrupt
    batch (its view says why): no text from the writer, the view's columns in the row."""
    surrogate = encode_batch([(b"k", b"v", [("\udcffkey", b"h")], 0)])
    corrupt = bytearray(encode_batch([(b"k", b"v", [], 0)]))
    corrupt[-1] ^= 0xFF
    decoder = BodyDecoder(native_package)
    for records in (surrogate, bytes(corrupt)):
        payload = fetch_response(native_package, 12, "events", [records])
        by_text, by_view, text = both_ways(decoder, payload, FETCH, 12, False)
        assert text is None
        assert by_text == by_view and by_text.problem is None
    assert '"decodeError":"DecodeError: ' in by_text.json_text


def test_the_topic_handed_to_the_records_writer_is_the_innermost_that_names_one(native_package):
    """Fetch v13+ has a ``topic`` of "" beside the ``topic_id`` that counts."""
    seen: list[Any] = []

    def records(w: Any, data: bytes, topic: Any) -> None:
        seen.append(topic)
        w.write("null")

    for version, topic in [(12, "events"), (13, METADATA_TOPIC_ID)]:
        payload = fetch_response(native_package, version, topic, [b""])
        body_class = native_package.response_class(FETCH)
        start = BodyDecoder(native_package)._codec(FETCH, version, False).body_start(payload)
        body, _ = body_class.read(payload, start, version)
        assert body.to_json_text(version, records) is not None
    assert seen == ["events", uuid.UUID(int=1)]
