"""Kafka's error table and API keys: one data file each in schemas/, checked by the generator and
emitted as generated/errors.py and generated/api_keys.py (tests/interop/test_kafka_facts.py checks
the files against the pinned release's jar)."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from kraftwire.cli import main as kraftwire_main
from kraftwire.codegen.facts import api_keys_document, constant_name
from kraftwire.codegen.facts_emit import request_names
from kraftwire.codegen.generate import SpecSetError, load_spec_set, load_specs
from kraftwire.codegen.loader import spec_files
from kraftwire.generated import api_keys, errors
from shared import shared_path

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"


def _spec_set(tmp_path: Path, errors_doc: object = None, api_keys_doc: object = None) -> Path:
    """A spec folder: VoteRequest and VoteResponse and the fact files given."""
    folder = tmp_path / "specs"
    folder.mkdir()
    for name in ("VoteRequest.json", "VoteResponse.json"):
        shutil.copy(SCHEMAS / name, folder / name)
    for name, doc in (("errors.json", errors_doc), ("api_keys.json", api_keys_doc)):
        if doc is not None:
            (folder / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return folder


def _errors_doc(*rows: tuple[int, str]) -> dict:
    return {
        "kafkaRelease": "4.4.0",
        "errors": [
            {"code": code, "name": name, "retriable": False, "message": f"{name} text"}
            for code, name in rows
        ],
    }


def test_the_fact_files_are_not_read_as_specs():
    names = {path.name for path in spec_files([SCHEMAS])}
    assert "VoteRequest.json" in names
    assert not names & {"errors.json", "api_keys.json"}


def test_the_generated_error_table_is_the_data_files():
    document = json.loads((SCHEMAS / "errors.json").read_text())
    rows = {row["code"]: row for row in document["errors"]}
    assert {code: e._asdict() for code, e in errors.ERRORS.items()} == rows
    assert errors.NOT_LEADER_OR_FOLLOWER == 6 and errors.name(6) == "NOT_LEADER_OR_FOLLOWER"
    assert errors.message(errors.REQUEST_TIMED_OUT) == "The request timed out."
    assert errors.message(errors.NONE) == "NONE"  # Kafka's Errors.NONE.message()
    assert errors.is_retriable(errors.NOT_LEADER_OR_FOLLOWER)
    assert not errors.is_retriable(errors.INVALID_REQUEST)
    assert errors.name(4242) == errors.message(4242) == "4242" and not errors.is_retriable(4242)


def test_the_generated_api_keys_are_the_data_file_and_the_bundled_request_specs():
    document = json.loads((SCHEMAS / "api_keys.json").read_text())
    listed = {row["apiKey"]: row["name"] for row in document["apiKeys"]}
    assert api_keys.NAMES == {**listed, 1000: "ReadOffset"}  # ReadOffset: kraftwire's own spec
    assert (api_keys.PRODUCE, api_keys.FETCH, api_keys.VOTE, api_keys.READ_OFFSET) == (
        0,
        1,
        52,
        1000,
    )
    assert api_keys.OFFSET_FOR_LEADER_EPOCH == 23 and api_keys.name(23) == "OffsetForLeaderEpoch"
    assert api_keys.name(4242) is None
    assert constant_name("DescribeUserScramCredentials") == "DESCRIBE_USER_SCRAM_CREDENTIALS"


def test_api_keys_json_is_what_kafkas_request_specs_say():
    specs = load_specs([shared_path("kafka-schemas")])
    document = json.loads((SCHEMAS / "api_keys.json").read_text())
    assert document["apiKeys"] == api_keys_document(request_names(specs))["apiKeys"]


def test_a_spec_set_without_fact_files_names_only_its_own_apis(tmp_path):
    specs, facts = load_spec_set([_spec_set(tmp_path)])
    assert facts.errors is None and facts.api_keys is None
    assert request_names(specs) == {52: "Vote"}


def test_an_error_code_or_name_listed_twice_is_refused(tmp_path):
    doc = _errors_doc((0, "NONE"), (6, "NOT_LEADER_OR_FOLLOWER"), (6, "ALSO_SIX"), (7, "NONE"))
    with pytest.raises(SpecSetError) as caught:
        load_spec_set([_spec_set(tmp_path, errors_doc=doc)])
    assert caught.value.errors == [
        "errors.json: code 6 is listed twice",
        "errors.json: name NONE is listed twice",
    ]


def test_a_malformed_error_table_names_the_row_and_field(tmp_path):
    doc = _errors_doc((0, "NONE"), (6, "not-a-constant"))
    del doc["errors"][0]["retriable"]
    with pytest.raises(SpecSetError) as caught:
        load_spec_set([_spec_set(tmp_path, errors_doc=doc)])
    assert caught.value.errors == [
        "errors.json: errors[0]: 'retriable' is a required property",
        "errors.json: errors[1].name: 'not-a-constant' does not match '^[A-Z][A-Z0-9_]*$'",
    ]


def test_an_api_key_named_otherwise_than_its_request_spec_is_refused(tmp_path):
    doc = {"apiKeys": [{"apiKey": 1, "name": "Fetch"}, {"apiKey": 52, "name": "Ballot"}]}
    with pytest.raises(SpecSetError) as caught:
        load_spec_set([_spec_set(tmp_path, api_keys_doc=doc)])
    assert caught.value.errors == [
        "api_keys.json: API key 52 is named Ballot, its request spec calls it Vote"
    ]


def test_the_cli_reports_a_broken_fact_file_in_one_line(tmp_path, capsys):
    folder = _spec_set(tmp_path, errors_doc="{not json")
    out = tmp_path / "out"
    assert kraftwire_main(["codegen", "--schemas", str(folder), "--out", str(out)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraftwire codegen: errors.json: not valid JSON")
    assert not out.exists()


def test_a_generated_package_carries_the_fact_modules(tmp_path):
    folder = _spec_set(
        tmp_path,
        errors_doc=_errors_doc((0, "NONE"), (6, "NOT_LEADER_OR_FOLLOWER")),
        api_keys_doc={"apiKeys": [{"apiKey": 1, "name": "Fetch"}]},
    )
    out = tmp_path / "kw"
    assert kraftwire_main(["codegen", "--schemas", str(folder), "--out", str(out)]) == 0
    namespace: dict = {}
    exec((out / "errors.py").read_text(), namespace)
    assert (
        namespace["NOT_LEADER_OR_FOLLOWER"] == 6
        and namespace["message"](6) == "NOT_LEADER_OR_FOLLOWER text"
    )
    exec((out / "api_keys.py").read_text(), namespace)
    assert namespace["NAMES"] == {1: "Fetch", 52: "Vote"} and namespace["VOTE"] == 52


def _numbered_facts(path: Path) -> list[str]:
    """Assignments in ``path`` of an int literal to the name of a Kafka API key or error code."""
    fact_names = {n for n in vars(api_keys) if n.isupper()} | {
        n for n in vars(errors) if n.isupper()
    }
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None)
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
            value = value.operand
        if not (isinstance(value, ast.Constant) and type(value.value) is int):
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id in fact_names:
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {target.id}")
    return found


def test_no_hand_written_module_numbers_an_api_key_or_error_code_itself():
    """The node, the decoders and the command line take API keys and error codes from the generated
    modules: a name of either set to a number by hand is a second copy of a Kafka fact."""
    sources = [*REPO.joinpath("kraftwire").glob("*.py")]
    for folder in ("node", "spark_decoders"):
        sources += REPO.joinpath(folder).rglob("*.py")
    found = [hit for path in sorted(sources) for hit in _numbered_facts(path)]
    assert not found, f"API keys or error codes written as numbers: {found}"
