"""Spec validation: every rule of Kafka's generator (docs/wire-format.md §12), all reported at once.

Stage 1 checks the JSON structure against ``spec_schema.json`` (unknown keys, value shapes, enums).
When it fails, stage 2 is skipped, because the semantic rules rely on that shape. Stage 2 applies
the per-file rules; ``validate_specs`` adds the rules that span the files of one directory (package).

Kafka applies some rules only while it generates a message class: defaults, the struct registry,
tagged and per-field flexible versions, ``[]records``, tagged records and top-level mapKey.
Placeholder specs (empty ``validVersions``) get no class, so those rules are skipped for them too.

Paths name fields as written in the spec: ``Topics[].Partitions[].PreVote`` (``[]`` after
array-of-struct fields), ``commonStructs.<Name>.<Field>``, or a top-level key (``validVersions``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from .defaults import INTEGER_RANGES, DefaultError, NullDefaultError, parse_default
from .loader import RawSpec, SpecSyntaxError, load_raw
from .model import PRIMITIVE_SIZES, VARIABLE_KINDS
from .versions import MAX_VERSION, NONE, Versions, VersionSyntaxError

# Every rule id with its message template; tests/specs_broken has a failing spec for each one.
RULES: dict[str, str] = {
    # structure (spec_schema.json, Jackson's strictness)
    "unknown-key": 'unknown key "{key}"',
    "missing-key": 'missing required key "{key}"',
    "invalid-value": "{key}{value} is not {expected}",
    "unknown-enum-value": "{key}{value} is not {expected}",
    # version ranges
    "versions-required": "{key}is required",
    "version-syntax": '{key}"{text}" is not a version range ("N", "A-B", "N+" or "none")',
    "version-negative": '{key}"{text}" has a negative version',
    # message level
    "valid-versions-maximum": "{versions} has no maximum version",
    "flexible-versions-required": 'required unless validVersions is "none" ("0+" for new messages)',
    "flexible-versions-open-ended": '{versions} must be "none" or open-ended ("N+")',
    "listeners-not-request": "only allowed on request specs, not on {type} specs",
    "unstable-not-request": "only allowed on request specs, not on {type} specs",
    "api-key-required": "a {type} spec needs an apiKey",
    "integer-range": "{key}{value} is outside the {range} range",
    "name-suffix": 'a {type} name must end in "{suffix}": "{name}"',
    "coordinator-key-versions": 'must be "0" for a coordinator-key, not {versions}',
    "coordinator-key-flexible": 'must be "none" for a coordinator-key, not {versions}',
    # structs and fields
    "duplicate-field-name": "field name {name} is used twice in this struct",
    "duplicate-tag": "tag {tag} is already used by {other}",
    "tags-not-contiguous": "tags must be contiguous from 0: tag {missing} is unused but tag {highest} is used",
    "field-name": "field name {name} does not match [A-Za-z][A-Za-z0-9]*",
    "nullable-type": "type {type} cannot be nullable (nullableVersions {nullable})",
    "entity-type-mismatch": "entityType {entity} needs type {expected}, not {type}",
    "fields-not-allowed": "only struct and struct-array fields may have fields, not {type}",
    "field-flexible-versions-type": "only string and bytes fields may override flexibleVersions, not {type}",
    "field-flexible-versions-subset": "flexibleVersions {field} is not a subset of the message's flexibleVersions {message}",
    "tagged-map-key": "a tagged field cannot be a mapKey",
    "map-key-top-level": "mapKey is not allowed on top-level fields",
    "zero-copy-type": "only bytes fields may use zeroCopy, not {type}",
    "tag-negative": "tag {tag} is negative",
    "tag-without-tagged-versions": "tag {tag} given without taggedVersions",
    "tagged-versions-without-tag": "taggedVersions {tagged} given without a tag",
    "tagged-nullable-mixed": "nullableVersions {nullable} must cover all or none of taggedVersions {tagged}",
    "tagged-versions-open-ended": 'taggedVersions {tagged} must be open-ended ("N+")',
    "tagged-versions-subset": "taggedVersions {tagged} is not a subset of versions {versions}",
    "tagged-versions-flexible": "taggedVersions {tagged} is not a subset of the flexible versions {flexible}",
    "default-invalid": "{reason}",
    "null-default-not-nullable": "{reason}: nullableVersions {nullable}, versions {versions}",
    "array-of-arrays": "type {type}: arrays of arrays are not allowed (use an array of structs)",
    "records-array": "arrays of records ([]records) are not supported",
    "records-tagged": "records fields cannot be tagged",
    "unknown-type": "unknown type {type}",
    "struct-type-name": "struct type {type} must be a capitalized name matching [A-Z][A-Za-z0-9]*",
    "unknown-struct": "struct type {name} is neither a commonStruct nor defined here",
    "common-struct-name": "commonStruct name {name} must start with an upper-case letter",
    "duplicate-common-struct": "commonStruct {name} is defined twice",
    "common-struct-redefined": "commonStruct {name} cannot be redefined inline",
    "duplicate-struct": "struct {name} is already defined at {other}",
    # across the files of one directory
    "duplicate-api-key": "another {type} spec ({other}) already has apiKey {key}",
    "duplicate-metadata-record-type": "another {type} spec ({other}) already has apiKey {key}",
    "duplicate-coordinator-record": "another {type} spec ({other}) already has apiKey {key}",
    "missing-response": "no {partner} spec in this directory has apiKey {key}",
    "missing-request": "no {partner} spec in this directory has apiKey {key}",
    "coordinator-missing-value": "no {partner} spec in this directory has apiKey {key}",
    "coordinator-missing-key": "no {partner} spec in this directory has apiKey {key}",
}

# Problems Kafka's generator accepts but a spec author almost certainly did not mean; ``spec check``
# prints them as warnings and fails on them only with ``--strict``.
WARNINGS: dict[str, str] = {
    # Kafka generates such a field but never reads or writes it (ShareFetchRequest's
    # PartitionMaxBytes, versions "0" in a spec valid for "1-2", is the one case in Kafka's tree).
    "field-outside-valid-versions": "versions {versions} share no version with validVersions {valid}: "
    "the field is never on the wire",
}

FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")  # FieldSpec.java:31
STRUCT_TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
PRIMITIVE_TYPES = frozenset(PRIMITIVE_SIZES) | frozenset(VARIABLE_KINDS)
NULLABLE_PRIMITIVES = frozenset(VARIABLE_KINDS)
ENTITY_BASE_TYPES = dict(
    transactionalId="string",
    producerId="int64",
    groupId="string",
    topicName="string",
    brokerId="int32",
)
_Range = Versions | None  # None: missing or invalid, already reported


@dataclass(frozen=True)
class SpecError:
    file: str  # file name, e.g. "VoteRequest.json"
    path: str  # "Topics[].Partitions[].PreVote", a top-level key such as "validVersions", or ""
    rule: str  # stable rule id from RULES, e.g. "tagged-versions-subset"
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.file}: {where}{self.message}"


def spec_error(file: str, path: str, rule: str, **values: object) -> SpecError:
    return SpecError(file, path, rule, RULES[rule].format(**values))


def load_and_validate(paths: list[Path]) -> tuple[list[RawSpec], list[SpecError]]:
    """Read every spec file and validate them as one set: ``(loaded specs, every problem)``, a file
    that is not JSON or cannot be read included (rules ``json-syntax``, ``unreadable``)."""
    raws: list[RawSpec] = []
    errors: list[SpecError] = []
    for path in paths:
        try:
            raws.append(load_raw(path))
        except SpecSyntaxError as exc:
            errors.append(SpecError(path.name, "", "json-syntax", str(exc)))
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(SpecError(path.name, "", "unreadable", str(exc)))
    return raws, errors + validate_specs(raws)


def validate_spec(raw: RawSpec) -> list[SpecError]:
    structural = _schema_errors(raw.path.name, raw.data)
    return structural or _SpecChecker(raw.path.name, raw.spec).run()


def validate_specs(raws: list[RawSpec]) -> list[SpecError]:
    errors = [error for raw in raws for error in validate_spec(raw)]
    by_directory: dict[Path, list[RawSpec]] = defaultdict(list)
    for raw in raws:
        if isinstance(raw.data, dict):
            by_directory[raw.path.parent].append(raw)
    for directory in sorted(by_directory):
        errors += _cross_file_errors(sorted(by_directory[directory], key=lambda r: r.path.name))
    return errors


def spec_warnings(raws: list[RawSpec]) -> list[SpecError]:
    """The ``WARNINGS`` of every spec; shapes that did not validate are skipped (already errors)."""
    warnings: list[SpecError] = []
    for raw in raws:
        data = raw.data
        if not isinstance(data, dict) or _schema_errors(raw.path.name, data):
            continue
        valid = _parsed(data.get("validVersions"))
        if valid is None or valid.empty:
            continue  # placeholders have no wire form at all
        common = data.get("commonStructs") or []
        structs = [(f"commonStructs.{s['name']}", s.get("fields")) for s in common]
        for prefix, fields in [("", data.get("fields")), *structs]:
            warnings += _fields_outside(raw.path.name, fields or [], prefix, valid)
    return warnings


def _fields_outside(file: str, fields: list[Any], prefix: str, valid: Versions) -> list[SpecError]:
    found: list[SpecError] = []
    for raw in fields:
        path = f"{prefix}.{raw['name']}" if prefix else raw["name"]
        versions = _parsed(raw.get("versions") or raw.get("taggedVersions"))
        if versions is not None and versions.intersect(valid).empty:
            message = WARNINGS["field-outside-valid-versions"].format(
                versions=versions, valid=valid
            )
            found.append(SpecError(file, path, "field-outside-valid-versions", message))
        child = path + ("[]" if str(raw["type"]).strip().startswith("[]") else "")
        found += _fields_outside(file, raw.get("fields") or [], child, valid)
    return found


def _parsed(text: object) -> Versions | None:
    try:
        return Versions.parse(text)  # type: ignore[arg-type]
    except ValueError:  # VersionSyntaxError: reported by validation already
        return None


# ---- stage 1


@lru_cache(maxsize=1)
def _schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((Path(__file__).parent / "spec_schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _schema_errors(file: str, data: object) -> list[SpecError]:
    if not isinstance(data, dict):
        return [SpecError(file, "", "invalid-value", "a spec must be a JSON object")]
    errors: list[SpecError] = []
    for error in _schema_validator().iter_errors(data):
        path, key = _locate(data, list(error.absolute_path))
        if error.validator == "additionalProperties":
            known = error.schema.get("properties", {})
            extras = sorted(name for name in error.instance if name not in known)
            errors += [spec_error(file, path, "unknown-key", key=name) for name in extras]
        elif error.validator == "required":
            missing = [name for name in error.validator_value if name not in error.instance]
            errors += [spec_error(file, path, "missing-key", key=name) for name in missing]
        else:
            if not path:  # a top-level key is the path itself
                path, key = key, ""
            rule = "unknown-enum-value" if error.validator == "enum" else "invalid-value"
            label, value = f"{key} " if key else "", json.dumps(error.instance)
            expected = error.schema.get("description", "valid here")
            errors.append(spec_error(file, path, rule, key=label, value=value, expected=expected))
    return sorted(set(errors), key=errors.index)


def _locate(data: dict[str, Any], parts: list[Any]) -> tuple[str, str]:
    """Turn a JSON location into (field path, first key below that field or struct)."""
    node: object = data
    path, child_prefix, key, i = "", "", "", 0
    while i < len(parts):
        part = parts[i]
        if not key and part in ("fields", "commonStructs") and i + 1 < len(parts):
            node = node[part][parts[i + 1]]  # type: ignore[index]
            name = node.get("name") if isinstance(node, dict) else None
            label = name if isinstance(name, str) else f"{part}[{parts[i + 1]}]"
            if part == "commonStructs":
                path = f"commonStructs.{label}"
            else:
                path = f"{child_prefix}.{label}" if child_prefix else label
            field_type = node.get("type") if isinstance(node, dict) else None
            is_array = isinstance(field_type, str) and field_type.strip().startswith("[]")
            child_prefix, i = path + ("[]" if is_array else ""), i + 2
        else:
            key, i = key or str(part), i + 1
    return path, key


# ---- stage 2


@dataclass(frozen=True)
class _FieldType:
    text: str  # e.g. "[]TopicData"
    base: str  # the element type of an array, else the type itself

    @property
    def is_array(self) -> bool:
        return self.text.startswith("[]")

    @property
    def is_struct(self) -> bool:
        """A struct or an array of structs: the types that may carry ``fields``."""
        return self.base not in PRIMITIVE_TYPES

    @property
    def nullable(self) -> bool:
        return self.is_array or self.is_struct or self.base in NULLABLE_PRIMITIVES


@dataclass(frozen=True)
class _Field:
    """One field with its ranges parsed; a range or type is None when it did not parse."""

    raw: dict[str, Any]
    path: str
    top_level: bool
    type: _FieldType | None
    versions: Versions | None
    tagged: Versions | None
    nullable: Versions | None
    flexible_override: Versions | None


class _SpecChecker:
    def __init__(self, file: str, data: dict[str, Any]) -> None:
        self.file, self.data = file, data
        self.errors: list[SpecError] = []
        self.generating = True  # False for placeholders: Kafka generates no class for them
        self.message_flexible = NONE
        self.common_structs: set[str] = set()
        self.inline_structs: dict[str, str] = {}  # struct name -> path of the field defining it

    def fail(self, path: str, rule: str, **values: object) -> None:
        self.errors.append(spec_error(self.file, path, rule, **values))

    def versions(self, path: str, key: str, text: object, default: _Range) -> _Range:
        """Parse a version range; report it and return None when it is missing or invalid."""
        label = f"{key} " if path else ""  # at top level the key is the path
        if text is None or str(text).strip() == "":
            if default is None:
                self.fail(path or key, "versions-required", key=label)
            return default
        try:
            return Versions.parse(str(text))
        except VersionSyntaxError:
            rule = "version-negative" if re.search(r"(^|-)\s*-", str(text)) else "version-syntax"
            self.fail(path or key, rule, key=label, text=text)
            return None

    def run(self) -> list[SpecError]:
        self.check_message()
        self.check_common_structs()
        self.check_struct(self.data.get("fields") or [], "", top_level=True)
        return self.errors

    def check_message(self) -> None:
        data, spec_type = self.data, self.data["type"]
        valid = self.versions("", "validVersions", data["validVersions"], None)
        self.versions("", "deprecatedVersions", data.get("deprecatedVersions"), NONE)
        api_key = self.integer("", "apiKey", data.get("apiKey"), "int16")
        if spec_type in ("request", "response"):
            suffix = spec_type.capitalize()
            if not data["name"].endswith(suffix):
                self.fail("name", "name-suffix", type=spec_type, suffix=suffix, name=data["name"])
            if api_key is None:
                self.fail("apiKey", "api-key-required", type=spec_type)
        if valid is not None and valid.empty:
            self.generating = False  # placeholder: flexibleVersions, listeners etc. are ignored
            return
        if valid is not None and valid.highest == MAX_VERSION:
            self.fail("validVersions", "valid-versions-maximum", versions=valid)
        if "flexibleVersions" not in data:
            self.fail("flexibleVersions", "flexible-versions-required")
        flexible = self.versions("", "flexibleVersions", data.get("flexibleVersions"), NONE)
        if flexible is not None:
            self.message_flexible = flexible
            if not flexible.empty and not flexible.open_ended:
                self.fail("flexibleVersions", "flexible-versions-open-ended", versions=flexible)
        if data.get("listeners") and spec_type != "request":
            self.fail("listeners", "listeners-not-request", type=spec_type)
        if _as_bool(data.get("latestVersionUnstable")) and spec_type != "request":
            self.fail("latestVersionUnstable", "unstable-not-request", type=spec_type)
        if spec_type in ("coordinator-key", "coordinator-value") and api_key is None:
            self.fail("apiKey", "api-key-required", type=spec_type)
        if spec_type == "coordinator-key":
            if valid is not None and valid != Versions(0, 0):
                self.fail("validVersions", "coordinator-key-versions", versions=valid)
            if flexible is not None and not flexible.empty:
                self.fail("flexibleVersions", "coordinator-key-flexible", versions=flexible)

    def integer(self, path: str, key: str, value: object, int_type: str) -> int | None:
        number = _as_int(value)
        low, high = INTEGER_RANGES[int_type]
        if number is not None and not low <= number <= high:
            label = f"{key} " if path else ""
            self.fail(path or key, "integer-range", key=label, value=number, range=int_type)
        return number

    def check_common_structs(self) -> None:
        structs = self.data.get("commonStructs") or []
        for struct in structs:
            name = struct["name"]
            path = f"commonStructs.{name}"
            if self.generating and not name[:1].isupper():
                self.fail(path, "common-struct-name", name=name)
            if self.generating and name in self.common_structs:
                self.fail(path, "duplicate-common-struct", name=name)
            self.common_structs.add(name)
            self.versions(path, "versions", struct["versions"], None)
            self.versions(path, "deprecatedVersions", struct.get("deprecatedVersions"), NONE)
        for struct in structs:
            self.check_struct(struct.get("fields") or [], f"commonStructs.{struct['name']}", False)

    def check_struct(self, fields: list[Any], prefix: str, top_level: bool) -> None:
        names: set[str] = set()
        tags: dict[int, str] = {}  # tag -> path of the field using it
        for raw in fields:
            path = f"{prefix}.{raw['name']}" if prefix else raw["name"]
            if raw["name"] in names:
                self.fail(path, "duplicate-field-name", name=raw["name"])
            names.add(raw["name"])
            tag = _as_int(raw.get("tag"))
            if tag is not None and tag >= 0:  # a negative tag is reported once, as tag-negative
                if tag in tags:
                    self.fail(path, "duplicate-tag", tag=tag, other=tags[tag])
                else:
                    tags[tag] = path
            self.check_field(raw, path, top_level)
        missing = next((t for t in range(len(tags)) if t not in tags), None)
        if missing is not None:
            path = next((p for t, p in tags.items() if t > missing), prefix)
            self.fail(path, "tags-not-contiguous", missing=missing, highest=max(tags))

    def check_field(self, raw: dict[str, Any], path: str, top_level: bool) -> None:
        if not FIELD_NAME.fullmatch(raw["name"]):
            self.fail(path, "field-name", name=json.dumps(raw["name"]))
        tagged = self.versions(path, "taggedVersions", raw.get("taggedVersions"), NONE)
        default_versions = tagged if tagged is not None and not tagged.empty else None
        override = None
        if str(raw.get("flexibleVersions") or "").strip():
            override = self.versions(path, "flexibleVersions", raw["flexibleVersions"], None)
        versions = self.versions(path, "versions", raw.get("versions"), default_versions)
        nullable = self.versions(path, "nullableVersions", raw.get("nullableVersions"), NONE)
        field_type = self.parse_type(path, raw["type"])
        field = _Field(raw, path, top_level, field_type, versions, tagged, nullable, override)
        self.check_field_spec(field)
        if self.generating:
            self.check_generated_field(field)
        if field.type and field.type.is_struct and raw.get("fields"):
            self.check_struct(raw["fields"], path + ("[]" if field.type.is_array else ""), False)

    def check_field_spec(self, field: _Field) -> None:
        """The checks of Kafka's FieldSpec constructor, which every spec passes through."""
        raw, path, nullable, tagged = field.raw, field.path, field.nullable, field.tagged
        type_name = field.type.text if field.type else None
        if field.type and nullable and not nullable.empty and not field.type.nullable:
            self.fail(path, "nullable-type", type=type_name, nullable=nullable)
        entity = raw.get("entityType")
        expected = ENTITY_BASE_TYPES.get(entity) if isinstance(entity, str) else None
        if field.type and expected and field.type.base != expected:
            self.fail(
                path, "entity-type-mismatch", entity=entity, expected=expected, type=type_name
            )
        if field.type and raw.get("fields") and not field.type.is_struct:
            self.fail(path, "fields-not-allowed", type=type_name)
        if field.flexible_override is not None and type_name not in (None, "string", "bytes"):
            self.fail(path, "field-flexible-versions-type", type=type_name)
        tag = self.integer(path, "tag", raw.get("tag"), "int32")
        if tag is not None and _as_bool(raw.get("mapKey")):
            self.fail(path, "tagged-map-key")
        if tag is not None and tag < 0:
            self.fail(path, "tag-negative", tag=tag)
        if tag is not None and tagged is not None:
            self.check_tagged(field, tag, tagged)
        elif tagged and not tagged.empty:
            self.fail(path, "tagged-versions-without-tag", tagged=tagged)
        if _as_bool(raw.get("zeroCopy")) and type_name not in (None, "bytes"):
            self.fail(path, "zero-copy-type", type=type_name)

    def check_tagged(self, field: _Field, tag: int, tagged: Versions) -> None:
        if tagged.empty:
            self.fail(field.path, "tag-without-tagged-versions", tag=tag)
            return
        if field.nullable is not None and field.nullable.intersect(tagged) not in (NONE, tagged):
            self.fail(field.path, "tagged-nullable-mixed", nullable=field.nullable, tagged=tagged)
        if not tagged.open_ended:
            self.fail(field.path, "tagged-versions-open-ended", tagged=tagged)
        if field.versions is not None and not field.versions.contains(tagged):
            self.fail(field.path, "tagged-versions-subset", tagged=tagged, versions=field.versions)

    def check_generated_field(self, field: _Field) -> None:
        """The checks Kafka makes only while generating a message class (never for placeholders)."""
        raw, path, field_type, override = field.raw, field.path, field.type, field.flexible_override
        flexible = override if override is not None else self.message_flexible
        if not self.message_flexible.contains(flexible):
            self.fail(
                path,
                "field-flexible-versions-subset",
                field=flexible,
                message=self.message_flexible,
            )
        is_tagged = field.tagged is not None and not field.tagged.empty
        if field.tagged is not None and is_tagged and not flexible.contains(field.tagged):
            self.fail(path, "tagged-versions-flexible", tagged=field.tagged, flexible=flexible)
        if _as_bool(raw.get("mapKey")) and field.top_level:
            self.fail(path, "map-key-top-level")
        if field_type is None:
            return
        if field_type.base == "records" and field_type.is_array:
            self.fail(path, "records-array")
        elif field_type.base == "records" and is_tagged:
            self.fail(path, "records-tagged")
        versions, nullable = field.versions, field.nullable
        if versions is not None and nullable is not None:
            try:
                parse_default(field_type.text, raw.get("default"), nullable.contains(versions))
            except NullDefaultError as exc:
                self.fail(
                    path,
                    "null-default-not-nullable",
                    reason=exc,
                    nullable=nullable,
                    versions=versions,
                )
            except DefaultError as exc:
                self.fail(path, "default-invalid", reason=exc)
        if field_type.is_struct:
            self.register_struct(field_type.base, path, bool(raw.get("fields")))

    def register_struct(self, name: str, path: str, has_fields: bool) -> None:
        """Kafka's StructRegistry: commonStructs by name, inline structs once per file."""
        if name in self.common_structs:
            if has_fields:
                self.fail(path, "common-struct-redefined", name=name)
        elif name in self.inline_structs:
            self.fail(path, "duplicate-struct", name=name, other=self.inline_structs[name])
        elif not has_fields:
            self.fail(path, "unknown-struct", name=name)
        else:
            self.inline_structs[name] = path

    def parse_type(self, path: str, text: str) -> _FieldType | None:
        text = text.strip()
        base = text[2:] if text.startswith("[]") else text
        if base.startswith("[]"):
            self.fail(path, "array-of-arrays", type=text)
        elif base in PRIMITIVE_TYPES:
            return _FieldType(text, base)
        elif base == "" or base[0].islower():
            self.fail(path, "unknown-type", type=json.dumps(text))
        elif not STRUCT_TYPE_NAME.fullmatch(base):
            self.fail(path, "struct-type-name", type=json.dumps(base))
        else:
            return _FieldType(text, base)
        return None


