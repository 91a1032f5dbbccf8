"""Our own spec files in schemas/ must describe exactly the same wire format as Kafka's upstream twins.

Only the prose may differ: `about` texts and comments are ours. Everything that decides bytes, JSON keys or
validation (names, types, versions, nullability, tags, defaults, ignorable, mapKey, entityType, field
flexibleVersions, zeroCopy, field order, commonStructs) is compared after normalising the scalar forms the
spec language treats as equal (``-1`` vs ``"-1"``, ``0x7fffffff`` vs ``2147483647``, a missing ``ignorable`` vs
``false``, a missing ``versions`` vs ``taggedVersions``, ...).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

from kraftwire.codegen.loader import load_raw
from shared import shared_path

SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"

SPEC_NAMES = (
    "RequestHeader",
    "ResponseHeader",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "VoteRequest",
    "VoteResponse",
    "BeginQuorumEpochRequest",
    "BeginQuorumEpochResponse",
    "EndQuorumEpochRequest",
    "EndQuorumEpochResponse",
    "DescribeQuorumRequest",
    "DescribeQuorumResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchSnapshotRequest",
    "FetchSnapshotResponse",
    "AddRaftVoterRequest",
    "AddRaftVoterResponse",
    "RemoveRaftVoterRequest",
    "RemoveRaftVoterResponse",
    "UpdateRaftVoterRequest",
    "UpdateRaftVoterResponse",
    "LeaderChangeMessage",
    "SnapshotHeaderRecord",
    "SnapshotFooterRecord",
    "VotersRecord",
    "KRaftVersionRecord",
    "QuorumStateData",
    "ControlRecordTypeSchema",
    "EndTxnMarker",
)

# Keys the spec language accepts (docs/wire-format.md §3 and §4); anything else is a Kafka parse error.
TOP_LEVEL_KEYS = {
    "name", "type", "apiKey", "validVersions", "flexibleVersions", "fields", "commonStructs",
    "listeners", "deprecatedVersions", "latestVersionUnstable",
}  # fmt: skip
FIELD_KEYS = {
    "name", "type", "versions", "nullableVersions", "default", "ignorable", "mapKey", "entityType",
    "about", "tag", "taggedVersions", "flexibleVersions", "zeroCopy", "fields",
}  # fmt: skip
COMMON_STRUCT_KEYS = {"name", "versions", "fields"}

# Share of `about` texts allowed to coincide with upstream (a few very short ones may).
MAX_IDENTICAL_ABOUT_SHARE = 0.05

_DECIMAL = re.compile(r"-?[0-9]+")
_HEX = re.compile(r"-?0[xX][0-9a-fA-F]+")


# --------------------------------------------------------------------------------------------------
# Normalisation


def _scalar(value: object) -> str | None:
    """One comparable string for a JSON scalar: ``True``/``"true"`` → ``"true"``, ``-1``/``"-1"`` → ``"-1"``,
    ``"0x7fffffff"`` → ``"2147483647"``. ``None`` (absent or JSON null) stays ``None``."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip()
    if text.lower() in ("true", "false"):
        return text.lower()
    if _HEX.fullmatch(text):
        return str(int(text, 16))
    if _DECIMAL.fullmatch(text):
        return str(int(text, 10))
    return text


