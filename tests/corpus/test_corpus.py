"""The corpus of real clients' captures (tests/corpus/data, ``make corpus``) decodes true to the wire:
every exchange the capture holds is a row with its numbers right and its bodies decoded, each body
re-encodes to exactly its bytes, tshark agrees field by field where it dissects, and the record
batches are the ones Kafka's DumpLogSegments finds in the broker's log.

The frames and exchanges the rows are held to are read by ``wire_frames``, which shares no code
with the decoders. Offline: only the committed files, Kafka's specs in ../shared (the codecs of
every API), tshark and Java (for DumpLogSegments; skipped with one line without it, failed in CI).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil

import pytest

from corpus_data import (
    DATA,
    capture_names,
    capture_path,
    entry,
    manifest,
    server_ports,
    wire_exchanges,
)
from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.spark_decoders.decode.pipeline import DecodeOptions, decode_files
from log_batches import as_dumped, dump_log_segments, produced_and_fetched, topic_ids
from wire_frames import connections, packet_times

pytestmark = pytest.mark.timeout(300)
NAMES = capture_names()


@pytest.fixture(scope="module")
def decoded(upstream):
    bodies = BodyDecoder(upstream)
    cache: dict[str, list[dict]] = {}

    def rows(name: str) -> list[dict]:
        if name not in cache:
            path = str(capture_path(name))
            options = DecodeOptions(server_ports=server_ports(name))
            found, stats = decode_files([path], bodies, options)
            assert stats[path].problems == [], (name, stats[path].problems)
            cache[name] = sorted(found, key=lambda row: row["request_frame"])
        return cache[name]

    return rows


def test_the_corpus_is_small_and_whole():
    files = [p for p in DATA.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 2_000_000
    assert all(p.stat().st_size < 400_000 for p in files)
    listed = {DATA / name for name in NAMES}
    listed |= {DATA / log for logs in manifest()["segments"].values() for log in logs}
    assert listed | {DATA / "manifest.json"} == set(files)


@pytest.mark.parametrize("name", NAMES)
def test_every_exchange_decodes(name, decoded):
    rows = decoded(name)
    wire = wire_exchanges(name)
    assert wire, f"{name} holds no exchange"
    ours = [
        (r["client_port"], r["correlation_id"], r["api_key"], r["api_version"])
        + (r["request_frame"], r["response_frame"], r["request_size"], r["response_size"])
        + (r["request_ts"], r["response_ts"])
        for r in rows
    ]
    times = packet_times(capture_path(name))
    truth = [
        (w.client_port, w.correlation_id, w.api_key, w.api_version)
        + (w.request.packet, w.response.packet if w.response else None)
        + (len(w.request.payload), len(w.response.payload) if w.response else None)
        + (timestamp(times[w.request.packet]), w.response and timestamp(times[w.response.packet]))
        for w in wire
    ]
    assert ours == truth
    last_request = {}
    for row in rows:
        last_request[row["client_port"]] = row["request_frame"]
    for row in rows:
        where = (name, row["request_frame"], row["api_name"], row["api_version"])
        assert row["decode_error"] is None, (where, row["decode_error"])
        assert row["request_json"] is not None, where
        if row["response_frame"] is None:
            # only the last request of a connection its client closed (a long poll, or
            # librdkafka's Metadata on its way out) or the capture stopped first
            assert row["status"] == "no_response", where
            assert row["request_frame"] == last_request[row["client_port"]], where
        else:
            assert row["status"] == "ok", where
            assert row["response_json"] is not None, where


def timestamp(ts_ns: int) -> dt.datetime:
    """A packet's time as the rows give it: UTC, to the microsecond (floored)."""
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
        microseconds=ts_ns // 1000
    )


def _reencodes(package, payload: bytes, header: str, header_version: int, body_class, version):
    """Header and body read with the codecs and written back: the same bytes, all of them."""
    head, start = package.lookup(header).read(payload, 0, header_version)
    assert head.encode(header_version) == payload[:start]
    body, end = body_class.read(payload, start, version)
    assert end == len(payload), f"{len(payload) - end} bytes after the body"
    assert body.encode(version) == payload[start:]


