"""The native modules' own helpers (``codegen/native/helpers.py``) against the runtime's functions
they stand in for, and the rule that a module holds only the helpers and names it uses.

Each helper is checked twice, like the views: in a native module run as interpreted Python (every
one of Kafka's specs has its source; no C compiler needed) and, when ``make native`` built them, in
the bundled compiled modules. A helper must give exactly what the runtime gives wherever the runtime
succeeds, and fail wherever the runtime fails; the one allowed difference is a varint of 2**31 and
above, which the runtime reads as a negative int that each of its callers refuses.
"""

from __future__ import annotations

import ast
import builtins
import random
import sys
import types
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shared import shared_path
from varints import uvarint
from vectors import load_vectors

import kraftwire.generated as bundled
from kraftwire.codegen.generate import load_specs
from kraftwire.codegen.native.build import emit_sources
from kraftwire.codegen.native.emit import native_module_source
from kraftwire.codegen.native.helpers import HELPERS, used_helpers
from kraftwire.codegen.native.prelude import RUNTIME_ALIASES
from kraftwire.generated import _runtime as runtime

# native reader -> the runtime's call doing the same job, on (buf, pos)
READERS: dict[str, Callable[[bytes, int], tuple[Any, int]]] = {
    "_read_uvarint": runtime.read_uvarint,
    "_read_array_count": runtime.read_array_count,
    "_read_compact_array_count": runtime.read_compact_array_count,
    "_read_tag_count": runtime.read_tag_count,
    "_read_tag_size": lambda buf, pos: runtime.read_tag_size(buf, pos, 0),
    "_read_string": runtime.read_string,
    "_read_compact_string": runtime.read_compact_string,
    "_read_bytes": runtime.read_bytes,
    "_read_compact_bytes": runtime.read_compact_bytes,
}
# native writer of a value that is not null -> the runtime's writer into a bytearray
WRITERS: dict[str, Callable[[bytearray, Any], None]] = {
    "_put_string": runtime.write_string,
    "_put_compact_string": runtime.write_compact_string,
    "_put_bytes": runtime.write_bytes,
    "_put_compact_bytes": runtime.write_compact_bytes,
    "_put_uvarint": runtime.write_uvarint,
}


SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


@pytest.fixture(scope="module")
def kafka_specs():
    specs = load_specs([shared_path("kafka-schemas")])
    return {spec.stem: spec for spec in specs if not spec.is_placeholder}


@pytest.fixture(scope="module")
def modules(kafka_specs) -> list[types.ModuleType]:
    """Native modules holding every helper between them: interpreted ones of Kafka's specs, and the
    bundled compiled ones when built."""
    found: list[types.ModuleType] = []
    missing = set(READERS) | set(WRITERS)
    for stem in ("FetchRequest", "FetchResponse", "ProduceRequest", "MetadataResponse"):
        found.append(_interpreted(kafka_specs[stem]))
        missing -= set(vars(found[-1]))
    for stem, spec in kafka_specs.items():  # the rest (classic strings, say) from wherever they are
        if missing & set(used_helpers(native_module_source(spec, "kraftwire.generated"))):
            found.append(_interpreted(spec))
            missing -= set(vars(found[-1]))
    assert not missing, f"no Kafka spec's native module uses {sorted(missing)}"
    if bundled.CODEC_IMPLEMENTATION != "pure":
        for stem, (module, *_) in bundled.SPECS.items():
            bundled.lookup(stem)  # imports the spec's module, and its compiled one if built
            compiled = sys.modules.get(f"{bundled.__name__}._native_{module}")
            if compiled is not None:
                found.append(compiled)
    return found


def _interpreted(spec: Any, package: str = bundled.__name__) -> types.ModuleType:
    """The native source of ``spec`` for ``package``, run as an ordinary module."""
    module = types.ModuleType(f"interpreted_native_{spec.module}")
    source = native_module_source(spec, package)
    exec(compile(source, f"<native {spec.stem}>", "exec"), module.__dict__)
    return module


