"""Errors that name the failing element: the encode-side value checks and the element paths of failed
reads and writes, rebuilt only once something has failed (standard library only).

Nothing here runs on the success path. Generated readers and writers call into it from their except
clauses (``decode_failure``, ``write_failure``, ``extend_path``); ``Message.decode``/``encode`` and the
JSON readers turn what it builds into the public :class:`~._runtime.ProtocolError` subclasses.
"""

from __future__ import annotations

import linecache
import re
import struct
import uuid
from types import FrameType

from ._runtime import (
    MAX_STRING_BYTES,
    DecodeError,
    EncodeError,
    ProtocolError,
    UnsupportedVersionError,
    too_long,
)

# -- encode-side checks ------------------------------------------------------------------------------

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


_EXPECTED_TYPES: dict[str, type | tuple[type, ...]] = {
    "bool": bool,
    "float64": (float, int),
    "string": str,
    "bytes": (bytes, bytearray, memoryview),
    "records": (bytes, bytearray, memoryview),
    "uuid": uuid.UUID,
    "array": list,
}


def explain_value(kind: str, value: object, nullable: bool) -> str | None:
    """Why ``value`` cannot be written as ``kind``, or None when it can (used only on the error path)."""
    if value is None:
        return None if nullable else "is null but not nullable in this version"
    if kind in INT_RANGES:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"expected an int for {kind}, got {type(value).__name__}"
        low, high = INT_RANGES[kind]
        if not low <= value <= high:
            return f"{value} is out of range for {kind} [{low}, {high}]"
        return None
    expected = _EXPECTED_TYPES.get(kind)
    if expected is not None and not isinstance(value, expected):
        return f"expected {kind}, got {type(value).__name__}"
    if kind == "string" and isinstance(value, str):
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            return lone_surrogate(value, exc)
        if size > MAX_STRING_BYTES:
            return str(too_long(size))
    return None


def lone_surrogate(value: str, exc: UnicodeEncodeError) -> str:
    """Why ``value`` has no UTF-8 form: Python strings can hold a lone surrogate, Kafka's cannot."""
    return f"not valid Unicode text: lone surrogate {value[exc.start]!r} at index {exc.start}"


class _PathError(Exception):
    """Carries a field path outward through nested struct readers and writers."""

    def __init__(self, path: list[str], cause: BaseException) -> None:
        super().__init__(path, cause)
        self.path = path
        self.cause = cause


def extend_path(exc: BaseException, segment: str) -> _PathError:
    """Prefix the failing field's path with ``segment`` as the error travels out of a nested struct."""
    if isinstance(exc, _PathError):
        exc.path.insert(0, segment)
        return exc
    return _PathError([segment], exc)


def decode_failure(message_name: str, version: int, exc: BaseException) -> ProtocolError:
    """The public error for a failure anywhere in a message reader, naming the element path.

    Runs only on the error path: the path and the offset come from the traceback (see below).
    """
    if isinstance(exc, UnsupportedVersionError):
        return exc
    path, offset = _failure_path(exc)
    if isinstance(exc, DecodeError):
        text = str(exc)
        offset = exc.offset
    elif isinstance(exc, UnicodeDecodeError):  # from an inlined short string
        text = f"string is not valid UTF-8 ({exc.reason})"
        offset = None if offset is None else offset + 1 + exc.start
    elif isinstance(exc, (struct.error, IndexError)):
        text = "truncated input" if offset is None else f"truncated input at offset {offset}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    where = f"{path}: " if path else ""
    error = DecodeError(f"{message_name} v{version}: {where}{text}")
    error.offset = offset
    error.field_path = path
    return error


# -- error paths, rebuilt from the traceback ----------------------------------------------------------
#
# Readers keep no path while they run. In a generated reader every read follows a comment
# "# read <path>" naming what it reads relative to the function's struct, "[_i]" standing for the
# element index of an inlined array, "a, b, c" for a run of fixed-width fields read at once and
# "(tagged fields)" for the struct's tagged section. On failure each generated reader frame in the
# traceback contributes the nearest such comment at or above its failing line, with the frame's own
# "_i" filled in; in a run, the first field that does not fit in the input is named.

_READ_MARK = "# read "
_RUN_READ = re.compile(r"\b(_S\d+)\.unpack_from\(")
_STRUCT_CODE = re.compile(r"\d*[a-zA-Z?]")