@pytest.mark.parametrize("name", NAMES)
def test_every_body_reencodes_to_its_bytes(name, upstream):
    bodies = 0
    for w in wire_exchanges(name):
        key, version = w.api_key, w.api_version
        where = (name, w.request.packet, key, version)
        assert key in upstream.APIS, where  # every API of the corpus has a codec
        try:
            _reencodes(
                upstream,
                w.request.payload,
                "RequestHeader",
                upstream.request_header_version(key, version),
                upstream.request_class(key),
                version,
            )
            bodies += 1
            if w.response is not None:
                _reencodes(
                    upstream,
                    w.response.payload,
                    "ResponseHeader",
                    upstream.response_header_version(key, version),
                    upstream.response_class(key),
                    version,
                )
                bodies += 1
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}") from None
    assert bodies > 0


def _require_java() -> None:
    from kafka_jars import missing

    reason = missing()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run the DumpLogSegments check)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def dumped(tmp_path_factory):
    """ "topic-partition" -> its batches as DumpLogSegments prints them."""
    _require_java()
    segments = manifest()["segments"]
    files = {tp: [DATA / log for log in logs] for tp, logs in segments.items()}
    printed = dump_log_segments([f for logs in files.values() for f in logs])
    return {tp: [b for f in logs for b in printed[f]] for tp, logs in files.items()}


def test_record_batches_equal_dump_log_segments(decoded, dumped):
    rows = [row for name in NAMES for row in decoded(name)]
    produced, fetched = produced_and_fetched(rows, topic_ids(rows))
    assert set(produced) == set(dumped) == set(fetched) - {"__cluster_metadata-0"}
    compared = 0
    for tp, log in dumped.items():
        by_offset = {batch["baseOffset"]: batch for batch in log}
        # Each produced batch is in the log as it was sent, at the offset the response gave it
        # (the producer sends one batch per partition and request); the broker sets the leader
        # epoch, which the producer leaves at -1.
        data = [batch for batch in log if not batch["isControl"]]
        accepted = [sent for sent in produced[tp] if sent[1] is not None]
        assert len(accepted) == len(data), tp
        for batch, offset, row in produced[tp]:
            if offset is None:  # refused (a new partition's leader not yet known): sent again
                assert batch["crc"] in {logged["crc"] for logged in data}, (
                    tp,
                    row["request_frame"],
                )
                compared += 1
        for (batch, offset, row), logged in zip(accepted, data):
            sent = as_dumped(batch) | {"baseOffset": offset, "partitionLeaderEpoch": 0}
            assert sent == logged, (tp, row["capture_file"], row["request_frame"])
            compared += 1
        # Each fetched batch is the log's batch at its offset, and every batch was fetched.
        for batch, row in fetched[tp]:
            assert as_dumped(batch) == by_offset[batch["baseOffset"]], (tp, row["request_frame"])
            compared += 1
        assert {batch["baseOffset"] for batch, _ in fetched[tp]} == set(by_offset), tp
    assert compared > 0


# tshark's body fields and the keys of our JSON that hold the same values.
BODY_FIELDS = {
    "kafka.topic_name": ("name", "topic"),
    "kafka.partition_id": ("partitionIndex", "index", "partition", "partitionIndexes"),
    "kafka.error": ("errorCode",),
    "kafka.throttle_time": ("throttleTimeMs",),
    "kafka.consumer_group": ("groupId", "key"),
    "kafka.member_id": ("memberId",),
    "kafka.generation_id": ("generationId", "generationIdOrMemberEpoch"),
    "kafka.producer_id": ("producerId",),
    "kafka.producer_epoch": ("producerEpoch",),
}
# A record batch's fields, compared batch by batch in order.
BATCH_FIELDS = {
    "kafka.batch_crc": lambda batch: batch["crc"],
    "kafka.batch_codec": lambda batch: batch["attributes"] & 7,
    "kafka.batch_last_offset_delta": lambda batch: batch["lastOffsetDelta"],
    "kafka.batch_base_sequence": lambda batch: batch["baseSequence"],
}
TSHARK_TALLY: dict[str, tuple[int, int, int]] = {}  # capture -> PDUs, fields compared, bodies


