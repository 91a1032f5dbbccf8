"""Python source for field defaults and for the "differs from its default" test of the wire rules."""

from __future__ import annotations

import uuid

from .model import Field


def default_expr(field: Field) -> str:
    """An expression that builds a fresh default value for ``field``."""
    kind = field.type.kind
    if field.default_is_null or kind == "records":
        return "None"
    if kind == "struct":
        return f"{field.type.struct_name}()"
    if kind == "array":
        return "_MapKeyList()" if field.struct is not None and field.struct.map_key_fields else "[]"
    return literal(field.default)


def mutable_default(field: Field) -> bool:
    """Whether the default is a fresh struct or list per object (so a shared sentinel stands for it)."""
    return not field.default_is_null and field.type.kind in ("struct", "array")


def literal(value: object) -> str:
    if value == (1 << 63) - 1 and type(value) is int:
        return "_INT64_MAX"
    if isinstance(value, uuid.UUID):
        return "_ZERO_UUID" if value.int == 0 else f'_UUID("{value}")'
    return repr(value)


def default_constant(field: Field) -> str:
    """Name of the module constant holding an (immutable, never handed out) default struct."""
    return f"_DEFAULT_{field.type.struct_name}"


def non_default_test(field: Field, expr: str) -> str:
    """Kafka's test for "this value must be written" (tagged fields) or "would be lost" (ignorable)."""
    kind = field.type.kind
    if field.default_is_null or kind == "records":
        return f"{expr} is not None"
    if kind == "struct":
        return f"{expr} != {default_constant(field)}"
    if kind == "array":
        return f"{expr} != []"
    if kind == "uuid" and isinstance(
        field.default, uuid.UUID
    ):  # compares the int in C, not in Python
        return f"{expr}.int != {field.default.int}"
    return f"{expr} != {literal(field.default)}"