def _failure_path(exc: BaseException) -> tuple[str, int | None]:
    """The element path of the read that raised ``exc``, and the offset where it started."""
    segments: list[str] = []
    offset: int | None = None
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name.startswith("_read_"):
            lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
            segment = _path_comment(lines, tb.tb_lineno, frame.f_code.co_firstlineno)
            segment = segment.replace("[_i]", f"[{frame.f_locals.get('_i')}]")
            position = frame.f_locals.get("pos")
            offset = position if isinstance(position, int) else None
            failing = lines[tb.tb_lineno - 1] if tb.tb_lineno <= len(lines) else ""
            run = _RUN_READ.search(failing)
            if run is not None and offset is not None and ", " in segment:
                segment, offset = _field_of_run(
                    segment, frame.f_globals[run.group(1)], offset, frame
                )
            if segment:
                segments.append(segment)
        tb = tb.tb_next
    return ".".join(segments), offset


def _path_comment(lines: list[str], line: int, first_line: int) -> str:
    for number in range(line - 1, first_line - 1, -1):
        text = lines[number].strip()
        if text.startswith(_READ_MARK):
            return text[len(_READ_MARK) :].split("(")[0].strip()
    return ""


def _field_of_run(
    segment: str, compiled: struct.Struct, start: int, frame: FrameType
) -> tuple[str, int]:
    """The first field of a run ("prefix.a, b, c") that runs past the end of the input."""
    head, _, first = segment.split(", ")[0].rpartition(".")
    names = [first, *segment.split(", ")[1:]]
    available = len(frame.f_locals.get("buf", b""))
    offset = start
    for name, code in zip(names, _STRUCT_CODE.findall(compiled.format.lstrip(">"))):
        size = struct.calcsize(">" + code)
        if offset + size > available:
            return (f"{head}.{name}" if head else name), offset
        offset += size
    return segment, start


def write_failure(exc: BaseException, obj: object, fields: str, cls: type) -> _PathError:
    """Explain a failure inside a struct writer: which field (which element of an array), and what
    is wrong with its value.

    Writers keep only the name of the field they are writing; this runs on the error path only, so
    it can afford to re-check values one by one and to look up the failing element's index.
    """
    if isinstance(exc, _PathError):
        exc.path.insert(0, _element_path(fields, exc))
        return exc
    if not isinstance(obj, cls):
        what = (
            "is null but not nullable in this version"
            if obj is None
            else (f"expected {cls.__name__}, got {type(obj).__name__}")
        )
        return _PathError([], EncodeError(what))
    kinds: dict[str, str] = getattr(cls, "_KINDS", {})  # every generated struct class has one
    for attr in fields.split(","):
        kind = kinds.get(attr, "")
        if isinstance(exc, ProtocolError) and not kind.startswith("[]"):
            continue  # already says what is wrong; only an array element's index is missing
        found = _explain_field(kind, attr, getattr(obj, attr, None))
        if found is not None:
            path, reason = found
            return _PathError([path], EncodeError(reason))
    return _PathError([fields], exc)


def _explain_field(kind: str, attr: str, value: object) -> tuple[str, str] | None:
    """The path and the problem of ``value``, or None when it can be written. ``kind`` is the
    field's kind, "[]int32" (say) for an array of primitives, whose elements are checked too."""
    if kind.startswith("[]"):
        if isinstance(value, list):
            for index, item in enumerate(value):
                reason = explain_value(kind[2:], item, False)
                if reason is not None:
                    return f"{attr}[{index}]", reason
            return None
        kind = "array"
    reason = explain_value(kind, value, False)
    return None if reason is None else (attr, reason)


def _element_path(fields: str, exc: BaseException) -> str:
    """``fields`` as a path segment; for an array of structs ("topics[]"), the index of the element
    whose writer failed, found in the writer's locals ``topics_items`` and ``topics_item``."""
    if not fields.endswith("[]") or exc.__traceback__ is None:
        return fields
    writer = exc.__traceback__.tb_frame.f_locals  # the frame whose except clause called us
    attr = fields[:-2]
    items, item = writer.get(f"{attr}_items"), writer.get(f"{attr}_item")
    if isinstance(items, list):
        for index, candidate in enumerate(items):
            if candidate is item:
                return f"{attr}[{index}]"
    return fields


def encode_failure(message_name: str, version: int, exc: BaseException) -> ProtocolError:
    """The public error for a failure anywhere in a message writer or JSON reader."""
    path, cause = _unwrap(exc)
    if isinstance(cause, ProtocolError):
        cls: type[ProtocolError] = type(cause)
        text = str(cause)
    else:
        cls, text = EncodeError, f"{type(cause).__name__}: {cause}"
    where = f"{path}: " if path else ""
    error = cls(f"{message_name} v{version}: {where}{text}")
    error.field_path = path
    return error


def _unwrap(exc: BaseException) -> tuple[str, BaseException]:
    if isinstance(exc, _PathError):
        return ".".join(p for p in exc.path if p), exc.cause
    return "", exc
