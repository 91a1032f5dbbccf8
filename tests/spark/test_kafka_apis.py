"""Kafka's names for API keys and error codes: rows of APIs the codec set in use does not cover still
carry the API's name, and the report names error codes."""

from __future__ import annotations

import json
import re

from captures import decode
from kraftwire.codegen.loader import load_raw, spec_files
from kraftwire.generated import api_keys, errors
from kraftwire.spark_decoders.output.report_data import error_label
from shared import shared_path


def test_the_table_names_every_api_key_as_kafkas_specs_do():
    specs = [load_raw(path).data for path in spec_files([shared_path("kafka-schemas")])]
    named = {
        d["apiKey"]: d["name"].removesuffix("Request") for d in specs if d.get("type") == "request"
    }
    # the bundled table adds kraftwire's own ReadOffset (1000) to Kafka's keys
    assert {key: name for key, name in api_keys.NAMES.items() if key != 1000} == named


def test_an_api_outside_the_bundled_codecs_is_named_and_its_error_says_so():
    # go-sniffer's capture is classic traffic: Metadata v0 and Produce v1, neither of which the
    # bundled (KRaft) codecs decode.
    rows, _ = decode([str(shared_path("captures") / "go-sniffer-kafka.pcap")])
    metadata = [r for r in rows if r["api_key"] == 3]
    assert metadata and all(r["api_name"] == "Metadata" for r in metadata)
    assert all(r["status"] == "unsupported_version" for r in metadata)
    assert all(r["decode_error"] == "no codec for Metadata v0" for r in metadata), json.dumps(
        metadata[0], default=str
    )


def test_the_error_names_are_kafkas():
    # The notes in ../shared list Kafka's Errors enum as "| code | `NAME` | ..." table rows.
    table = shared_path("docs", "kraft-apis.md").read_text()
    listed = {
        int(code): name
        for code, name in re.findall(r"^\| (-?\d+) \| `([A-Z0-9_]+)` \|", table, re.M)
    }
    assert len(listed) > 100 and {c: e.name for c, e in errors.ERRORS.items()} == listed
    assert error_label(6) == "NOT_LEADER_OR_FOLLOWER (6)" and error_label(4242) == "4242"
