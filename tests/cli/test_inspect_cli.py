"""decode-hex, encode-json, decode-frame and specs list: hex and JSON input, one-line errors, records."""

from __future__ import annotations

import base64
import io
import json
import sys

import pytest

import kraftwire.generated as kw
from kraftwire.cli import main
from kraftwire.generated.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData
from kraftwire.generated.vote_request import VoteRequest
from kraftwire.generated.vote_response import VoteResponse
from kraftwire.records import encode_batch, end_txn_marker_batch

VOTE = VoteRequest(cluster_id="c", voter_id=1)
VOTE_HEX = VOTE.encode(2).hex()


def run(
    capsys, *args: str, stdin: str | bytes | None = None, monkeypatch=None
) -> tuple[int, str, str]:
    if stdin is not None:
        raw = stdin if isinstance(stdin, bytes) else stdin.encode()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


@pytest.mark.parametrize(
    "pieces",
    [
        [VOTE_HEX],
        ["0x" + VOTE_HEX],
        [VOTE_HEX[:4], VOTE_HEX[4:]],
        ["0x" + VOTE_HEX[:2], "0x" + VOTE_HEX[2:]],
        [f" {VOTE_HEX[:6]}\n\t{VOTE_HEX[6:]} "],
    ],
)
def test_decode_hex_accepts_0x_prefixes_and_whitespace(capsys, pieces):
    status, out, err = run(capsys, "decode-hex", "VoteRequest", "2", *pieces)
    assert status == 0, err
    assert json.loads(out) == VOTE.to_json(2)


def test_decode_hex_reads_standard_input(capsys, monkeypatch):
    status, out, _ = run(
        capsys,
        "decode-hex",
        "VoteRequest",
        "2",
        "-",
        stdin=f"0x{VOTE_HEX}\n",
        monkeypatch=monkeypatch,
    )
    assert status == 0
    assert json.loads(out) == VOTE.to_json(2)


def test_odd_length_hex_has_its_own_message(capsys):
    status, _, err = run(capsys, "decode-hex", "VoteRequest", "2", VOTE_HEX[:-1])
    assert status == 1
    assert "odd number of hex digits" in one_line(err)


def test_a_non_hex_digit_is_named_with_its_place(capsys):
    status, _, err = run(capsys, "decode-hex", "VoteRequest", "2", "00zz")
    assert status == 1
    assert "'z' is not a hex digit (digit 3 of 4)" in one_line(err)


def test_a_truncated_body_is_a_one_line_error(capsys):
    status, _, err = run(capsys, "decode-hex", "VoteRequest", "2", VOTE_HEX[:6])
    assert status == 1
    assert "VoteRequest v2" in one_line(err)


def test_an_unknown_spec_names_close_matches_and_the_package_options(capsys):
    status, _, err = run(capsys, "decode-hex", "VoteRequst", "2", "00")
    assert status == 2
    line = one_line(err)
    assert "VoteRequst" in line and "did you mean 'VoteRequest'" in line and "--package" in line


@pytest.mark.parametrize("package", ["json", "kraftwire.no_such_module"])
def test_a_package_that_is_not_generated_is_a_usage_error(capsys, package):
    status, _, err = run(capsys, "decode-hex", "--package", package, "VoteRequest", "2", "00")
    assert status == 2
    assert f"--package {package}" in one_line(err)


def test_encode_json_round_trips_and_reads_standard_input(capsys, monkeypatch, tmp_path):
    document = tmp_path / "vote.json"
    document.write_text(json.dumps(VOTE.to_json(2)))
    status, out, _ = run(capsys, "encode-json", "VoteRequest", "2", str(document))
    assert (status, out.strip()) == (0, VOTE_HEX)
    status, out, _ = run(
        capsys,
        "encode-json",
        "VoteRequest",
        "2",
        "-",
        stdin=document.read_text(),
        monkeypatch=monkeypatch,
    )
    assert (status, out.strip()) == (0, VOTE_HEX)


def test_encode_json_on_a_missing_file_or_a_folder_is_a_usage_error(capsys, tmp_path):
    status, _, err = run(capsys, "encode-json", "VoteRequest", "2", str(tmp_path / "absent.json"))
    assert status == 2 and "no such file" in one_line(err)
    status, _, err = run(capsys, "encode-json", "VoteRequest", "2", str(tmp_path))
    assert status == 2 and "is a folder" in one_line(err)


def test_invalid_json_names_the_file_line_and_column(capsys, tmp_path):
    document = tmp_path / "broken.json"
    document.write_text('{\n  "clusterId": "c",\n  "voterId": ,\n}\n')
    status, _, err = run(capsys, "encode-json", "VoteRequest", "2", str(document))
    assert status == 1
    assert f"{document}: invalid JSON at line 3 column 14" in one_line(err)


def test_json_of_the_wrong_shape_is_a_one_line_error(capsys, tmp_path):
    document = tmp_path / "list.json"
    document.write_text("[1, 2]")
    status, _, err = run(capsys, "encode-json", "VoteRequest", "2", str(document))
    assert status == 1 and "VoteRequest v2" in one_line(err)


