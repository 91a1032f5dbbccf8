"""The compiled codecs against the pure ones, byte for byte, on Kafka's vectors, mutations of them and
the fuzz corpus: decode results (via to_json), encode bytes, error types, messages and paths.

Runs when ``make native`` has built kraftwire.generated's compiled codecs (CI builds them in
.ci/run); skips otherwise. The compiled readers are also called directly, without the fallback to
the pure twin, so a compiled reader that gives up on valid input, or accepts input the pure one
rejects, fails here instead of hiding behind the fallback.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from shared import shared_available, shared_path
from vectors import load_vectors

import kraftwire.generated as generated

pytestmark = pytest.mark.skipif(
    generated.CODEC_IMPLEMENTATION == "pure",
    reason="compiled codecs not built (make native) or KRAFTWIRE_PURE is set",
)

CORPUS = Path(__file__).resolve().parents[2] / "fuzz" / "corpus.jsonl"
MUTATIONS_PER_VECTOR = 24


class Side:
    """One message class of the bundled package: compiled, its pure twin and the raw readers."""

    def __init__(self, spec: str) -> None:
        self.cls = generated.lookup(spec)
        module_name = generated.SPECS[spec][0]
        self.native = sys.modules[f"{generated.__name__}._native_{module_name}"]
        self.pure = self.native._twin.pure_root
        name = self.cls.__name__
        self.raw_read = getattr(self.native, f"_read_root_{name}")
        self.raw_write = getattr(self.native, f"_write_root_{name}")

    def raw_encode(self, message: object, version: int) -> bytes:
        from librt.strings import BytesWriter

        writer = BytesWriter()
        self.raw_write(message, writer, version)
        return writer.getvalue()


def _sides() -> dict[str, Side]:
    return {spec: Side(spec) for spec in generated.SPECS if _compiled(spec)}


def _compiled(spec: str) -> bool:
    generated.lookup(spec)  # imports the spec module
    module = sys.modules[f"{generated.__name__}.{generated.SPECS[spec][0]}"]
    return module.CODEC_IMPLEMENTATION == "native"


def _outcome(decode, data: bytes, version: int) -> tuple:
    try:
        message = decode(data, version)
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "field_path", None))
    return ("ok", json.dumps(message.to_json(version), sort_keys=True), message.encode(version))


def _compare(side: Side, data: bytes, version: int) -> None:
    native = _outcome(side.cls.decode, data, version)
    pure = _outcome(side.pure.decode, data, version)
    assert native == pure, f"{side.cls.SPEC_NAME} v{version} {data.hex()}"
    try:
        raw, end = side.raw_read(data, 0, version)
    except Exception:
        return  # gave up: the class method fell back to the twin (compared above)
    assert pure[0] == "ok" or end != len(data), (
        f"compiled reader accepted what the pure one rejects: {side.cls.SPEC_NAME} v{version} "
        f"{data.hex()}"
    )
    if end == len(data):
        assert json.dumps(raw.to_json(version), sort_keys=True) == pure[1]


@pytest.fixture(scope="module")
def sides() -> dict[str, Side]:
    found = _sides()
    assert found, "CODEC_IMPLEMENTATION is not pure, yet no spec module has a compiled codec"
    return found


@pytest.fixture(scope="module")
def bundled_vectors(sides):
    if not shared_available():
        pytest.skip("../shared is not beside this clone")
    return [v for v in load_vectors(shared_path("kafka-vectors")) if v.spec in sides]


def test_compiled_readers_and_writers_take_every_vector_without_falling_back(sides, bundled_vectors):
    assert len(bundled_vectors) > 100
    for vector in bundled_vectors:
        side = sides[vector.spec]
        message, end = side.raw_read(vector.data, 0, vector.version)
        assert end == len(vector.data), vector.name
        assert message.to_json(vector.version) == vector.json, vector.name
        assert side.raw_encode(message, vector.version) == vector.data, vector.name
        made = side.cls.from_json(vector.json, vector.version)
        assert side.raw_encode(made, vector.version) == vector.data, vector.name


def test_decode_agrees_on_vectors_and_their_mutations(sides, bundled_vectors):
    rng = random.Random(12)
    for vector in bundled_vectors:
        side, data, version = sides[vector.spec], vector.data, vector.version
        _compare(side, data, version)
        for cut in range(len(data)):
            _compare(side, data[:cut], version)
        _compare(side, data + b"\x00", version)
        for _ in range(MUTATIONS_PER_VECTOR):
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                if mutated:
                    mutated[rng.randrange(len(mutated))] = rng.choice((0, 0x7F, 0x80, 0xFF, rng.randrange(256)))
            _compare(side, bytes(mutated), version)


def test_decode_agrees_on_the_fuzz_corpus(sides):
    compared = 0
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        parts = entry["target"].split(":")
        if parts[:2] != ["bundled", "decode"] or parts[2] not in sides:
            continue
        _compare(sides[parts[2]], bytes.fromhex(entry["hex"]), int(parts[3].lstrip("v")))
        compared += 1
    assert compared >= 1


def test_encode_errors_agree(sides, bundled_vectors):
    """Out-of-range and wrongly typed values: the same error, type and path from both."""
    for vector in bundled_vectors[:200]:
        side, version = sides[vector.spec], vector.version
        for field_name, bad in _bad_values(vector.json):
            broken = json.loads(json.dumps(vector.json))
            broken[field_name] = bad
            native = _encode_outcome(lambda: side.cls.from_json(broken, version).encode(version))
            pure = _encode_outcome(lambda: side.pure.from_json(broken, version).encode(version))
            assert native == pure, (vector.name, field_name, bad)
        message = side.cls.decode(vector.data, version)
        for attr, kind in type(message)._KINDS.items():
            if kind in ("int8", "int16", "int32", "int64", "uint16", "uint32", "string", "uuid"):
                for bad in (1 << 70, -(1 << 70), "x", 1.5, None):
                    copy = side.cls.decode(vector.data, version)
                    setattr(copy, attr, bad)
                    twin_copy = side.native._twin.to_pure(copy)
                    native = _encode_outcome(lambda: copy.encode(version))
                    pure = _encode_outcome(lambda: twin_copy.encode(version))
                    assert native == pure, (vector.name, attr, bad)


def _bad_values(obj: dict) -> list[tuple[str, object]]:
    return [(key, bad) for key, value in obj.items() if isinstance(value, int) for bad in (1 << 40, "x")]


def _encode_outcome(run) -> tuple:
    try:
        return ("ok", run())
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "field_path", None))


def test_the_package_says_which_implementation_it_uses(sides):
    assert generated.CODEC_IMPLEMENTATION in ("native", "mixed")
    for spec in sides:
        module = sys.modules[f"{generated.__name__}.{generated.SPECS[spec][0]}"]
        assert module.CODEC_IMPLEMENTATION == "native"
        assert Path(sides[spec].native.__file__).suffix in (".so", ".pyd")


def test_kraftwire_pure_forces_the_pure_codecs():
    import os
    import subprocess

    code = "import kraftwire.generated as g, kraftwire.generated.vote_request as v; "
    code += "print(g.CODEC_IMPLEMENTATION, v.CODEC_IMPLEMENTATION, v.VoteRequest.__module__)"
    env = {**os.environ, "KRAFTWIRE_PURE": "1"}
    found = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert found.stdout.split() == ["pure", "pure", f"{generated.__name__}.vote_request"]
