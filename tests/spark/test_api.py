"""The codec bundle a Spark read ships is built once per process and per content of its specs."""

from __future__ import annotations

import shutil

from kraftwire.spark_decoders.spark.shards import codec_bundle
from shared import shared_path

MESSAGES = (
    shared_path("kafka-schemas") / "clients" / "src" / "main" / "resources" / "common" / "message"
)


def test_codec_bundle_is_reused_until_a_spec_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTWIRE_CACHE", str(tmp_path / "cache"))
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("RequestHeader", "ResponseHeader", "VoteRequest", "VoteResponse"):
        shutil.copy(MESSAGES / f"{name}.json", specs)
    assert codec_bundle(None) is None  # the bundled codecs travel by import name
    first = codec_bundle(str(specs))
    assert codec_bundle(str(specs)) is first
    vote = specs / "VoteRequest.json"
    vote.write_text(vote.read_text() + "\n")
    edited = codec_bundle(str(specs))
    assert edited is not first and edited.name != first.name
