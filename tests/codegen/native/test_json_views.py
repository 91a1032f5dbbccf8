"""The native module's JSON views (``codegen/native/views.py``) against the pure ``to_json``, and
its JSON text writers (``codegen/native/texts.py``) against the text of that dict.

The views are plain Python that mypyc compiles, so their logic is checked twice: interpreted, for
every one of Kafka's specs (no C compiler needed: the source runs as an ordinary module beside the
package generated from ../shared), and compiled, for the bundled specs when ``make native`` built
them. Either way the view is called directly, without ``to_json``'s fallback to the pure twin, so a
view that gives up hides nothing; and the dicts are compared in order (``==`` on dicts is not),
because the key order is part of the JSON form. The text is compared with what the decoders wrote
before the writers existed, ``jsonview.dumps`` of the view (orjson's text), character for character.
"""

from __future__ import annotations

import base64
import sys
import types
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared import shared_path
from vectors import load_vectors

import kraftwire.generated as bundled
from kraftwire.generated._failures import INT_RANGES
from kraftwire.codegen.generate import load_specs
from kraftwire.codegen.native.emit import native_module_source
from kraftwire.spark_decoders.kafka.jsonview import dumps, json_view

compiled_only = pytest.mark.skipif(
    bundled.CODEC_IMPLEMENTATION == "pure",
    reason="compiled codecs not built (make native) or KRAFTWIRE_PURE is set",
)