def _outcome(function: Callable[..., Any], *args: Any) -> tuple:
    try:
        return ("ok", function(*args))
    except Exception as exc:
        return ("error", type(exc).__name__)


def _implementations(modules: list[types.ModuleType], name: str) -> list[Callable[..., Any]]:
    found = [getattr(module, name) for module in modules if hasattr(module, name)]
    assert found, name
    return found


def _agree(name: str, native: tuple, pure: tuple, data: bytes, pos: int) -> None:
    if native[0] == "ok":
        assert pure == native, (name, data.hex(), pos)
    elif name == "_read_uvarint" and pure[0] == "ok":
        assert pure[1][0] < 0, (name, data.hex(), pos)  # a varint of 2**31 and above
    else:
        assert pure[0] == "error", (name, data.hex(), pos, pure)


@st.composite
def _varint_forms(draw: Any) -> bytes:
    """Varints of every length, some padded with zero groups or running past five bytes."""
    kind = draw(st.sampled_from(["plain", "padded", "any"]))
    if kind == "any":
        return draw(st.binary(min_size=1, max_size=6))
    value = draw(st.integers(0, (1 << 35) - 1))
    if kind == "plain":
        return uvarint(value)
    groups = uvarint(value)
    zeros = draw(st.integers(1, 3))
    return groups[:-1] + bytes([groups[-1] | 0x80]) + b"\x80" * (zeros - 1) + b"\x00"


@st.composite
def _length_prefixed(draw: Any) -> bytes:
    """A varint, int16 or int32 length (any, often near the data's own) before some data."""
    data = draw(st.binary(max_size=40) | st.text(max_size=20).map(str.encode))
    width = draw(st.sampled_from([0, 2, 4]))
    if width == 0:
        return draw(_varint_forms()) + data
    return draw(st.integers(-3, 45)).to_bytes(width, "big", signed=True) + data


@settings(max_examples=400, deadline=None)
@given(head=st.binary(max_size=3), body=_length_prefixed(), tail=st.binary(max_size=3))
def test_readers_agree_with_the_runtime(modules, head, body, tail):
    data = head + body + tail
    for pos in (len(head), 0, len(data)):
        for name, pure_reader in READERS.items():
            pure = _outcome(pure_reader, data, pos)
            for reader in _implementations(modules, name):
                _agree(name, _outcome(reader, data, pos), pure, data, pos)


@pytest.mark.parametrize(
    "data, value",
    [
        (b"\x00", 0),
        (b"\x7f", 127),
        (b"\x80\x01", 128),
        (b"\xff\xff\xff\xff\x07", 0x7FFFFFFF),  # the largest five-byte varint taken
        (b"\x80\x80\x80\x80\x08", None),  # 2**31: the runtime's -2**31, refused
        (b"\xff\xff\xff\xff\x0f", None),  # the runtime's -1
        (b"\xff\xff\xff\xff\x10", None),  # more than 32 bits
        (b"\x80\x80\x80\x80\x80\x01", None),  # six bytes
        (b"\x80\x00", None),  # padded with a zero group
        (b"\x80", None),  # truncated
    ],
)
def test_long_varints(modules, data, value):
    for reader in _implementations(modules, "_read_uvarint"):
        found = _outcome(reader, data, 0)
        assert found == (("ok", (value, len(data))) if value is not None else ("error", found[1]))
        _agree("_read_uvarint", found, _outcome(runtime.read_uvarint, data, 0), data, 0)


def test_null_and_empty_strings_and_bytes(modules):
    cases = {
        "_read_compact_string": [(b"\x00", None), (b"\x01", ""), (b"\x02a", "a")],
        "_read_string": [(b"\xff\xff", None), (b"\x00\x00", ""), (b"\x00\x01a", "a")],
        "_read_compact_bytes": [(b"\x00", None), (b"\x01", b""), (b"\x02a", b"a")],
        "_read_bytes": [(b"\xff\xff\xff\xff", None), (b"\x00\x00\x00\x00", b"")],
    }
    for name, pairs in cases.items():
        for reader in _implementations(modules, name):
            for data, value in pairs:
                assert reader(data, 0) == (value, len(data)), (name, data)
            assert _outcome(reader, b"\xff\xfe\x00\x00", 0)[0] == "error"  # -2, or too long


