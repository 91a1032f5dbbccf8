"""Byte-exactness against Kafka: every line of ../shared/kafka-vectors, three ways."""

from __future__ import annotations

from collections import Counter

import pytest
from shared import shared_path
from vectors import load_vectors


@pytest.fixture(scope="module")
def vectors():
    return list(load_vectors(shared_path("kafka-vectors")))


def test_every_vector_is_byte_exact(upstream, vectors):
    failures: Counter[str] = Counter()
    examples: list[str] = []
    for vector in vectors:
        cls = upstream.lookup(vector.spec)
        v = vector.version
        problems = []
        try:
            if cls.from_json(vector.json, v).encode(v) != vector.data:
                problems.append("from_json(json).encode != hex")
            decoded = cls.decode(vector.data, v)
            if decoded.encode(v) != vector.data:
                problems.append("decode(hex).encode != hex")
            if decoded.to_json(v) != vector.json:
                problems.append("decode(hex).to_json != json")
            if decoded.encoded_size(v) != len(vector.data):
                problems.append("encoded_size != len(hex)")
        except Exception as exc:  # any exception is a failed vector, reported with the rest
            problems.append(f"{type(exc).__name__}: {exc}")
        if problems:
            failures[vector.spec] += 1
            if len(examples) < 10:
                examples.append(f"{vector.name}: {'; '.join(problems)}")
    passed = len(vectors) - sum(failures.values())
    print(f"kafka-vectors: {passed} / {len(vectors)} byte-exact")
    assert len(vectors) == 6144
    assert not failures, f"{sum(failures.values())} vectors failed: {dict(failures)}\n" + "\n".join(examples)


def test_every_spec_generates(upstream):
    """All 292 spec files load; every non-placeholder spec has a module, placeholders reserve keys."""
    spec_dir = shared_path("kafka-schemas")
    stems = {p.stem for p in spec_dir.rglob("*.json")}
    assert len(stems) == 292
    placeholders = {f"{name}{side}" for name in upstream.REMOVED_APIS.values() for side in ("Request", "Response")}
    assert set(upstream.SPECS) | placeholders == stems
    assert not placeholders & set(upstream.SPECS)
    for stem in upstream.SPECS:
        assert upstream.lookup(stem).SPEC_NAME == stem
    assert sorted(upstream.REMOVED_APIS) == [4, 5, 6, 7]
    assert len(upstream.APIS) == 91


def test_decoding_any_buffer_type_gives_the_same_message(upstream, vectors):
    """bytes, bytearray and memoryview inputs decode alike, UUID fields and UUID arrays included
    (decoded UUIDs are shared per id, which must not depend on the buffer type)."""
    with_uuids = [v for v in vectors if v.spec in ("PartitionRecord", "RegisterBrokerRecord", "FetchRequest")]
    assert len(with_uuids) > 20
    for vector in with_uuids:
        cls = upstream.lookup(vector.spec)
        reference = cls.decode(vector.data, vector.version)
        for buffer in (bytearray(vector.data), memoryview(vector.data), memoryview(bytearray(vector.data))):
            decoded = cls.decode(buffer, vector.version)
            assert decoded == reference, f"{vector.name} from {type(buffer).__name__}"
            assert decoded.encode(vector.version) == vector.data
