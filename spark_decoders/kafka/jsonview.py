"""The JSON view of decoded bodies, compiled once per struct layout.

A generated codec turns a message into Kafka's JsonConverter form by interpreting its layout tables
(``JsonLayout``: per field its key, kind, whether it is inline, tagged or absent at that version, and
the layout of a nested struct) field by field. That is right for occasional use and slow for every
frame of a capture, where the same few layouts serve millions of messages. ``json_view`` reads each
layout's table once and compiles it into one straight-line function (as ``collections.namedtuple``
compiles its class), then calls that: the same dict, key for key and value for value, as the codec's
``to_json`` (``tests/spark/test_hot_path.py`` checks it on every vector in ../shared), in a fraction
of the time. Unusual fields (a struct without a layout, float64) go through the codec's own converter,
so their result and their errors stay the codec's.

The compiled (mypyc) classes that ``make native`` and ``--native`` build have their own view: their
``to_json`` is typed code emitted per layout beside their readers (``codegen/native/views.py``), which
``json_view`` calls for them. A compiled class built before those views existed shares the pure
classes' layouts and goes through the functions here: everything they read is an attribute both kinds
have; the one place the kind shows is a tagged struct field's default, a pure instance that a compiled
value never equals (``__eq__`` checks the class): those are compared field by field (``_differs``).

``dumps`` writes the compact, non-ASCII-escaping text the rows carry. It is json.dumps's text with those
options, written by orjson (five times faster on the bench's bodies) unless the view may hold floats, which
orjson writes differently (``1e-7`` for ``1e-07``, ``null`` for NaN): those, and the rare views orjson
refuses (text that was not UTF-8 on the wire, nesting past 255 levels), go through one C encoder of the
standard library, built once.
"""

from __future__ import annotations

import json.encoder
import sys
from typing import Any, Callable, Final

import orjson

View = Callable[[Any], dict[str, Any]]

# Reused for every body: json.dumps builds a new encoder whenever an option differs from its
# defaults, and a view is a fresh tree, so the cycle check has nothing to find.
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_ASCII_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def _c_dumps() -> Callable[[dict[str, Any]], str] | None:
    """``_ENCODER.encode`` without what it redoes on every call (building the C encoder object and
    a float formatter): the C encoder of the same options, made once. None without the C module."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    encode = make(
        None,  # markers: no cycle check
        _ENCODER.default,
        json.encoder.encode_basestring,  # what ensure_ascii=False selects
        None,  # indent
        _ENCODER.key_separator,
        _ENCODER.item_separator,
        _ENCODER.sort_keys,
        _ENCODER.skipkeys,
        _ENCODER.allow_nan,
    )
    join = "".join
    return lambda view: join(encode(view, 0))


# Views are always dicts, so ``encode``'s special case for a bare string never applies.
_stdlib_dumps: Final[Callable[[dict[str, Any]], str]] = _c_dumps() or _ENCODER.encode
_orjson_dumps: Final = orjson.dumps


def dumps(view: dict[str, Any], may_hold_floats: bool = True) -> str:
    """``json.dumps(view, ensure_ascii=False, separators=(",", ":"))``, except that a view holding
    lone surrogates is written with every non-ASCII character escaped. Pass ``may_hold_floats``
    False only when no value in ``view`` can be a float: that text is then orjson's."""
    if not may_hold_floats:
        try:
            return _orjson_dumps(view).decode()
        except orjson.JSONEncodeError:  # surrogates, deep nesting, integers past 64 bits
            pass
    text = _stdlib_dumps(view)
    try:
        text.encode()
    except UnicodeEncodeError:
        # Text that was not UTF-8 on the wire (record header keys, kept by surrogateescape):
        # escaped, it parses back to the same value, and Arrow, Parquet and files can hold it.
        return _ASCII_ENCODER.encode(view)
    return text


# JsonLayout -> its compiled view (layouts are module constants)
_COMPILED: Final[dict[Any, View]] = {}
# message class -> whether its to_json is compiled code of its own (a codec module's native class):
# _PURE_VIEW, _NATIVE or _NATIVE_RAW_RECORDS (its to_json takes raw_records)
_NATIVE_VIEW: Final[dict[type, int]] = {}
_PURE_VIEW: Final = 0
_NATIVE: Final = 1
_NATIVE_RAW_RECORDS: Final = 2


def json_view(message: Any, version: int, raw_records: bool = False) -> dict[str, Any]:
    """``message.to_json(version)``: the compiled class's own, else through the layout's compiled
    function. With ``raw_records`` a compiled class that can leaves each records field's bytes in
    the view instead of their base64, for a caller that replaces them by its own view of the
    batches (others write the base64 still)."""
    cls = type(message)
    native = _NATIVE_VIEW.get(cls)
    if native is None:
        native = _NATIVE_VIEW[cls] = _view_kind(cls)
    if native:
        found: dict[str, Any]
        if raw_records and native == _NATIVE_RAW_RECORDS:
            found = message.to_json(version, raw_records=True)
        else:
            found = message.to_json(version)
        return found
    layout = cls._JSON.get(version)
    if layout is None:
        whole: dict[str, Any] = message.to_json(version)  # raises the codec's own error
        return whole
    view = _COMPILED.get(layout)
    if view is None:
        view = compiled(layout)
    return view(message)


