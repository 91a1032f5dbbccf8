"""Kafka's JsonConverter format, driven by one field table per struct layout.

Each generated struct has a tuple of ``JsonField`` (name, JSON key, type, default), and each of its
layouts a ``JsonLayout``: per field, whether it is inline, tagged or absent at those versions, whether
it is nullable there, and the layout of a nested struct. JSON is not a hot path, so one small
interpreter serves every message instead of generated code per version.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any, NamedTuple

from ._failures import INT_RANGES, extend_path, lone_surrogate
from ._runtime import EncodeError, UnsupportedVersionError

INLINE, TAGGED, ABSENT = "I", "T", "A"


class JsonField(NamedTuple):
    attr: str
    key: str
    kind: str  # a primitive kind, "struct" or "array"
    element: str = ""  # element kind of an array; the struct name for struct and struct arrays
    default: object = None  # tagged fields are written only when their value differs from this


class _Entry(NamedTuple):
    field: JsonField
    mode: str
    nullable: bool
    child: "JsonLayout | None"


class JsonLayout:
    """The JSON view of one struct at some versions."""

    __slots__ = ("cls", "entries", "map_key_list")

    def __init__(
        self,
        cls: type,
        fields: tuple[JsonField, ...],
        modes: str,  # one of INLINE/TAGGED/ABSENT per field
        nullable: str = "",  # "1" per field nullable at these versions ("" when none is)
        children: "dict[int, JsonLayout] | None" = None,  # field index -> nested struct layout
        map_key_list: type | None = None,  # list type for keyed arrays of this struct
    ) -> None:
        children = children or {}
        self.cls = cls
        self.map_key_list = map_key_list
        self.entries = tuple(
            _Entry(fld, modes[i], nullable[i] == "1" if nullable else False, children.get(i))
            for i, fld in enumerate(fields)
        )


def to_json(layout: JsonLayout, obj: object) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fld, mode, _, child in layout.entries:
        if mode == ABSENT:
            continue
        value = getattr(obj, fld.attr)
        if mode == TAGGED and not value != fld.default:  # the writer's non-default test
            continue
        out[fld.key] = None if value is None else _value_to_json(fld, child, value)
    return out


def _value_to_json(fld: JsonField, child: JsonLayout | None, value: Any) -> object:
    """``value`` has the Python type of the field's kind (checked by the writers, not here)."""
    kind = fld.kind
    if kind == "struct":
        return to_json(_struct_layout(fld, child), value)
    if kind == "array":
        if child is not None:
            return [to_json(child, item) for item in value]
        return [_scalar_to_json(fld.element, item) for item in value]
    return _scalar_to_json(kind, value)


def _struct_layout(fld: JsonField, child: JsonLayout | None) -> JsonLayout:
    if child is None:  # the generator gives every struct field a layout where it is present
        raise UnsupportedVersionError(f"no JSON layout for struct {fld.element} here")
    return child


def _scalar_to_json(kind: str, value: Any) -> object:
    if kind == "uuid":
        return uuid_to_json(value)
    if kind in ("bytes", "records"):
        return bytes_to_json(value)
    if kind == "float64":
        return float(value)
    return value


def from_json(layout: JsonLayout, data: object) -> Any:
    """A new ``layout.cls`` from its JSON form (an instance of that class, typed by the caller)."""
    data = json_object(data)
    obj = layout.cls()
    key = ""
    try:
        for fld, mode, nullable, child in layout.entries:
            key = fld.key + ("[]" if fld.kind == "array" and child is not None else "")
            if fld.key not in data:
                if mode == INLINE:
                    raise EncodeError(
                        f"unable to locate field {fld.key!r}, which is mandatory in this version"
                    )
                continue
            value = data[fld.key]
            if mode == ABSENT:
                if fld.element[:1].isupper():
                    raise UnsupportedVersionError(
                        f"can't read this version of {fld.element}: the struct is not in it"
                    )
                nullable = True  # kept as given; the ignorable rule decides on write
            if value is None:
                if not nullable:
                    raise EncodeError("is null but not nullable in this version")
                setattr(obj, fld.attr, None)
            else:
                setattr(obj, fld.attr, _value_from_json(fld, child, value))
    except Exception as exc:
        raise extend_path(exc, key) from None
    return obj


def _value_from_json(fld: JsonField, child: JsonLayout | None, value: object) -> object:
    kind = fld.kind
    if kind == "struct":
        return from_json(_struct_layout(fld, child), value)
    if kind == "array":
        items = json_list(value)
        if child is not None:
            converted = [from_json(child, item) for item in items]
            keyed = child.map_key_list
            return keyed(converted) if keyed is not None else converted
        return [_scalar_from_json(fld.element, item) for item in items]
    return _scalar_from_json(kind, value)


def _scalar_from_json(kind: str, value: object) -> object:
    if kind in INT_RANGES:
        return json_int(value, kind)
    if kind == "bool":
        if not isinstance(value, bool):
            raise EncodeError(f"expected a boolean, got {_json_type(value)}")
        return value
    if kind == "float64":
        if not isinstance(value, float):  # Kafka rejects an integer literal for float64
            raise EncodeError(f"expected a floating-point number, got {_json_type(value)}")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise EncodeError(f"expected a string, got {_json_type(value)}")
        return _json_text(value)
    if kind == "uuid":
        return uuid_from_json(value)
    return bytes_from_json(value)


def json_object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise EncodeError(f"expected a JSON object, got {_json_type(value)}")
    return value


def json_list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise EncodeError(f"expected a JSON array, got {_json_type(value)}")
    return value


def json_int(value: object, kind: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(f"expected an integer for {kind}, got {_json_type(value)}")
    if kind == "int8" and 128 <= value <= 256:
        value -= 128  # Kafka's JsonConverter quirk for int8
    low, high = INT_RANGES[kind]
    if not low <= value <= high:
        raise EncodeError(f"{value} is out of range for {kind} [{low}, {high}]")
    return value


def _json_text(value: str) -> str:
    """``value`` if it can be written as UTF-8. JSON's escapes can spell a lone surrogate
    (``"\\ud800"``), which no Kafka string can hold: refused here, where the field is known."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(lone_surrogate(value, exc)) from None
    return value


def uuid_to_json(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def uuid_from_json(value: object) -> uuid.UUID:
    if not isinstance(value, str):
        raise EncodeError(f"expected a base64url uuid string, got {_json_type(value)}")
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except ValueError as exc:
        raise EncodeError(f"invalid base64url uuid {value!r}: {exc}") from None
    if len(raw) != 16:
        raise EncodeError(f"uuid {value!r} is {len(raw)} bytes, not 16")
    return uuid.UUID(bytes=raw)


def bytes_to_json(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def b64_or_none(value: bytes | bytearray | memoryview | None) -> str | None:
    """Standard base64 of any bytes-like value, or None for None (the records layer's JSON views)."""
    return None if value is None else base64.b64encode(value).decode("ascii")


def bytes_from_json(value: object) -> bytes:
    if not isinstance(value, str):
        raise EncodeError(f"expected a base64 string, got {_json_type(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError as exc:
        raise EncodeError(f"invalid base64: {exc}") from None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}
    return names.get(type(value), "object" if isinstance(value, dict) else type(value).__name__)