def _json_values(node, keys: tuple[str, ...], found: list) -> list:
    """The values of ``keys`` anywhere in ``node``: scalars, and the items of lists of scalars."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in keys and not isinstance(value, (dict, list)):
                found.append(value)
            elif (
                key in keys
                and isinstance(value, list)
                and not any(isinstance(v, (dict, list)) for v in value)
            ):
                found += value
            else:
                _json_values(value, keys, found)
    elif isinstance(node, list):
        for item in node:
            _json_values(item, keys, found)
    return found


def _batches(body) -> list[dict]:
    found: list[dict] = []
    if isinstance(body, dict):
        if "batches" in body and isinstance(body["batches"], list):
            return list(body["batches"])
        for value in body.values():
            found += _batches(value)
    elif isinstance(body, list):
        for item in body:
            found += _batches(item)
    return found


def _compare_pdu(pdu, row) -> tuple[int, list]:
    """(fields compared, disagreements) of one of tshark's PDUs and our row."""
    import json
    from collections import Counter

    side = "request" if pdu.request else "response"
    theirs_header = {
        "kafka.correlation_id": row["correlation_id"],
        "kafka.api_key": row["api_key"],
        "kafka.api_version" if pdu.request else "kafka.response.version": row["api_version"],
        "kafka.request_frame": None if pdu.request else row["request_frame"],
    }
    if pdu.request:
        theirs_header["kafka.client_id"] = row["client_id"]
    compared, wrong = 0, []
    for name, ours in theirs_header.items():
        shown = pdu.first(name)
        if shown is None or ours is None:
            continue
        compared += 1
        if shown != str(ours) and not (name == "kafka.client_id" and shown == "[ Null ]"):
            wrong.append((pdu.frame, side, name, shown, ours))
    if pdu.doubtful or not (pdu.request or pdu.first("kafka.request_frame")):
        # tshark doubts its reading, or dissected a response without its request's API
        return compared, wrong
    body = json.loads(row[f"{side}_json"])
    for name, keys in BODY_FIELDS.items():
        shown = [v for v in pdu.fields.get(name, []) if v != "[ Null ]"]
        if not shown:
            continue
        ours_values = Counter(str(v) for v in _json_values(body, keys, []))
        compared += 1
        if Counter(shown) - ours_values:  # every value tshark shows is one of ours
            wrong.append((pdu.frame, side, name, shown, sorted(ours_values)))
    batches = _batches(body)
    for name, value in BATCH_FIELDS.items():
        shown = pdu.fields.get(name, [])
        if shown or batches:
            compared += 1
            ours_values = [str(value(batch)) for batch in batches]
            if [str(int(v, 0)) for v in shown] != ours_values:
                wrong.append((pdu.frame, side, name, shown, ours_values))
    return compared, wrong


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
@pytest.mark.parametrize("name", NAMES)
def test_tshark_agrees_exchange_by_exchange(name, decoded):
    from tshark_pdus import tshark_pdus

    rows = decoded(name)
    by_request = {(r["client_port"], r["correlation_id"]): r for r in rows}
    pdus = tshark_pdus(capture_path(name), set(server_ports(name)))
    compared, bodies, wrong = 0, 0, []
    for pdu in pdus:
        correlation = pdu.first("kafka.correlation_id")
        assert correlation is not None, (name, pdu.frame)
        row = by_request.get((pdu.client_port, int(correlation)))
        assert row is not None, (name, pdu.frame, "a PDU tshark found has no row")
        frame = row["request_frame"] if pdu.request else row["response_frame"]
        compared += 1
        if frame != pdu.frame:
            wrong.append((pdu.frame, "frame", frame))
        fields, disagreements = _compare_pdu(pdu, row)
        compared += fields
        bodies += not pdu.doubtful and (pdu.request or pdu.first("kafka.request_frame") is not None)
        wrong += disagreements
    # tshark finds every request and response we do (it reads every header)
    requests = sum(p.request for p in pdus)
    responses = len(pdus) - requests
    assert requests == len(rows), name
    assert responses == sum(r["response_frame"] is not None for r in rows), name
    TSHARK_TALLY[name] = (len(pdus), compared, bodies)
    assert wrong == [], wrong[:10]


