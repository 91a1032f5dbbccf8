"""The corpus of real clients' captures (tests/corpus/data, ``make corpus``) decodes true to the wire:
every exchange the capture holds is a row with its numbers right and its bodies decoded, each body
re-encodes to exactly its bytes, tshark agrees field by field where it dissects, and the record
batches are the ones Kafka's DumpLogSegments finds in the broker's log.

The frames and exchanges the rows are held to are read by ``wire_frames``, which shares no code
with the decoders. Offline: only the committed files, Kafka's specs in ../shared (the codecs of
every API), tshark and Java (for DumpLogSegments; skipped with one line without it, failed in CI).
"""

from __future__ import annotations

import os
import shutil

import pytest

from corpus_data import DATA, capture_names, capture_path, manifest, server_ports, wire_exchanges
from kraftwire.spark_decoders.bodies import BodyDecoder
from kraftwire.spark_decoders.pipeline import DecodeOptions, decode_files
from log_batches import as_dumped, dump_log_segments, produced_and_fetched, topic_ids

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
        + (r["request_frame"], r["response_frame"])
        for r in rows
    ]
    truth = [
        (w.client_port, w.correlation_id, w.api_key, w.api_version)
        + (w.request.packet, w.response.packet if w.response else None)
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
        assert len(produced[tp]) == len(data), tp
        for (batch, offset, row), logged in zip(produced[tp], data):
            sent = as_dumped(batch) | {"baseOffset": offset, "partitionLeaderEpoch": 0}
            assert sent == logged, (tp, row["capture_file"], row["request_frame"])
            compared += 1
        # Each fetched batch is the log's batch at its offset, and every batch was fetched.
        for batch, row in fetched[tp]:
            assert as_dumped(batch) == by_offset[batch["baseOffset"]], (tp, row["request_frame"])
            compared += 1
        assert {batch["baseOffset"] for batch, _ in fetched[tp]} == set(by_offset), tp
    assert compared > 0