def _as_int(value: object) -> int | None:
    """An integer as Jackson reads it (JSON number or integer string); None when absent."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _as_bool(value: object) -> bool:
    return value is True or value == "true"


# ---- cross-file

DUPLICATE_RULES = dict.fromkeys(["request", "response"], "duplicate-api-key") | {
    "metadata": "duplicate-metadata-record-type"
}
CROSS_FILE_TYPES = frozenset(
    {"request", "response", "metadata", "coordinator-key", "coordinator-value"}
)
PARTNER_RULES = [
    ("request", "response", "missing-response"),
    ("response", "request", "missing-request"),
    ("coordinator-key", "coordinator-value", "coordinator-missing-value"),
    ("coordinator-value", "coordinator-key", "coordinator-missing-key"),
]


def _cross_file_errors(specs: list[RawSpec]) -> list[SpecError]:
    """The rules of Kafka's type-class generators, which see every spec of one directory."""
    errors: list[SpecError] = []
    tables: dict[str, dict[int, RawSpec]] = defaultdict(dict)  # spec type -> apiKey -> spec
    for raw in specs:
        spec_type, api_key = raw.spec.get("type"), _as_int(raw.spec.get("apiKey"))
        if not isinstance(spec_type, str) or spec_type not in CROSS_FILE_TYPES or api_key is None:
            continue
        if api_key in tables[spec_type]:
            rule = DUPLICATE_RULES.get(spec_type, "duplicate-coordinator-record")
            other = tables[spec_type][api_key].path.name
            values = {"type": spec_type, "other": other, "key": api_key}
            errors.append(spec_error(raw.path.name, "apiKey", rule, **values))
        else:
            tables[spec_type][api_key] = raw
    for kind, partner, rule in PARTNER_RULES:
        for api_key, raw in sorted(tables[kind].items()):
            if api_key not in tables[partner]:
                error = spec_error(raw.path.name, "apiKey", rule, partner=partner, key=api_key)
                errors.append(error)
    return errors