def test_decode_frame_decodes_requests_by_their_header(capsys):
    frame = kw.encode_request(VOTE, 2, correlation_id=7, client_id="me")
    status, out, err = run(capsys, "decode-frame", frame.hex())
    assert status == 0, err
    document = json.loads(out)
    assert document["kind"] == "request" and document["apiName"] == "Vote"
    assert (document["apiKey"], document["apiVersion"], document["correlationId"]) == (52, 2, 7)
    assert document["header"]["clientId"] == "me"
    assert document["body"] == VOTE.to_json(2)


def test_decode_frame_decodes_responses_by_the_api_given(capsys):
    frame = kw.encode_response(VoteResponse(error_code=0), 2, correlation_id=9)
    for api in ("52", "Vote", "VoteResponse"):
        status, out, err = run(capsys, "decode-frame", "--response", api, "2", frame.hex())
        assert status == 0, err
        document = json.loads(out)
        assert (document["kind"], document["correlationId"]) == ("response", 9)
        assert document["body"] == VoteResponse(error_code=0).to_json(2)


def test_decode_frame_reads_back_to_back_frames_from_a_binary_file(capsys, tmp_path):
    frames = tmp_path / "stream.bin"
    frames.write_bytes(b"".join(kw.encode_request(VOTE, 2, correlation_id=i) for i in range(3)))
    status, out, _ = run(capsys, "decode-frame", "--file", str(frames))
    assert status == 0
    decoder = json.JSONDecoder()
    ids, pos = [], 0
    while pos < len(out.rstrip()):
        document, pos = decoder.raw_decode(out, pos)
        ids.append(document["correlationId"])
        pos += 1
    assert ids == [0, 1, 2]


def test_decode_frame_reports_a_frame_cut_short(capsys):
    frame = kw.encode_request(VOTE, 2, correlation_id=1).hex()
    status, _, err = run(capsys, "decode-frame", frame[:-2])
    assert status == 1 and "cut short" in one_line(err)


def test_decode_frame_needs_exactly_one_input(capsys, tmp_path):
    assert run(capsys, "decode-frame")[0] == 2
    assert run(capsys, "decode-frame", "00", "--file", str(tmp_path))[0] == 2


def _fetch_response_with_batches() -> FetchResponse:
    data = encode_batch([(b"k", b"v", [("h", b"1")], 1_700_000_000_000)], compression="gzip")
    marker = end_txn_marker_batch(True, producer_id=5, producer_epoch=0, base_offset=1)
    partition = PartitionData(partition_index=0, records=data + marker)
    return FetchResponse(responses=[FetchableTopicResponse(topic="t", partitions=[partition])])


def test_records_expands_batches_in_any_decode(capsys):
    response = _fetch_response_with_batches()
    status, out, err = run(
        capsys, "decode-hex", "--records", "FetchResponse", "12", response.encode(12).hex()
    )
    assert status == 0, err
    records = json.loads(out)["responses"][0]["partitions"][0]["records"]
    data, marker = records["batches"]
    assert data["compression"] == "gzip"
    assert base64.b64decode(data["records"][0]["value"]) == b"v"
    assert marker["isControl"] and marker["records"][0]["control"]["typeName"] == "COMMIT"
    # Without --records the field stays Kafka's base64.
    status, out, _ = run(capsys, "decode-hex", "FetchResponse", "12", response.encode(12).hex())
    assert isinstance(json.loads(out)["responses"][0]["partitions"][0]["records"], str)


def test_records_in_decode_frame(capsys):
    frame = kw.encode_response(_fetch_response_with_batches(), 12, correlation_id=3)
    status, out, err = run(
        capsys, "decode-frame", "--records", "--response", "Fetch", "12", frame.hex()
    )
    assert status == 0, err
    records = json.loads(out)["body"]["responses"][0]["partitions"][0]["records"]
    assert len(records["batches"]) == 2


def test_specs_list_shows_every_api_with_its_versions(capsys):
    status, out, _ = run(capsys, "specs", "list")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == f"kraftwire.generated: {len(kw.APIS)} APIs, {len(kw.SPECS)} specs"
    vote = next(line for line in lines if " Vote " in line)
    assert vote.split()[:3] == ["52", "Vote", "0-2"]
    assert any(line.split()[:1] == ["LeaderChangeMessage"] for line in lines)


def test_version_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("kraftwire ")


def test_record_values_names_kraft_metadata_records(capsys, upstream):
    """A Fetch of __cluster_metadata decoded with a package that has Kafka's metadata records."""
    import importlib
    from pathlib import Path

    records = importlib.import_module(f"{upstream.__name__}.records")
    fetch = importlib.import_module(f"{upstream.__name__}.fetch_response")
    topic = upstream.lookup("TopicRecord")(name="orders")
    batch = encode_batch([(None, records.encode_metadata_record(topic, 0), [], 1_700_000_000_000)])
    partition = fetch.PartitionData(partition_index=0, records=batch)
    response = fetch.FetchResponse(
        responses=[fetch.FetchableTopicResponse(topic="__cluster_metadata", partitions=[partition])]
    )
    path = str(Path(upstream.__file__).parents[1])
    status, out, err = run(
        capsys, "decode-hex", "--package", upstream.__name__, "--path", path,
        "--record-values", "metadata", "FetchResponse", "12", response.encode(12).hex(),
    )  # fmt: skip
    assert status == 0, err
    [record] = json.loads(out)["responses"][0]["partitions"][0]["records"]["batches"][0]["records"]
    assert record["metadata"]["name"] == "TopicRecord"
    assert record["metadata"]["data"]["name"] == "orders"
