"""Field defaults of the spec language (docs/wire-format.md §5), checked as Kafka's generator checks them.

``parse_default(type_name, text, nullable_in_all_versions)`` returns the Python value of a default:

==========================  =====================================================================
spec type                   value
==========================  =====================================================================
bool                        ``bool`` (``""`` is False; ``true``/``false`` in any letter case)
int8 ... int64, uint16/32   ``int`` (decimal or ``0x`` hex, range-checked; ``"0x"`` alone is 0)
float64                     ``float`` (Java ``Double.parseDouble`` syntax)
uuid                        ``uuid.UUID`` (base64url of 16 bytes; ``""`` is the zero uuid)
string                      ``str``
bytes                       ``b""``
records                     ``None`` always (Kafka ignores any records default)
``[]T``                     ``[]``
struct (capitalized name)   ``EMPTY_STRUCT``: the struct with every field at its own default
``"null"`` (string, bytes,  ``None``; allowed only when the field is nullable in all its versions
array, struct)              (otherwise ``NullDefaultError``)
==========================  =====================================================================

``text`` may be any JSON scalar: Jackson turns ``-1``/``false`` into the strings Kafka checks, and a JSON
``null`` means "no default" (``""``), not the string ``"null"``.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import re
import uuid

INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

_DECIMAL = re.compile(r"[+-]?[0-9]+")
_HEX = re.compile(r"[+-]?[0-9a-fA-F]+")
_JAVA_DECIMAL_FLOAT = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
)
_JAVA_HEX_FLOAT = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?"
)
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")


class DefaultError(ValueError):
    """A ``default`` that Kafka's generator rejects for the field's type."""


class NullDefaultError(DefaultError):
    """A ``"null"`` default on a field that is not nullable in every one of its versions."""


class StructDefault(enum.Enum):
    EMPTY = "empty struct"


EMPTY_STRUCT = StructDefault.EMPTY


def default_text(value: object) -> str:
    """The string Kafka sees for a JSON ``default`` value (Jackson's scalar-to-String coercion)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_default(type_name: str, text: object, nullable_in_all_versions: bool) -> object:
    text = default_text(text)
    type_name = type_name.strip()
    if type_name.startswith("[]"):
        return _empty_or_null(text, [], "array", "the empty array", nullable_in_all_versions)
    if type_name[:1].isupper():
        return _empty_or_null(
            text, EMPTY_STRUCT, "struct", "the empty struct", nullable_in_all_versions
        )
    if type_name == "bool":
        return _parse_bool(text)
    if type_name in INTEGER_RANGES:
        return _parse_integer(type_name, text)
    if type_name == "float64":
        return _parse_float(text)
    if type_name == "uuid":
        return _parse_uuid(text)
    if type_name == "string":
        if text == "null":
            _require_nullable(nullable_in_all_versions)
            return None
        return text
    if type_name == "bytes":
        return _empty_or_null(text, b"", "bytes", "empty", nullable_in_all_versions)
    if type_name == "records":
        return None
    raise DefaultError(f"cannot check a default for unknown type {type_name!r}")


def _quote(text: str) -> str:
    return json.dumps(text)


def _require_nullable(nullable_in_all_versions: bool) -> None:
    if not nullable_in_all_versions:
        raise NullDefaultError(
            'default "null" needs nullableVersions to cover every version of the field'
        )


def _empty_or_null(text: str, empty: object, kind: str, empty_name: str, nullable: bool) -> object:
    if text == "null":
        _require_nullable(nullable)
        return None
    if text != "":
        raise DefaultError(
            f'invalid {kind} default {_quote(text)}: only "" ({empty_name}) or "null" are allowed'
        )
    return [] if isinstance(empty, list) else empty


def _parse_bool(text: str) -> bool:
    if text == "" or text.lower() == "false":
        return False
    if text.lower() == "true":
        return True
    raise DefaultError(f"invalid bool default {_quote(text)}: expected true or false")


def _parse_integer(type_name: str, text: str) -> int:
    digits, base, pattern = text, 10, _DECIMAL
    if text.startswith("0x"):  # only this exact prefix, like Kafka; "-0x1" and "0X1" are not hex
        digits, base, pattern = text[2:], 16, _HEX
    if digits == "":
        return 0
    if not pattern.fullmatch(digits):
        form = "hex" if base == 16 else "decimal"
        raise DefaultError(f"invalid {type_name} default {_quote(text)}: not a {form} integer")
    value = int(digits, base)
    low, high = INTEGER_RANGES[type_name]
    if not low <= value <= high:
        raise DefaultError(
            f"invalid {type_name} default {_quote(text)}: out of range {low}..{high}"
        )
    return value


def _parse_float(text: str) -> float:
    if text == "":
        return 0.0
    stripped = text.strip()
    if _JAVA_HEX_FLOAT.fullmatch(stripped):
        return float.fromhex(stripped.rstrip("fFdD"))
    if not _JAVA_DECIMAL_FLOAT.fullmatch(stripped):
        raise DefaultError(f"invalid float64 default {_quote(text)}: not a number")
    unsigned = stripped.lstrip("+-")
    if unsigned in ("NaN", "Infinity"):
        return float(stripped.replace("Infinity", "inf"))
    return float(stripped.rstrip("fFdD"))


def _parse_uuid(text: str) -> uuid.UUID:
    if text == "":
        return uuid.UUID(int=0)
    raw = b""
    if _BASE64URL.fullmatch(text):
        unpadded = text.rstrip("=")
        try:
            raw = base64.urlsafe_b64decode(unpadded + "=" * (-len(unpadded) % 4))
        except (binascii.Error, ValueError):
            raw = b""
    if len(raw) != 16:
        raise DefaultError(
            f"invalid uuid default {_quote(text)}: expected base64url of 16 bytes, "
            'e.g. "H3KKO4NTRPaCWtEmm3vW7A"'
        )
    return uuid.UUID(bytes=raw)
