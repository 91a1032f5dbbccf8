"""Kafka facts that are no message spec: its error codes and the names of all its API keys.

A spec folder may hold two such files of our own JSON (their lower-case names keep them apart from
Kafka's spec files, which the loader then skips):

- ``errors.json``: Kafka's ``Errors`` enum of one release, a row per code (code, name, retriable,
  default message); ``tests/interop/kafka_facts.py`` writes it from the release's kafka-clients jar.
- ``api_keys.json``: every API key of Kafka's request specs with its name, so that a capture's API
  outside the specs generated is still named; ``python -m kraftwire.codegen.api_keys_file SOURCE...``
  writes it from spec sources (a spec folder, a kafka-clients jar, a release tarball).

Both are checked here (shape, no code or name twice, names that make Python constants, agreement
with the request specs of the same set) before ``facts_emit`` writes ``errors.py`` and ``api_keys.py``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

ERRORS_FILE = "errors.json"
API_KEYS_FILE = "api_keys.json"
FACT_FILES = (ERRORS_FILE, API_KEYS_FILE)

_CONSTANT = r"^[A-Z][A-Z0-9_]*$"
_API_NAME = r"^[A-Z][A-Za-z0-9]*$"
_INT16 = {"type": "integer", "minimum": -(1 << 15), "maximum": (1 << 15) - 1}
_SCHEMAS = {
    ERRORS_FILE: {
        "type": "object",
        "required": ["kafkaRelease", "errors"],
        "additionalProperties": False,
        "properties": {
            "about": {"type": "string"},
            "kafkaRelease": {"type": "string", "pattern": r"^\d+\.\d+\.\d+$"},
            "errors": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["code", "name", "retriable", "message"],
                    "additionalProperties": False,
                    "properties": {
                        "code": _INT16,
                        "name": {"type": "string", "pattern": _CONSTANT},
                        "retriable": {"type": "boolean"},
                        "message": {"type": "string", "minLength": 1},
                    },
                },
            },
        },
    },
    API_KEYS_FILE: {
        "type": "object",
        "required": ["apiKeys"],
        "additionalProperties": False,
        "properties": {
            "about": {"type": "string"},
            "apiKeys": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["apiKey", "name"],
                    "additionalProperties": False,
                    "properties": {
                        "apiKey": _INT16,
                        "name": {"type": "string", "pattern": _API_NAME},
                    },
                },
            },
        },
    },
}


@dataclass(frozen=True)
class KafkaError:
    code: int
    name: str
    retriable: bool
    message: str


@dataclass(frozen=True)
class ErrorTable:
    release: str
    errors: tuple[KafkaError, ...]  # in code order
    source: str  # the file's name, for the generated module's header


@dataclass(frozen=True)
class KafkaFacts:
    """The fact files of a spec set; a file the set does not hold is None."""

    errors: ErrorTable | None = None
    api_keys: dict[int, str] | None = None  # API key -> name, from api_keys.json


def is_fact_file(path: Path) -> bool:
    return path.name in FACT_FILES


def fact_files(sources: list[Path]) -> list[Path]:
    """The fact files in spec folders (searched recursively, like specs) and named directly."""
    found: list[Path] = []
    for source in sources:
        if source.is_dir():
            found += [p for name in FACT_FILES for p in source.rglob(name) if p.is_file()]
        elif is_fact_file(source):
            found.append(source)
    return sorted(set(found))


def load_facts(sources: list[Path], request_names: dict[int, str]) -> tuple[KafkaFacts, list[str]]:
    """The fact files among ``sources``, checked, and every problem found (one line each).

    ``request_names`` (API key -> name of the set's request specs) must agree with api_keys.json.
    """
    problems: list[str] = []
    documents: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in fact_files(sources):
        if path.name in documents:
            problems.append(
                f"{path.name}: found twice, in {documents[path.name][0].parent} and {path.parent}"
            )
            continue
        document, found = _read(path)
        problems += found
        if document is not None:
            documents[path.name] = (path, document)
    errors: ErrorTable | None = None
    api_keys: dict[int, str] | None = None
    if ERRORS_FILE in documents:
        errors, found = _error_table(documents[ERRORS_FILE][1])
        problems += found
    if API_KEYS_FILE in documents:
        api_keys, found = _api_keys(documents[API_KEYS_FILE][1], request_names)
        problems += found
    return KafkaFacts(errors, api_keys), problems


def _read(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{path.name}: unreadable: {exc}"]
    except json.JSONDecodeError as exc:
        return None, [f"{path.name}: not valid JSON: {exc}"]
    validator = jsonschema.Draft202012Validator(_SCHEMAS[path.name])
    shape = sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
    if shape:
        return None, [f"{path.name}: {_where(error)}{error.message}" for error in shape]
    return dict(document), []


def _where(error: jsonschema.ValidationError) -> str:
    path = "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
    )
    return f"{path.lstrip('.')}: " if path else ""


def _twice(file: str, what: str, values: list[int] | list[str]) -> list[str]:
    counts = Counter[int | str](values)
    return [f"{file}: {what} {value} is listed twice" for value, n in counts.items() if n > 1]


def _error_table(document: dict[str, Any]) -> tuple[ErrorTable | None, list[str]]:
    rows = [
        KafkaError(r["code"], r["name"], r["retriable"], r["message"]) for r in document["errors"]
    ]
    problems = _twice(ERRORS_FILE, "code", [r.code for r in rows])
    problems += _twice(ERRORS_FILE, "name", [r.name for r in rows])
    if problems:
        return None, problems
    table = tuple(sorted(rows, key=lambda row: row.code))
    return ErrorTable(document["kafkaRelease"], table, ERRORS_FILE), []


def _api_keys(
    document: dict[str, Any], request_names: dict[int, str]
) -> tuple[dict[int, str] | None, list[str]]:
    rows = document["apiKeys"]
    problems = _twice(API_KEYS_FILE, "API key", [row["apiKey"] for row in rows])
    problems += _twice(API_KEYS_FILE, "name", [row["name"] for row in rows])
    names = {row["apiKey"]: row["name"] for row in rows}
    for key, spec_name in sorted(request_names.items()):
        if key in names and names[key] != spec_name:
            problems.append(
                f"{API_KEYS_FILE}: API key {key} is named {names[key]}, its request spec "
                f"calls it {spec_name}"
            )
    return (None if problems else dict(sorted(names.items()))), problems


def constant_name(api_name: str) -> str:
    """``OffsetForLeaderEpoch`` -> ``OFFSET_FOR_LEADER_EPOCH`` (the name of Kafka's ApiKeys constant)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", api_name).upper()


def api_keys_document(request_names: dict[int, str]) -> dict[str, object]:
    """``api_keys.json``'s content for the request specs' API keys and names."""
    return {
        "about": "The API keys of Kafka's request specs and their names, in key order. Written by"
        " `python -m kraftwire.codegen.api_keys_file SOURCE...`; kraftwire codegen emits api_keys.py from it"
        " and the request specs of the set.",
        "apiKeys": [{"apiKey": key, "name": name} for key, name in sorted(request_names.items())],
    }