def _view_kind(cls: type) -> int:
    if not getattr(cls, "COMPILED_JSON_VIEW", False):
        return _PURE_VIEW
    return _NATIVE_RAW_RECORDS if getattr(cls, "RAW_RECORDS_JSON_VIEW", False) else _NATIVE


def compiled(layout: Any) -> View:
    """The view function of ``layout`` (and of the layouts nested in it), built once."""
    view = _COMPILED.get(layout)
    if view is None:
        view = _COMPILED[layout] = _Compiler(layout).build()
    return view


class _Compiler:
    """Writes the source of one layout's view: a dict literal of the leading inline fields, then
    one statement per later field, in the layout's order (which is the JSON's key order)."""

    def __init__(self, layout: Any) -> None:
        self.layout = layout
        self.runtime = sys.modules[type(layout).__module__]  # the codec package's own _json
        self.names: dict[str, Any] = {}

    def build(self) -> View:
        runtime = self.runtime
        literal: list[tuple[str, str, str, str]] = []  # key, attribute, local, expression
        statements: list[str] = []
        for index, (field, mode, _, child) in enumerate(self.layout.entries):
            if mode == runtime.ABSENT:
                continue
            value = f"v{index}"
            expression = self._converted(index, field, child, value)
            if mode == runtime.TAGGED:
                self.names[f"default{index}"] = field.default
                test = f"{value} != default{index}"
                if hasattr(field.default, "_KINDS"):  # a struct: maybe a compiled value
                    self.names["differs"] = _differs
                    test = f"differs({value}, default{index})"
                statements.append(
                    f"    {value} = message.{field.attr}\n"
                    f"    if {test}:\n"
                    f"        out[{field.key!r}] = {expression}"
                )
            elif statements:
                statements.append(
                    f"    {value} = message.{field.attr}\n    out[{field.key!r}] = {expression}"
                )
            else:
                literal.append((field.key, field.attr, value, expression))
        lines = ["def view(message):"]
        lines += [f"    {value} = message.{attr}" for _, attr, value, _ in literal]
        lines.append(
            "    out = {" + ", ".join(f"{key!r}: {expr}" for key, _, _, expr in literal) + "}"
        )
        lines += statements
        lines.append("    return out")
        namespace = dict(self.names)
        source = "\n".join(lines)
        exec(compile(source, f"<json view of {self.layout.cls.__name__}>", "exec"), namespace)
        view: View = namespace["view"]
        return view

    def _converted(self, index: int, field: Any, child: Any, value: str) -> str:
        """The expression for the field's JSON value, ``value`` being a local holding it."""
        kind, element = field.kind, field.element
        if kind == "array" and child is not None:
            self.names[f"child{index}"] = compiled(child)
            return f"None if {value} is None else [child{index}(item) for item in {value}]"
        if kind == "array":
            item = self._scalar("item", element, index)
            if item is None:
                return f"None if {value} is None else list({value})"
            return f"None if {value} is None else [{item} for item in {value}]"
        if kind == "struct" and child is not None:
            self.names[f"child{index}"] = compiled(child)
            return f"None if {value} is None else child{index}({value})"
        if kind == "struct" or kind == "float64":
            return self._codec_converter(index, field, child, value)
        scalar = self._scalar(value, kind, index)
        return value if scalar is None else f"None if {value} is None else {scalar}"

    def _scalar(self, value: str, kind: str, index: int) -> str | None:
        """The JSON form of one scalar, or None when it is the value itself."""
        if kind == "uuid":
            self.names["uuid_to_json"] = self.runtime.uuid_to_json
            return f"uuid_to_json({value})"
        if kind in ("bytes", "records"):
            self.names["bytes_to_json"] = self.runtime.bytes_to_json
            return f"bytes_to_json({value})"
        if kind == "float64":
            return f"float({value})"
        return None

    def _codec_converter(self, index: int, field: Any, child: Any, value: str) -> str:
        convert = self.runtime._value_to_json
        self.names[f"convert{index}"] = lambda item: convert(field, child, item)
        return f"None if {value} is None else convert{index}({value})"


def _differs(value: Any, default: Any) -> bool:
    """The writer's non-default test ``value != default`` for a struct field, also when ``value`` is
    the compiled twin of the default's pure class: then, as the generated ``__eq__`` does, field by
    field (nested structs and struct arrays likewise), unknown tagged fields empty or None alike."""
    if type(value) is type(default) or value is None:
        return bool(value != default)
    kinds = getattr(type(default), "_KINDS", None)
    if kinds is None or getattr(type(value), "_KINDS", None) != kinds:
        return True
    for name in kinds:
        if _values_differ(getattr(value, name), getattr(default, name)):
            return True
    return (value.unknown_tagged_fields or None) != (default.unknown_tagged_fields or None)


def _values_differ(value: Any, default: Any) -> bool:
    if hasattr(default, "_KINDS"):
        return _differs(value, default)
    if isinstance(default, list) and isinstance(value, list):
        return len(value) != len(default) or any(
            _values_differ(item, item_default) for item, item_default in zip(value, default)
        )
    return bool(value != default)