def test_long_compact_strings_take_a_multi_byte_length(modules):
    for size in (0x7E, 0x7F, 0x80, 0x3FFF, 0x4000, 0x7FFF, 0x8000):
        data = uvarint(size + 1) + "é".encode() * (size // 2) + b"a" * (size % 2)
        pure = _outcome(runtime.read_compact_string, data, 0)
        for reader in _implementations(modules, "_read_compact_string"):
            _agree("_read_compact_string", _outcome(reader, data, 0), pure, data, 0)
        assert pure[0] == ("ok" if size <= 0x7FFF else "error")


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40), pos=st.integers(0, 24))
def test_uuids_are_the_runtime_s(modules, data, pos):
    for reader in _implementations(modules, "_read_uuid"):
        found = _outcome(reader, data, pos)
        if pos + 16 > len(data):
            assert found[0] == "error"
        else:
            assert found == ("ok", runtime.uuid_from_wire(data[pos : pos + 16]))


def test_a_uuid_is_made_once(modules):
    zero, some = bytes(16), bytes(range(16))
    for reader in _implementations(modules, "_read_uuid"):
        assert reader(zero, 0) is runtime.ZERO_UUID
        first = reader(b"\x00" + some, 1)
        assert first == uuid.UUID(bytes=some) and reader(some, 0) is first


