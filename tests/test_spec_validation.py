"""Spec validation: one failing spec per rule, Kafka's own 292 specs pass, and `kraftwire spec check`.

Fixtures live in tests/specs_broken: a single file per per-file rule, a directory per rule that needs
several files (duplicates and pairing across a directory). expected.json lists, for each fixture, its
rule id and the exact lines the validator must print.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from pathlib import Path

import pytest
from shared import shared_path

from kraftwire import cli
from kraftwire.codegen.defaults import EMPTY_STRUCT, DefaultError, NullDefaultError, parse_default
from kraftwire.codegen.loader import RawSpec, load_raw, spec_files, strip_comments
from kraftwire.codegen.validate import (
    RULES,
    load_and_validate,
    spec_warnings,
    validate_spec,
    validate_specs,
)

BROKEN = Path(__file__).parent / "specs_broken"
EXPECTED: dict[str, dict] = json.loads((BROKEN / "expected.json").read_text(encoding="utf-8"))
# Fixtures whose name is not simply their rule id (with "_" for "-", plus an optional suffix).
FIXTURE_RULE_EXCEPTIONS = {
    "tagged_versions_not_subset.json": "tagged-versions-subset",  # the name used in the issue
    "placeholder_fields_still_checked.json": "field-name",
}


def fixture_paths() -> list[Path]:
    return sorted(p for p in BROKEN.iterdir() if p.name != "expected.json")


def load_fixture(name: str) -> list[RawSpec]:
    path = BROKEN / name
    return [load_raw(p) for p in (sorted(path.glob("*.json")) if path.is_dir() else [path])]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_fixture_fails_with_exactly_its_own_error(name):
    errors = validate_specs(load_fixture(name))

    assert [str(error) for error in errors] == EXPECTED[name]["errors"]
    assert {error.rule for error in errors} == {EXPECTED[name]["rule"]}
    fixture_files = {raw.path.name for raw in load_fixture(name)}
    for error in errors:
        assert error.file in fixture_files
        assert error.path, "every fixture's error names a field path or a top-level key"
        assert str(error).startswith(f"{error.file}: {error.path}: ")


def test_fixtures_and_expected_json_list_the_same_names():
    assert sorted(p.name for p in fixture_paths()) == sorted(EXPECTED)


def test_every_rule_has_a_failing_fixture_named_after_it():
    assert {entry["rule"] for entry in EXPECTED.values()} == set(RULES)
    for name, entry in EXPECTED.items():
        stem = name.removesuffix(".json").replace("_", "-")
        assert FIXTURE_RULE_EXCEPTIONS.get(name) == entry["rule"] or stem.startswith(entry["rule"])


def test_there_are_at_least_thirty_fixture_files():
    assert sum(1 for p in BROKEN.rglob("*.json") if p.name != "expected.json") >= 30


def test_every_kafka_spec_validates_without_errors():
    specs = shared_path("kafka-schemas")
    raws = [load_raw(path) for path in spec_files([specs])]
    assert len(raws) == 292

    started = time.perf_counter()
    errors = validate_specs(raws)
    elapsed = time.perf_counter() - started

    assert [str(error) for error in errors] == []
    assert elapsed < 3.0, f"validating 292 specs took {elapsed:.2f}s"


def test_issue_example_message(tmp_path):
    path = tmp_path / "VoteRequest.json"
    path.write_text((BROKEN / "tagged_versions_not_subset.json").read_text(encoding="utf-8"))

    assert [str(error) for error in validate_spec(load_raw(path))] == [
        "VoteRequest.json: Topics[].Partitions[].PreVote: "
        "taggedVersions 1+ is not a subset of versions 2+"
    ]


def test_unknown_keys_are_reported_by_name():
    spec = {
        "type": "data", "name": "Bogus", "validVersions": "0", "flexibleVersions": "0+",
        "bogusKey": 1,
        "fields": [{"name": "Count", "type": "int32", "versions": "0+", "bogusFieldKey": 2}],
    }  # fmt: skip
    errors = validate_spec(RawSpec(Path("Bogus.json"), spec))

    assert [(error.rule, error.path, str(error)) for error in errors] == [
        ("unknown-key", "", 'Bogus.json: unknown key "bogusKey"'),
        ("unknown-key", "Count", 'Bogus.json: Count: unknown key "bogusFieldKey"'),
    ]


def pair(request: dict, response: dict) -> list[RawSpec]:
    return [RawSpec(Path(f"specs/{spec['name']}.json"), spec) for spec in (request, response)]


def test_kafka_scalar_coercions_are_accepted():
    request = {
        "apiKey": "900", "type": "request", "name": "PingRequest", "validVersions": "0-1",
        "flexibleVersions": "0+", "listeners": "broker", "latestVersionUnstable": "true",
        "fields": [
            {"name": "Ports", "type": "[]Port", "versions": "0+", "fields": [
                {"name": "Number", "type": "uint16", "versions": "0+", "mapKey": "true"}]},
            {"name": "Limit", "type": "int64", "versions": "0+", "default": 9223372036854775807},
            {"name": "Offset", "type": "int32", "versions": "0+", "default": -1, "ignorable": "false"},
            {"name": "Enabled", "type": "bool", "versions": "0+", "default": False},
            {"name": "MaxBytes", "type": "int32", "versions": "0+", "default": "0x7fffffff"},
            {"name": "Cursor", "type": "Cursor", "versions": "1+", "nullableVersions": "1+",
             "taggedVersions": "1+", "tag": "0", "default": None, "fields": [
                {"name": "Name", "type": "string", "versions": "1+"}]},
        ],
    }  # fmt: skip
    response = {
        "apiKey": 900, "type": "response", "name": "PingResponse", "validVersions": "0-1",
        "flexibleVersions": "0+", "fields": [],
    }  # fmt: skip
    assert validate_specs(pair(request, response)) == []


def test_placeholders_skip_the_message_checks_that_kafka_skips():
    placeholder = {"apiKey": 4, "name": "GoneRequest", "validVersions": "none", "type": "request"}
    response = {
        "apiKey": 4, "name": "GoneResponse", "validVersions": "none", "type": "response",
        "listeners": ["broker"], "latestVersionUnstable": True, "flexibleVersions": "1-2",
    }  # fmt: skip
    assert validate_specs(pair(placeholder, response)) == []

    response["validVersions"] = "0-2"
    placeholder["validVersions"] = "0-2"
    rules = [error.rule for error in validate_specs(pair(placeholder, response))]
    assert rules == [
        "flexible-versions-required",
        "flexible-versions-open-ended",
        "listeners-not-request",
        "unstable-not-request",
    ]


def broken_cli_arguments() -> list[str]:
    return [str(path) for path in fixture_paths()]  # not the directory: expected.json is no spec


def test_cli_accepts_the_kafka_specs(capsys):
    specs = shared_path("kafka-schemas")

    assert cli.main(["spec", "check", str(specs)]) == 0
    out, err = capsys.readouterr()
    assert out == (
        "warning: ShareFetchRequest.json: Topics[].Partitions[].PartitionMaxBytes: versions 0 share no "
        "version with validVersions 1-2: the field is never on the wire\n"
    )
    assert err.strip() == "292 files, 0 errors, 1 warnings"


def test_cli_rejects_the_broken_fixtures(capsys):
    assert cli.main(["spec", "check", *broken_cli_arguments()]) == 1

    out, err = capsys.readouterr()
    expected = [line for entry in EXPECTED.values() for line in entry["errors"]]
    assert sorted(out.splitlines()) == sorted(expected)
    files = sum(1 for p in BROKEN.rglob("*.json") if p.name != "expected.json")
    assert err.strip() == f"{files} files, {len(expected)} errors"


def test_cli_reports_a_json_syntax_error_as_one_line(tmp_path, capsys):
    (tmp_path / "Broken.json").write_text('{"name": "Broken", "type": "data",,}')

    assert cli.main(["spec", "check", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("Broken.json: not valid spec JSON: ")
    assert len(out.splitlines()) == 1
    assert err.strip() == "1 files, 1 errors"


def test_comment_stripping_keeps_slashes_inside_strings():
    text = '{"about": "see http://kafka.apache.org // not a comment /* nor this */"} // a comment'
    assert json.loads(strip_comments(text)) == {
        "about": "see http://kafka.apache.org // not a comment /* nor this */"
    }


def test_comment_stripping_removes_block_comments(tmp_path):
    path = tmp_path / "Commented.json"
    path.write_text(
        '/***** header\n spanning lines *****/\n{"a": /* inline */ 1, // note\n "b": "x\\"//y"}'
    )
    assert load_raw(path).data == {"a": 1, "b": 'x"//y'}


@pytest.mark.parametrize(
    "type_name, text, nullable, expected",
    [
        ("bool", "", False, False),
        ("bool", "TRUE", False, True),
        ("int8", -1, False, -1),
        ("int32", "0x7fffffff", False, 2**31 - 1),
        ("int64", "9223372036854775807", False, 2**63 - 1),
        ("uint16", "65535", False, 65535),
        ("uint32", "0xffffffff", False, 2**32 - 1),
        ("float64", "1.5", False, 1.5),
        ("uuid", "", False, uuid.UUID(int=0)),
        (
            "uuid",
            "H3KKO4NTRPaCWtEmm3vW7A",
            False,
            uuid.UUID("1f728a3b-8353-44f6-825a-d1269b7bd6ec"),
        ),
        ("string", "null", True, None),
        ("string", None, False, ""),
        ("bytes", "", False, b""),
        ("records", "", True, None),
        ("[]int32", "", False, []),
        ("[]Topic", "null", True, None),
        ("Cursor", "", False, EMPTY_STRUCT),
    ],
)
def test_parse_default_values(type_name, text, nullable, expected):
    assert parse_default(type_name, text, nullable) == expected


def test_parse_default_float_specials():
    assert math.isnan(parse_default("float64", "NaN", False))
    assert parse_default("float64", "-Infinity", False) == -math.inf


@pytest.mark.parametrize(
    "type_name, text",
    [
        ("int8", "128"),
        ("int64", "9223372036854775808"),
        ("uint16", "-1"),
        ("uint32", "4294967296"),
        ("int32", "1_000"),
        ("int32", "0X10"),
        ("bool", "yes"),
        ("float64", "nan"),
        ("uuid", "AAAA"),
        ("bytes", "AA=="),
        ("[]int32", "[]"),
        ("Cursor", "{}"),
    ],
)
def test_parse_default_rejects(type_name, text):
    with pytest.raises(DefaultError):
        parse_default(type_name, text, True)


def test_null_default_needs_nullable_in_every_version():
    with pytest.raises(NullDefaultError):
        parse_default("string", "null", False)


def test_a_placeholder_spec_reserves_its_key_without_its_fields(tmp_path):
    """Validation skips a placeholder's fields (validVersions "none"), so the model must too: a field
    default that would be invalid in a live spec neither fails the check nor crashes generation."""
    from kraftwire.codegen.generate import load_specs

    spec = {
        "apiKey": 77,
        "type": "request",
        "name": "RetiredRequest",
        "validVersions": "none",
        "flexibleVersions": "none",
        "fields": [{"name": "Count", "type": "int32", "versions": "0+", "default": "abc"}],
    }
    (tmp_path / "RetiredRequest.json").write_text(json.dumps(spec))
    response = dict(spec, type="response", name="RetiredResponse", fields=[])
    (tmp_path / "RetiredResponse.json").write_text(json.dumps(response))
    assert load_and_validate(spec_files([tmp_path]))[1] == []
    loaded = {s.stem: s for s in load_specs([tmp_path])}
    assert loaded["RetiredRequest"].is_placeholder and loaded["RetiredRequest"].root.fields == []


# ---- the ReadOffset draft of issue #13 (tests/specs_draft), as written and repaired

DRAFT = Path(__file__).parent / "specs_draft"


def test_draft_as_written_is_a_syntax_error_with_line_and_column(capsys):
    assert cli.main(["spec", "check", str(DRAFT / "as_written")]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "ReadOffsetRequest.json: not valid spec JSON: trailing comma before ']': line 21 column 44 (char 910)",
        "ReadOffsetResponse.json: not valid spec JSON: trailing comma before ']': line 20 column 64 (char 893)",
    ]
    lines = (
        (DRAFT / "as_written" / "ReadOffsetRequest.json").read_text(encoding="utf-8").splitlines()
    )
    assert lines[20][43] == ","  # line 21, column 44 is the comma itself
    assert err.strip() == "2 files, 2 errors"


def test_trailing_comma_in_an_object_points_at_the_comma(tmp_path):
    path = tmp_path / "Broken.json"
    path.write_text('{\n  "name": "Broken", // why\n  "type": "data",\n}\n')
    with pytest.raises(ValueError, match=r"trailing comma before '}': line 3 column 17 "):
        load_raw(path)


def test_repaired_draft_passes_with_a_warning_naming_read_timestamp(capsys):
    assert cli.main(["spec", "check", str(DRAFT / "repaired")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "warning: ReadOffsetRequest.json: ReadTimestamp: versions 1 share no version with "
        "validVersions 0: the field is never on the wire"
    ]
    assert err.strip() == "2 files, 0 errors, 1 warnings"


def test_strict_turns_the_warning_into_a_failure(capsys):
    assert cli.main(["spec", "check", "--strict", str(DRAFT / "repaired")]) == 1
    out, _ = capsys.readouterr()
    assert "ReadTimestamp" in out


def test_our_read_offset_spec_passes_strict(capsys):
    schemas = Path(__file__).resolve().parents[1] / "schemas"
    assert cli.main(["spec", "check", "--strict", str(schemas)]) == 0
    assert capsys.readouterr().out == ""


def test_warning_covers_nested_and_common_struct_fields():
    spec = {
        "type": "data",
        "name": "W",
        "validVersions": "2-3",
        "flexibleVersions": "none",
        "fields": [
            {
                "name": "A",
                "type": "[]S",
                "versions": "0+",
                "fields": [
                    {"name": "Old", "type": "int32", "versions": "0-1"},
                    {"name": "Kept", "type": "int32", "versions": "1-2"},
                ],
            },
            {"name": "C", "type": "C", "versions": "0+"},
        ],
        "commonStructs": [
            {
                "name": "C",
                "versions": "0+",
                "fields": [{"name": "Gone", "type": "int8", "versions": "4+"}],
            }
        ],
    }
    warnings = spec_warnings([RawSpec(Path("W.json"), spec)])
    assert [(w.path, w.rule) for w in warnings] == [
        ("A[].Old", "field-outside-valid-versions"),
        ("commonStructs.C.Gone", "field-outside-valid-versions"),
    ]