def test_the_wire_reader_refuses_a_hole():
    """The truth the rows are held to is only as good as its reader: a lost segment is an error."""
    from wire_frames import Direction

    side = Direction(start=1000)
    side.add(1000, b"\x00\x00\x00\x06ab", 1)
    side.add(1008, b"cd", 3)  # bytes 1006-1007 never came
    with pytest.raises(ValueError, match="a hole of 2 bytes"):
        side.frames()
    side.add(1006, b"xy", 4)  # out of order: the frame completes with the packet that filled it
    assert [(f.payload, f.packet) for f in side.frames()] == [(b"abxycd", 4)]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_the_tshark_comparison_sees_a_wrong_field(decoded):
    """A row whose topic, CRC or correlation id differed from tshark's would fail the test above."""
    import json

    from tshark_pdus import tshark_pdus

    name = "kafka-python-2.5.pcap"  # Kafka 2.5's versions: tshark dissects the bodies
    row = next(r for r in decoded(name) if r["api_name"] == "Produce")
    pdu = next(
        p
        for p in tshark_pdus(capture_path(name), set(server_ports(name)))
        if p.request and p.frame == row["request_frame"]
    )
    assert _compare_pdu(pdu, row)[1] == []
    body = json.loads(row["request_json"])
    body["topicData"][0]["name"] = "another-topic"
    body["topicData"][0]["partitionData"][0]["records"]["batches"][0]["crc"] += 1
    wrong = {"request_json": json.dumps(body), "correlation_id": row["correlation_id"] + 1}
    found = {field for _, _, field, *_ in _compare_pdu(pdu, row | wrong)[1]}
    assert found == {"kafka.topic_name", "kafka.batch_crc", "kafka.correlation_id"}


@pytest.mark.parametrize("name", NAMES)
def test_the_frames_table_is_the_wire(name):
    """``--table frames``: every frame each side sent, completed by the same packet, its size."""
    from kraftwire.spark_decoders import decode_local

    path = capture_path(name)
    rows = decode_local([str(path)], ports=server_ports(name), table="frames")
    ours = sorted((r["direction"], r["frame"], r["size"], r["status"]) for r in rows)
    truth = []
    for conn in connections(path, set(server_ports(name))):
        for direction, side in (("request", conn.requests), ("response", conn.responses)):
            truth += [(direction, f.packet, len(f.payload), "ok") for f in side.frames()]
    assert ours == sorted(truth)


@pytest.mark.parametrize("name", [n for n in NAMES if "sent" in entry(n)["truth"]])
def test_the_produced_records_are_what_the_client_sent(name, decoded):
    """The records of the Produce batches the broker took are as many as the client said it sent,
    compressed with the codec it was given; a transactional producer's batches are transactional."""
    truth = entry(name)["truth"]
    rows = decoded(name)
    produced, _ = produced_and_fetched(rows, topic_ids(rows))
    batches = [
        batch
        for tp, sent in produced.items()
        if tp.rpartition("-")[0] == truth["topic"]
        for batch, offset, _ in sent
        if offset is not None
    ]
    assert sum(batch["recordCount"] for batch in batches) == truth["sent"]
    assert {batch["compression"] for batch in batches} == {truth["codec"]}
    transactional = truth.get("producer") == "transactional"
    assert {batch["isTransactional"] for batch in batches} == {transactional}