@settings(max_examples=300, deadline=None)
@given(
    value=st.text(max_size=5)
    | st.integers(0x70, 0x8010).map(lambda size: "é" * (size // 2) + "a" * (size % 2))
    | st.binary(max_size=200)
    | st.sampled_from([None, 7, "\ud800", "x" * 0x8000])
)
def test_writers_agree_with_the_runtime(modules, value):
    from librt.strings import BytesWriter

    for name, pure_writer in WRITERS.items():
        out = bytearray()
        pure = _outcome(pure_writer, out, value)
        if name == "_put_uvarint" and pure[0] == "ok" and not 0 <= value <= 0xFFFFFFFF:
            continue  # the runtime's writer wraps negative ints; no native caller passes one
        for writer in _implementations(modules, name):
            w = BytesWriter()
            native = _outcome(writer, w, value)
            if native[0] == "ok":
                assert pure[0] == "ok" and w.getvalue() == bytes(out), (name, value)
            else:
                assert pure[0] == "error", (name, value)


@settings(max_examples=200, deadline=None)
@given(value=st.uuids() | st.just(uuid.UUID(int=0)) | st.sampled_from([None, "x", 3]))
def test_uuid_default_test_is_uuid_inequality(modules, value):
    for differs in _implementations(modules, "_uuid_differs"):
        for default in (runtime.ZERO_UUID, uuid.UUID(int=5)):
            assert differs(value, default) == (value != default)


def test_interpreted_readers_agree_with_the_pure_ones_on_every_vector(upstream, kafka_specs):
    """Every one of Kafka's 6,144 vectors and some of their mutations through the native readers
    of its spec (interpreted), called directly, without the fallback to the pure twin: a valid
    vector must read without giving up, and whatever they read the pure reader reads alike."""
    readers: dict[str, tuple[Any, Any, Any]] = {}
    rng = random.Random(11)
    checked = 0
    for vector in load_vectors(shared_path("kafka-vectors")):
        if vector.spec not in readers:
            native = _interpreted(kafka_specs[vector.spec], upstream.__name__)
            pure = upstream.lookup(vector.spec)
            pure_module = sys.modules[pure.__module__]
            loader = sys.modules[f"{upstream.__name__}._native_loader"]
            native.bind(
                loader.Twin(pure_module, native, list(pure_module.__all__))
            )  # float64 views
            readers[vector.spec] = (
                getattr(native, f"_read_root_{pure.__name__}"),
                getattr(native, f"_write_root_{pure.__name__}"),
                pure,
            )
        read, write, pure = readers[vector.spec]
        message, end = read(vector.data, 0, vector.version)
        assert end == len(vector.data), vector.name
        _same_read(read, write, pure, vector.data, vector.version, vector.name)
        for _ in range(4):
            mutated = bytearray(vector.data)
            if mutated:
                mutated[rng.randrange(len(mutated))] = rng.choice((0, 0x7F, 0x80, 0xFF))
            cut = bytes(mutated[: rng.randrange(len(mutated) + 1)])
            for data in (bytes(mutated), cut):
                _same_read(read, write, pure, data, vector.version, vector.name)
        checked += 1
    assert checked == 6144


def _same_read(read: Any, write: Any, pure: Any, data: bytes, version: int, label: str) -> None:
    """What the native reader reads from ``data``, the pure one reads too, to the same end, JSON and
    encoding; where it gives up, the pure one may fail or read (it then decodes the message)."""
    from librt.strings import BytesWriter

    try:
        message, end = read(data, 0, version)
    except Exception:
        return
    expected, expected_end = pure.read(data, 0, version)
    assert end == expected_end, (label, data.hex())
    assert message.to_json(version) == expected.to_json(version), (label, data.hex())
    writer = BytesWriter()
    write(message, writer, version)
    assert writer.getvalue() == expected.encode(version), (label, data.hex())


def test_every_module_holds_only_what_it_uses(kafka_specs):
    """No native module of Kafka's specs imports a name, or holds a helper, a runtime alias, a
    struct's default or a reader, writer, view or text function of its own, that nothing in it
    reads."""
    public = {"bind", "annotations"}
    for spec in kafka_specs.values():
        tree = ast.parse(native_module_source(spec, "kw"))
        defined: dict[str, int] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined[node.name] = node.lineno
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined.update((t.id, node.lineno) for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                defined.update(((a.asname or a.name), node.lineno) for a in node.names)
        read = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        ours = set(HELPERS) | set(RUNTIME_ALIASES) | {"_runtime", "_base", "_json", "_Invalid"}
        ours |= {name for name in defined if name.startswith("_")}  # every private name
        imported = {
            (a.asname or a.name)
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for a in node.names
        }
        unused = (set(defined) & (ours | imported)) - read - public
        assert not unused, f"{spec.stem}: {sorted(unused)} defined but never used"


def test_helpers_are_emitted_only_where_used(kafka_specs):
    vote = native_module_source(kafka_specs["VoteRequest"], "kw")
    fetch = native_module_source(kafka_specs["FetchResponse"], "kw")
    assert "def _read_compact_bytes(" not in vote and "def _read_compact_bytes(" in fetch
    for name in ("read_uvarint", "read_compact_string", "read_compact_bytes", "read_fixed_array"):
        assert f"= _runtime.{name}" not in fetch  # the runtime's readers of hot forms
    assert set(RUNTIME_ALIASES) >= {"_read_raw_tags", "_skip_unknown_tags"}  # cold, kept
    assert set(HELPERS) >= set(READERS) | set(WRITERS)


def _unbound_names(source: str) -> set[str]:
    """Names ``source`` reads that nothing in it binds and that are not builtins (annotations
    included, as mypy reads them): what would fail the compiled build's type check."""
    tree = ast.parse(source)
    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return read - bound


def test_every_name_a_bundled_module_reads_is_bound():
    """The sources ``make native`` compiles (with the digest line the build adds) import every name
    they read: trimming imports to what a module uses once dropped ``Final``, which only the
    compiled build's type check then noticed."""
    package_dir = Path(bundled.__file__).parent
    sources, _ = emit_sources(load_specs([SCHEMAS]), "kraftwire.generated", package_dir)
    assert len(sources) > 30
    for module, source in sources.items():
        assert not _unbound_names(source), f"{module}: {sorted(_unbound_names(source))} unbound"


def test_every_name_a_kafka_module_reads_is_bound(kafka_specs):
    for spec in kafka_specs.values():
        source = native_module_source(spec, "kw")
        assert not _unbound_names(source), f"{spec.stem}: {sorted(_unbound_names(source))} unbound"