def _versions(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _bool(value: object) -> str:
    """``ignorable``/``mapKey``/``zeroCopy``/``latestVersionUnstable``: absent means false."""
    return _scalar(value) or "false"


def field_facts(field: dict) -> dict[str, object]:
    """The wire facts of one field, normalised (nested ``fields`` are compared separately)."""
    tagged = _versions(field.get("taggedVersions"))
    return {
        "type": str(field.get("type", "")).strip(),
        "versions": _versions(field.get("versions")) or tagged,
        "nullableVersions": _versions(field.get("nullableVersions")) or "none",
        "taggedVersions": tagged or "none",
        "tag": _scalar(field.get("tag")),
        # A JSON-null default is the same as no default (docs/wire-format.md §1).
        "default": _scalar(field.get("default")) or "",
        "ignorable": _bool(field.get("ignorable")),
        "mapKey": _bool(field.get("mapKey")),
        "entityType": str(field.get("entityType") or "unknown"),
        "flexibleVersions": _versions(field.get("flexibleVersions")),
        "zeroCopy": _bool(field.get("zeroCopy")),
    }


def top_level_facts(data: dict) -> dict[str, object]:
    listeners = data.get("listeners")
    if isinstance(listeners, str):  # Jackson's ACCEPT_SINGLE_VALUE_AS_ARRAY
        listeners = [listeners]
    return {
        "name": data.get("name"),
        "type": data.get("type"),
        "apiKey": _scalar(data.get("apiKey")),
        "validVersions": _versions(data.get("validVersions")),
        "flexibleVersions": _versions(data.get("flexibleVersions")),
        "listeners": list(listeners) if listeners is not None else None,
        "latestVersionUnstable": _bool(data.get("latestVersionUnstable")),
        "deprecatedVersions": _versions(data.get("deprecatedVersions")),
    }


# --------------------------------------------------------------------------------------------------
# Comparison


def _compare_fields(ours: list, theirs: list, path: str, out: list[str]) -> None:
    our_names = [f.get("name") for f in ours]
    their_names = [f.get("name") for f in theirs]
    if our_names != their_names:
        out.append(f"{path}: field names/order differ: ours={our_names} upstream={their_names}")
        return
    for our_field, their_field in zip(ours, theirs):
        field_path = f"{path}.{our_field.get('name')}" if path else str(our_field.get("name"))
        extra = set(our_field) - FIELD_KEYS
        if extra:
            out.append(f"{field_path}: keys not allowed by the spec language: {sorted(extra)}")
        mine, upstream = field_facts(our_field), field_facts(their_field)
        for key in mine:
            if mine[key] != upstream[key]:
                out.append(f"{field_path}.{key}: ours={mine[key]!r} upstream={upstream[key]!r}")
        our_sub, their_sub = our_field.get("fields"), their_field.get("fields")
        if (our_sub is None) != (their_sub is None):
            out.append(
                f"{field_path}.fields: ours {'has' if our_sub is not None else 'lacks'} inline fields, "
                f"upstream {'has' if their_sub is not None else 'lacks'} them"
            )
        elif our_sub is not None:
            _compare_fields(our_sub, their_sub, field_path, out)


def wire_fact_differences(spec: str, ours: dict, theirs: dict) -> list[str]:
    """Every wire-fact difference between our spec and the upstream one, each naming spec and field path."""
    out: list[str] = []
    extra = set(ours) - TOP_LEVEL_KEYS
    if extra:
        out.append(f"(top level): keys not allowed by the spec language: {sorted(extra)}")
    mine, upstream = top_level_facts(ours), top_level_facts(theirs)
    for key in mine:
        if mine[key] != upstream[key]:
            out.append(f"(top level).{key}: ours={mine[key]!r} upstream={upstream[key]!r}")
    _compare_fields(ours.get("fields") or [], theirs.get("fields") or [], "", out)

    our_structs = ours.get("commonStructs") or []
    their_structs = theirs.get("commonStructs") or []
    our_names = [s.get("name") for s in our_structs]
    their_names = [s.get("name") for s in their_structs]
    if our_names != their_names:
        out.append(f"commonStructs: names/order differ: ours={our_names} upstream={their_names}")
    else:
        for our_struct, their_struct in zip(our_structs, their_structs):
            struct_path = f"commonStructs.{our_struct.get('name')}"
            extra = set(our_struct) - COMMON_STRUCT_KEYS
            if extra:
                out.append(f"{struct_path}: keys not allowed by the spec language: {sorted(extra)}")
            if _versions(our_struct.get("versions")) != _versions(their_struct.get("versions")):
                out.append(
                    f"{struct_path}.versions: ours={our_struct.get('versions')!r} "
                    f"upstream={their_struct.get('versions')!r}"
                )
            _compare_fields(
                our_struct.get("fields") or [], their_struct.get("fields") or [], struct_path, out
            )
    return [f"{spec}: {line}" for line in out]


def about_pairs(ours: dict, theirs: dict) -> list[tuple[str, str | None, str | None]]:
    """(field path, our about, upstream about) for every field present in both, commonStructs included."""
    pairs: list[tuple[str, str | None, str | None]] = []

    def walk(our_fields: list, their_fields: list, path: str) -> None:
        theirs_by_name = {f.get("name"): f for f in their_fields}
        for field in our_fields:
            name = field.get("name")
            field_path = f"{path}.{name}" if path else str(name)
            twin = theirs_by_name.get(name, {})
            pairs.append((field_path, field.get("about"), twin.get("about")))
            walk(field.get("fields") or [], twin.get("fields") or [], field_path)

    walk(ours.get("fields") or [], theirs.get("fields") or [], "")
    theirs_structs = {s.get("name"): s for s in theirs.get("commonStructs") or []}
    for struct in ours.get("commonStructs") or []:
        twin = theirs_structs.get(struct.get("name"), {})
        walk(
            struct.get("fields") or [],
            twin.get("fields") or [],
            f"commonStructs.{struct.get('name')}",
        )
    return pairs


# --------------------------------------------------------------------------------------------------
# Loading


def our_file(spec: str) -> Path:
    return SCHEMAS_DIR / f"{spec}.json"


@lru_cache(maxsize=None)
def _upstream_index() -> dict[str, tuple[Path, ...]]:
    root = shared_path("kafka-schemas")
    index: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*.json")):
        if "/src/main/" in path.as_posix():
            index.setdefault(path.stem, []).append(path)
    return {name: tuple(paths) for name, paths in index.items()}


def upstream_file(spec: str) -> Path:
    matches = _upstream_index().get(spec, ())
    assert len(matches) == 1, f"{spec}: expected exactly one upstream twin, found {list(matches)}"
    return matches[0]


# --------------------------------------------------------------------------------------------------
# Tests


def test_all_our_spec_files_exist() -> None:
    missing = [spec for spec in SPEC_NAMES if not our_file(spec).is_file()]
    assert not missing, f"missing spec files in {SCHEMAS_DIR}: {missing}"


@pytest.mark.parametrize("spec", SPEC_NAMES)
def test_our_file_has_own_header_and_no_license(spec: str) -> None:
    text = our_file(spec).read_text(encoding="utf-8")
    first = text.lstrip().splitlines()[0]
    assert first.startswith("//"), f"{spec}: must open with our own // comment lines, got {first!r}"
    assert "/*" not in text, f"{spec}: use // comments only"
    assert (
        "Licensed to the Apache Software Foundation" not in text
    ), f"{spec}: copied license header"
    assert load_raw(our_file(spec)).data["name"] == spec, f"{spec}: file name and spec name differ"


@pytest.mark.parametrize("spec", SPEC_NAMES)
def test_wire_facts_match_upstream(spec: str) -> None:
    ours = load_raw(our_file(spec)).data
    theirs = load_raw(upstream_file(spec)).data
    diffs = wire_fact_differences(spec, ours, theirs)
    if diffs:
        pytest.fail(
            f"{spec}: {len(diffs)} wire fact(s) differ from {upstream_file(spec)}:\n  "
            + "\n  ".join(diffs),
            pytrace=False,
        )


def test_about_texts_are_our_own() -> None:
    total = 0
    missing: list[str] = []
    identical: list[str] = []
    for spec in SPEC_NAMES:
        ours = load_raw(our_file(spec)).data
        theirs = load_raw(upstream_file(spec)).data
        for path, mine, upstream in about_pairs(ours, theirs):
            total += 1
            if not (isinstance(mine, str) and mine.strip()):
                missing.append(f"{spec}: {path}")
            elif upstream is not None and mine.strip() == upstream.strip():
                identical.append(f"{spec}: {path}: {mine!r}")
    print(f"{len(identical)} of {total} about texts are identical to upstream:")
    for line in identical:
        print(f"  {line}")
    assert not missing, "fields without an about text:\n  " + "\n  ".join(missing)
    assert total > 0
    assert len(identical) < MAX_IDENTICAL_ABOUT_SHARE * total, (
        f"{len(identical)} of {total} about texts are copied from upstream "
        f"(limit {MAX_IDENTICAL_ABOUT_SHARE:.0%}):\n  " + "\n  ".join(identical)
    )


# The comparer itself: a changed fact must be reported with the spec name and the field path.

_SAMPLE = {
    "apiKey": 52,
    "type": "request",
    "listeners": ["controller"],
    "name": "VoteRequest",
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "VoterId", "type": "int32", "versions": "1+", "ignorable": True, "default": "-1",
         "entityType": "brokerId", "about": "x"},
        {"name": "Topics", "type": "[]TopicData", "versions": "0+", "about": "x", "fields": [
            {"name": "Partitions", "type": "[]PartitionData", "versions": "0+", "about": "x", "fields": [
                {"name": "PreVote", "type": "bool", "versions": "2+", "about": "x"},
                {"name": "Tagged", "type": "int64", "taggedVersions": "1+", "tag": 0,
                 "default": "0x10", "about": "x"},
            ]},
        ]},
    ],
    "commonStructs": [
        {"name": "Voter", "versions": "0+", "fields": [
            {"name": "VoterId", "type": "int32", "versions": "0+", "about": "x"},
        ]},
    ],
}  # fmt: skip


