"""The loader's refusals, checked without a C compiler: a package without compiled codecs is pure,
and the interpreted native source placed beside the pure module is never used."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from kraftwire.codegen.generate import generate, load_specs
from kraftwire.codegen.native.build import emit_sources

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
VOTE_SPECS = [SCHEMAS / "VoteRequest.json", SCHEMAS / "VoteResponse.json"]


@pytest.fixture
def vote_package(tmp_path, monkeypatch):
    """A package of Vote's two specs in a fresh folder, imported as ``kwvote``."""
    monkeypatch.delenv("KRAFTWIRE_PURE", raising=False)
    generate(VOTE_SPECS, tmp_path / "kwvote", "kwvote")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "kwvote"
    for name in [n for n in sys.modules if n == "kwvote" or n.startswith("kwvote.")]:
        del sys.modules[name]


def test_a_package_without_compiled_codecs_is_pure(vote_package):
    package = importlib.import_module("kwvote")
    module = importlib.import_module("kwvote.vote_request")
    assert package.CODEC_IMPLEMENTATION == "pure"
    assert module.CODEC_IMPLEMENTATION == "pure"
    assert module.VoteRequest.__module__ == "kwvote.vote_request"


def test_the_interpreted_native_source_is_never_loaded(vote_package):
    sources, skipped = emit_sources(load_specs(VOTE_SPECS), "kwvote", vote_package)
    assert not skipped and set(sources) == {"vote_request", "vote_response"}
    for module, text in sources.items():
        (vote_package / f"_native_{module}.py").write_text(text, encoding="utf-8")
    package = importlib.import_module("kwvote")
    module = importlib.import_module("kwvote.vote_request")
    assert package.CODEC_IMPLEMENTATION == "pure"
    assert module.CODEC_IMPLEMENTATION == "pure"
    assert "kwvote._native_vote_request" not in sys.modules
    message = module.VoteRequest(cluster_id="c", topics=[module.TopicData(topic_name="t")])
    assert module.VoteRequest.decode(message.encode(2), 2) == message


def test_every_bundled_spec_has_a_native_source():
    """No bundled spec is left pure by the native emitter."""
    specs = load_specs([SCHEMAS])
    generated = Path(__file__).resolve().parents[3] / "generated"
    sources, skipped = emit_sources(specs, "kraftwire.generated", generated)
    assert skipped == []
    assert len(sources) == sum(1 for spec in specs if not spec.is_placeholder)
