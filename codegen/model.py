"""The spec model: messages, structs, fields and types, built once from validated spec JSON.

Emitters only read this model. Building it assumes :mod:`kraftwire.codegen.validate` passed, so it
does not repeat the rule checks; it only resolves what the emitters need (types, struct references,
parsed defaults, Python names).
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .defaults import default_text, parse_default
from .versions import NONE, Versions

PRIMITIVE_SIZES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
}
VARIABLE_KINDS = ("string", "bytes", "records")

# Attribute names that the generated classes use for their own methods.
_RESERVED_ATTRS = {
    "encode",
    "decode",
    "to_json",
    "from_json",
    "encoded_size",
    "unknown_tagged_fields",
}


def snake_case(name: str) -> str:
    """Kafka field name to a Python attribute: ``ReplicaDirectoryId`` → ``replica_directory_id``."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    if keyword.iskeyword(text) or text in _RESERVED_ATTRS:
        text += "_"
    return text


def module_name(spec_name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", spec_name).lower()


def json_key(name: str) -> str:
    """Kafka's JsonConverter key: the field name with its first letter lower-cased."""
    return name[:1].lower() + name[1:]


@dataclass(frozen=True)
class FieldType:
    """A spec type: a primitive kind, ``struct`` or ``array`` (with an element type)."""

    spec: str
    kind: str
    element: "FieldType | None" = None
    struct_name: str | None = None

    @classmethod
    def parse(cls, text: str) -> "FieldType":
        if text.startswith("[]"):
            element = cls.parse(text[2:])
            return cls(text, "array", element, element.struct_name)
        if text in PRIMITIVE_SIZES or text in VARIABLE_KINDS:
            return cls(text, text)
        return cls(text, "struct", None, text)

    @property
    def fixed_size(self) -> int | None:
        return PRIMITIVE_SIZES.get(self.kind)

    @property
    def is_struct(self) -> bool:
        return self.kind == "struct"


@dataclass(eq=False)
class Field:
    name: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    default: object
    default_text: str
    ignorable: bool
    map_key: bool
    flexible_versions: Versions | None
    about: str
    struct: "Struct | None" = None

    @property
    def attr(self) -> str:
        return snake_case(self.name)

    @property
    def json_key(self) -> str:
        return json_key(self.name)

    @property
    def default_is_null(self) -> bool:
        return self.default_text == "null"


@dataclass(eq=False)
class Struct:
    name: str
    versions: Versions
    fields: list[Field]
    about: str = ""

    @property
    def map_key_fields(self) -> list[Field]:
        return [f for f in self.fields if f.map_key]


@dataclass(eq=False)
class MessageSpec:
    name: str
    type: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    root: Struct
    structs: dict[str, Struct]
    path: Path
    family: str
    comments: list[str] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def module(self) -> str:
        return module_name(self.stem)

    @property
    def is_placeholder(self) -> bool:
        return self.valid_versions.empty


def _bool(value: object) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"


def _build_field(raw: dict[str, Any]) -> Field:
    ftype = FieldType.parse(raw["type"])
    tagged = Versions.parse(raw.get("taggedVersions"), NONE)
    versions = Versions.parse(raw.get("versions"), tagged if not tagged.empty else None)
    nullable = Versions.parse(raw.get("nullableVersions"), NONE)
    default_raw = raw.get("default")
    fflex = raw.get("flexibleVersions")
    return Field(
        name=raw["name"],
        type=ftype,
        versions=versions,
        nullable_versions=nullable,
        tagged_versions=tagged,
        tag=None if raw.get("tag") is None else int(raw["tag"]),
        default=parse_default(ftype.spec, default_raw, nullable.contains(versions)),
        default_text=default_text(default_raw),
        ignorable=_bool(raw.get("ignorable", False)),
        map_key=_bool(raw.get("mapKey", False)),
        flexible_versions=None if fflex is None else Versions.parse(fflex),
        about=raw.get("about", ""),
    )


def _collect_structs(fields_raw: list[dict[str, Any]], structs: dict[str, Struct]) -> list[Field]:
    fields = []
    for raw in fields_raw:
        fld = _build_field(raw)
        if "fields" in raw:
            name = fld.type.struct_name
            assert name is not None
            nested = _collect_structs(raw["fields"], structs)
            structs[name] = Struct(name, fld.versions, nested, fld.about)
        fields.append(fld)
    return fields


def _resolve(struct: Struct, structs: dict[str, Struct]) -> None:
    for fld in struct.fields:
        if fld.type.struct_name is not None:
            fld.struct = structs[fld.type.struct_name]


def build_message(
    raw: dict[str, Any], path: Path, family: str, comments: list[str] | None = None
) -> MessageSpec:
    """Model of one validated spec. ``family`` scopes record-type ids (one per spec directory)."""
    valid = Versions.parse(raw["validVersions"])
    placeholder = valid.empty
    flexible = NONE if placeholder else Versions.parse(raw["flexibleVersions"])
    structs: dict[str, Struct] = {}
    root_fields: list[Field] = []
    if not placeholder:  # a placeholder only reserves its API key; validation skips its fields too
        for common in raw.get("commonStructs", []):
            fields = _collect_structs(common["fields"], structs)
            structs[common["name"]] = Struct(
                common["name"], Versions.parse(common["versions"]), fields, common.get("about", "")
            )
        root_fields = _collect_structs(raw.get("fields", []), structs)
    root = Struct(raw["name"], valid, root_fields, _top_about(comments))
    for struct in list(structs.values()) + [root]:
        _resolve(struct, structs)
    listeners = raw.get("listeners", [])
    if isinstance(listeners, str):
        listeners = [listeners]
    api_key = raw.get("apiKey")
    return MessageSpec(
        name=raw["name"],
        type=raw["type"],
        api_key=None if api_key is None else int(api_key),
        valid_versions=valid,
        flexible_versions=flexible,
        listeners=() if placeholder else tuple(listeners),
        latest_version_unstable=(
            False if placeholder else _bool(raw.get("latestVersionUnstable", False))
        ),
        root=root,
        structs=structs,
        path=path,
        family=family,
        comments=comments or [],
    )


def _top_about(comments: list[str] | None) -> str:
    """The message's one-line description: its first comment line, when it is not version history."""
    first = (comments or [""])[0]
    return "" if first.lower().startswith("version") else first