def _sample_copy() -> dict:
    import copy

    return copy.deepcopy(_SAMPLE)


def test_equivalent_scalar_forms_compare_equal() -> None:
    variant = _sample_copy()
    voter_id = variant["fields"][0]
    voter_id["default"] = -1
    voter_id["ignorable"] = "true"
    variant["apiKey"] = "52"
    tagged = variant["fields"][1]["fields"][0]["fields"][1]
    tagged["versions"] = "1+"  # the default for a field that only gives taggedVersions
    tagged["tag"] = "0"
    tagged["default"] = 16
    tagged["ignorable"] = False  # absent means false
    variant["latestVersionUnstable"] = False  # absent means false
    assert wire_fact_differences("VoteRequest", variant, _SAMPLE) == []


def test_difference_names_spec_and_field_path() -> None:
    variant = _sample_copy()
    variant["fields"][1]["fields"][0]["fields"][0]["ignorable"] = True
    variant["commonStructs"][0]["fields"][0]["type"] = "int16"
    variant["flexibleVersions"] = "1+"
    diffs = wire_fact_differences("VoteRequest", variant, _SAMPLE)
    assert "VoteRequest: Topics.Partitions.PreVote.ignorable: ours='true' upstream='false'" in diffs
    assert "VoteRequest: commonStructs.Voter.VoterId.type: ours='int16' upstream='int32'" in diffs
    assert "VoteRequest: (top level).flexibleVersions: ours='1+' upstream='0+'" in diffs
    assert len(diffs) == 3


def test_field_order_and_unknown_keys_are_reported() -> None:
    variant = _sample_copy()
    partitions = variant["fields"][1]["fields"][0]["fields"]
    partitions.reverse()
    variant["fields"][0]["bogusKey"] = 1
    diffs = wire_fact_differences("VoteRequest", variant, _SAMPLE)
    assert any(
        d.startswith("VoteRequest: Topics.Partitions: field names/order differ") for d in diffs
    )
    assert any(
        d.startswith("VoteRequest: VoterId: keys not allowed") and "bogusKey" in d for d in diffs
    )