def ordered(value: Any) -> Any:
    """``value`` with every dict replaced by its list of items: equal only in the same key order."""
    if isinstance(value, dict):
        return [(key, ordered(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [ordered(item) for item in value]
    return value


class Views:
    """One spec's native module and its twin: the module interpreted, or the compiled one."""

    def __init__(self, native: types.ModuleType, twin: Any) -> None:
        self.native = native
        self.twin = twin
        self.pure = twin.pure_root
        self.view = getattr(native, f"_json_root_{self.pure.__name__}")
        self.text = getattr(native, f"_text_root_{self.pure.__name__}")
        self.cls = twin.to_native_class[self.pure]

    def check(self, message: Any, version: int, label: str) -> None:
        """The view of ``message`` (a pure object) as a native object is its pure ``to_json``."""
        expected = ordered(message.to_json(version))
        native = self.twin.to_native(message)
        assert type(native) is self.cls
        layout = self.pure._JSON[version]
        if holds_float(layout):
            with pytest.raises(self.native._Invalid):  # left to the twin
                self.view(native, version)
        else:
            assert ordered(self.view(native, version)) == expected, label
            raw = self.view(native, version, True)
            assert ordered(base64_of_bytes(raw, records_keys(layout))) == expected, label
        assert ordered(native.to_json(version)) == expected, label
        assert ordered(json_view(native, version)) == expected, label
        raw = json_view(native, version, raw_records=True)
        assert ordered(base64_of_bytes(raw, records_keys(layout))) == expected, label
        self.check_text(native, version, message.to_json(version), label)

    def check_text(self, native: Any, version: int, view: dict, label: str) -> None:
        """The writer's text is the view's (or it refuses what orjson refuses, and the caller
        writes the view), with the view's top-level errorCode and throttleTimeMs. Records fields
        go to a records writer that writes their base64, as the view holds them."""
        layout = self.pure._JSON[version]
        written = native.to_json_text(version, write_base64)
        if holds_float(layout):
            assert written is None, label
            with pytest.raises(self.native._Invalid):  # no writer for this version
                self.text(native, version, write_base64)
            return
        try:
            orjson.dumps(view)
        except orjson.JSONEncodeError:  # a lone surrogate: the writer refuses it too
            assert written is None, label
            with pytest.raises(UnicodeEncodeError):
                self.text(native, version, write_base64)
            return
        expected = (dumps(view, False), view.get("errorCode"), view.get("throttleTimeMs"))
        # the writer, without fallback
        assert self.text(native, version, write_base64) == expected, label
        assert written == expected, label
        if holds_records(layout):  # without a records writer, only a body with no records
            assert native.to_json_text(version) in (None, expected), label
        else:
            assert native.to_json_text(version) == expected, label
        TEXTS_WRITTEN[0] += 1


def write_base64(w: Any, data: bytes, topic: Any) -> None:
    """A records writer (``to_json_text``'s ``records``) writing the base64 of the field's bytes."""
    w.write(f'"{base64.b64encode(data).decode()}"')


def records_keys(layout: Any) -> set[str]:
    """The JSON keys of the records fields of ``layout`` and of the layouts nested in it."""
    keys = set()
    for fld, _, _, child in layout.entries:
        if fld.kind == "records":
            keys.add(fld.key)
        if child is not None:
            keys |= records_keys(child)
    return keys


def base64_of_bytes(view: Any, keys: set[str], key: str = "") -> Any:
    """A view with raw records fields as to_json writes them; a bytes value elsewhere (under any
    key but a records field's) fails."""
    if isinstance(view, dict):
        return {k: base64_of_bytes(item, keys, k) for k, item in view.items()}
    if isinstance(view, list):
        return [base64_of_bytes(item, keys) for item in view]
    if isinstance(view, (bytes, bytearray, memoryview)):
        assert key in keys, f"raw bytes under {key!r}, which is not a records field"
        RAW_RECORDS_SEEN[0] += 1
        return base64.b64encode(view).decode("ascii")
    return view


RAW_RECORDS_SEEN = [0]  # records fields left as bytes by a raw view, over the session
TEXTS_WRITTEN = [0]  # bodies whose text a writer wrote, over the session


def holds_records(layout: Any) -> bool:
    """Whether a records field is present in ``layout`` or in a layout nested in it."""
    for fld, mode, _, child in layout.entries:
        if mode == "A":
            continue
        if fld.kind == "records" or (child is not None and holds_records(child)):
            return True
    return False


def holds_float(layout: Any) -> bool:
    """Whether a float64 field (or array) is present in ``layout`` or in a layout nested in it."""
    for fld, mode, _, child in layout.entries:
        if mode == "A":
            continue
        if "float64" in (fld.kind, fld.element) or (child is not None and holds_float(child)):
            return True
    return False


# -- interpreted, every Kafka spec -----------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka_specs():
    return {spec.stem: spec for spec in load_specs([shared_path("kafka-schemas")])}


@pytest.fixture(scope="module")
def interpreted(upstream, kafka_specs):
    """spec stem -> Views of its native module run as interpreted Python (built on first use)."""
    found: dict[str, Views] = {}

    def views(stem: str) -> Views:
        if stem not in found:
            found[stem] = _interpreted_views(upstream, kafka_specs[stem])
        return found[stem]

    return views


def _interpreted_views(package: types.ModuleType, spec: Any) -> Views:
    name = f"{package.__name__}._native_{spec.module}"
    native = types.ModuleType(name)
    source = native_module_source(spec, package.__name__)
    exec(compile(source, f"<{name}>", "exec"), native.__dict__)
    pure = sys.modules[type(package.lookup(spec.stem)()).__module__]
    twin = sys.modules[f"{package.__name__}._native_loader"].Twin(pure, native, list(pure.__all__))
    native.bind(twin)
    return Views(native, twin)


def test_interpreted_views_equal_to_json_on_every_vector(upstream, interpreted):
    checked, floats = 0, 0
    RAW_RECORDS_SEEN[0] = TEXTS_WRITTEN[0] = 0
    for vector in load_vectors(shared_path("kafka-vectors")):
        views = interpreted(vector.spec)
        message = views.pure.decode(vector.data, vector.version)
        assert ordered(message.to_json(vector.version)) == ordered(vector.json), vector.name
        views.check(message, vector.version, vector.name)
        floats += holds_float(views.pure._JSON[vector.version])
        checked += 1
    assert checked == 6144
    assert floats > 0  # the float64 specs' vectors went through the twin
    assert RAW_RECORDS_SEEN[0] > 50  # the records fields of Fetch, Produce, ShareFetch...
    assert TEXTS_WRITTEN[0] > 5000  # most bodies have a writer


# what JSON escapes (a quote, a backslash, control characters), what it does not (DEL, non-ASCII,
# U+2028, a character past the BMP), and lone surrogates, which orjson refuses
AWKWARD_CHARACTERS = [
    "a",
    '"',
    "\\",
    "\x00",
    "\n",
    "\x1f",
    "\x7f",
    "é",
    "\u2028",
    "😀",
    "\ud800",
    "\udfff",
]


def _field_values(fld: Any, kind: str, child: Any, draw: Any) -> Any:
    """A value of one kind (not None); a struct or struct array from the nested layout."""
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return draw(st.integers(low, high) | st.sampled_from([0, -1, 1, high]).filter(low.__le__))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "float64":
        return draw(st.floats(allow_nan=False))
    if kind == "string":
        return draw(st.text(max_size=6) | st.text(st.sampled_from(AWKWARD_CHARACTERS), max_size=4))
    if kind in ("bytes", "records"):
        return draw(st.binary(max_size=8))
    if kind == "uuid":
        return draw(st.uuids() | st.just(uuid.UUID(int=0)))
    if kind == "struct":
        return draw(pure_objects(child))
    assert kind == "array", kind
    if child is not None:
        items = draw(st.lists(pure_objects(child), max_size=3))
        return child.map_key_list(items) if child.map_key_list is not None else items
    return [_field_values(fld, fld.element, None, draw) for _ in range(draw(st.integers(0, 3)))]


def _default_of(fld: Any, child: Any) -> Any:
    """A fresh value equal to the field's default (a new object for a struct or a list)."""
    if fld.kind == "struct" and fld.default is not None:
        return child.cls() if child is not None else fld.default
    if fld.kind == "array" and fld.default is not None:
        return child.map_key_list() if child is not None and child.map_key_list else []
    return fld.default


@st.composite
def pure_objects(draw: Any, layout: Any) -> Any:
    """An object of ``layout``'s pure class: tagged fields at their default (a distinct but equal
    object for structs and arrays) or not, nulls of every kind, nested structs and struct arrays,
    and values in fields the layout leaves out (which its JSON must not show)."""
    obj = layout.cls()
    for fld, mode, _, child in layout.entries:
        choice = draw(st.sampled_from(["value", "value", "null", "default"]))
        if choice == "null":
            value = None
        elif choice == "default" or (mode == "A" and fld.element[:1].isupper()):
            value = _default_of(fld, child)  # (an absent struct has no layout to build from)
        else:
            value = _field_values(fld, fld.kind, child, draw)
        setattr(obj, fld.attr, value)
    return obj


@st.composite
def spec_messages(draw: Any, stems: list[str], views_of: Any) -> tuple[Views, Any, int]:
    views = views_of(draw(st.sampled_from(stems)))
    version = draw(st.sampled_from(sorted(views.pure._JSON)))
    return views, draw(pure_objects(views.pure._JSON[version])), version


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_interpreted_views_equal_to_json_on_generated_messages(interpreted, kafka_specs, data):
    # The spec set's own test messages (every kind, tagged and nullable forms) twice as often.
    stems = sorted(s for s, spec in kafka_specs.items() if not spec.is_placeholder)
    stems += ["AllTypeMessage", "SimpleExampleMessage"] * 20
    views, message, version = data.draw(spec_messages(stems, interpreted))
    views.check(message, version, f"{views.pure.__name__} v{version}")


# -- compiled, the bundled specs -------------------------------------------------------------------


@pytest.fixture(scope="module")
def compiled() -> dict[str, Views]:
    return _compiled_views()


def _compiled_views() -> dict[str, Views]:
    found = {}
    for stem, (module, _) in bundled.SPECS.items():
        bundled.lookup(stem)
        if sys.modules[f"{bundled.__name__}.{module}"].CODEC_IMPLEMENTATION == "native":
            native = sys.modules[f"{bundled.__name__}._native_{module}"]
            found[stem] = Views(native, native._twin)
    assert found
    return found


@compiled_only
def test_compiled_views_equal_the_twin_to_json_on_every_vector(compiled):
    checked = 0
    for vector in load_vectors(shared_path("kafka-vectors")):
        views = compiled.get(vector.spec)
        if views is not None:
            views.check(views.pure.decode(vector.data, vector.version), vector.version, vector.name)
            checked += 1
    assert checked > 100


@compiled_only
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_views_equal_the_twin_to_json_on_generated_messages(compiled, data):
    views, message, version = data.draw(spec_messages(sorted(compiled), compiled.__getitem__))
    views.check(message, version, f"{views.pure.__name__} v{version}")


class _NoTwin:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the pure twin was asked ({name})")


@compiled_only
def test_compiled_to_json_and_json_view_do_not_ask_the_twin(compiled, monkeypatch):
    messages = []
    for vector in load_vectors(shared_path("kafka-vectors")):
        if vector.spec in compiled:
            message = compiled[vector.spec].cls.decode(vector.data, vector.version)
            messages.append((vector, message))
    for views in compiled.values():
        monkeypatch.setattr(views.native, "_twin", _NoTwin())
    for vector, message in messages:
        assert message.to_json(vector.version) == vector.json, vector.name
        assert json_view(message, vector.version) == vector.json, vector.name


@compiled_only
def test_what_a_view_does_not_take_is_the_twin_answer(compiled):
    """A version without a layout raises the codec's error; a value of the wrong type gives what
    the pure ``to_json`` gives (a string where a uuid belongs is refused by both)."""
    fetch = compiled["FetchRequest"]
    with pytest.raises(bundled.UnsupportedVersionError):
        fetch.cls().to_json(99)
    with pytest.raises(bundled.UnsupportedVersionError):
        json_view(fetch.cls(), 99)
    request = fetch.cls(topics=[fetch.native.FetchTopic(topic_id="not a uuid")])
    with pytest.raises(AttributeError) as native_error:
        request.to_json(13)
    with pytest.raises(AttributeError) as pure_error:
        fetch.twin.to_pure(request).to_json(13)
    assert str(native_error.value) == str(pure_error.value)
    # a pure object inside a compiled one: the typed view refuses it, the twin takes it
    request.topics = [fetch.twin.to_pure(fetch.native.FetchTopic(topic_id=uuid.uuid4()))]
    with pytest.raises(TypeError):
        fetch.view(request, 13)
    assert ordered(request.to_json(13)) == ordered(fetch.twin.to_pure(request).to_json(13))


@compiled_only
def test_tagged_struct_fields_at_and_off_their_default(compiled):
    fetch = compiled["FetchRequest"]
    request = fetch.cls(replica_state=fetch.native.ReplicaState(), cluster_id=None)
    assert "replicaState" not in request.to_json(15) and "clusterId" not in request.to_json(15)
    request.replica_state = fetch.native.ReplicaState(replica_id=3)
    request.cluster_id = "c"
    view = fetch.view(request, 15)
    assert list(view)[:2] == ["clusterId", "replicaState"]
    assert view["replicaState"] == {"replicaId": 3, "replicaEpoch": -1}
    request.topics = None
    assert fetch.view(request, 15)["topics"] is None


@settings(max_examples=300, deadline=None)
@given(
    value=st.uuids() | st.sampled_from([uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1)]),
    data=st.binary(max_size=70),
)
def test_the_views_uuid_and_bytes_text_is_the_runtime_s(interpreted, compiled_or_none, value, data):
    """The native module's own base64 of uuids and bytes writes what the runtime's functions
    write; what is no UUID or no bytes goes to them, or fails as they fail."""
    from kraftwire.generated._json import bytes_to_json, uuid_to_json

    modules = [interpreted("FetchResponse").native]  # a spec with both a uuid and a records field
    if compiled_or_none is not None:
        modules.append(compiled_or_none["FetchResponse"].native)
    for native in modules:
        assert native._uuid_to_json(value) == uuid_to_json(value)
        assert native._bytes_to_json(data) == bytes_to_json(data)
        assert native._bytes_to_json(bytearray(data)) == bytes_to_json(bytearray(data))
        assert native._bytes_to_json(memoryview(data)) == bytes_to_json(memoryview(data))
        for wrong in (str(value), None, value.int):
            assert _outcome(native._uuid_to_json, wrong) == _outcome(uuid_to_json, wrong)
            assert _outcome(native._bytes_to_json, wrong) == _outcome(bytes_to_json, wrong)


def _outcome(function: Any, value: Any) -> tuple:
    try:
        return ("ok", function(value))
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))


@pytest.fixture(scope="module")
def compiled_or_none() -> dict[str, Views] | None:
    return None if bundled.CODEC_IMPLEMENTATION == "pure" else _compiled_views()


def test_views_are_emitted_per_json_table_and_float64_left_to_the_twin(kafka_specs):
    source = native_module_source(kafka_specs["DescribeClientQuotasResponse"], "kw")
    assert "def _j_entry_data_v0(" not in source  # its value is a float64
    assert "def _json_root_DescribeClientQuotasResponse(" in source
    assert "return _j_describe_client_quotas_response" not in source
    vote = native_module_source(kafka_specs["VoteRequest"], "kw")
    assert vote.count("def _j_vote_request_v") == 3  # one per JSON table: v0, v1, v2
