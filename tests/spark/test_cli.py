"""``kraftwire decode``: outputs, columns, and one-line errors with the right exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from captures import conversation, pcap_of, write
from kraftwire.cli import main
from kraftwire.spark_decoders.kafka.rows import COLUMNS
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges
from shared import shared_path

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    conv = conversation(kraft_exchanges(7, seed=2))
    return write(tmp_path_factory.mktemp("cli"), "kraft.pcap", pcap_of(conv.packets))


def test_jsonl_rows_have_exactly_the_columns(capture, tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    assert main(["decode", capture, "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 7 and all(list(row) == list(COLUMNS) for row in rows)
    assert rows[0]["request_ts"].endswith("Z") and rows[0]["status"] == "ok"
    assert [r["api_name"] for r in rows] == [
        "Vote",
        "BeginQuorumEpoch",
        "EndQuorumEpoch",
        "Fetch",
        "DescribeQuorum",
        "ApiVersions",
        "FetchSnapshot",
    ]


def test_table_with_upstream_schemas(capsys, upstream):
    path = str(shared_path("captures") / "go-sniffer-kafka.pcap")
    assert main(["decode", path, "--schemas", str(shared_path("kafka-schemas"))]) == 0
    text = capsys.readouterr().out
    assert (
        "Metadata" in text and "kafka-python-producer-1" in text and text.endswith("2 exchanges\n")
    )


def test_parquet(capture, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "rows.parquet"
    assert main(["decode", capture, "--format", "parquet", "--out", str(out)]) == 0
    table = pq.read_table(out)
    assert table.column_names == list(COLUMNS) and table.num_rows == 7


def test_a_capture_name_that_is_not_utf8_is_shown_escaped(capture, tmp_path, capsys):
    """Python keeps such a name's bytes as lone surrogates, which Arrow refused (a traceback and
    an empty output file for parquet): every output now shows the byte as a \\xNN escape. Spark
    cannot be given such a name (py4j sends UTF-8): one line says so."""
    import os
    import shutil

    pq = pytest.importorskip("pyarrow.parquet")
    named = os.path.join(str(tmp_path), os.fsdecode(b"caf\xe9-\xff.pcap"))
    shutil.copyfile(capture, named)
    shown = os.path.join(str(tmp_path), "caf\\xe9-\\xff.pcap")
    out = tmp_path / "rows.parquet"
    assert main(["decode", named, "--format", "parquet", "--out", str(out)]) == 0
    assert set(pq.read_table(out).column("capture_file").to_pylist()) == {shown}
    lines = tmp_path / "rows.jsonl"
    assert main(["decode", named, "--format", "jsonl", "--out", str(lines)]) == 0
    rows = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 7 and {row["capture_file"] for row in rows} == {shown}
    capsys.readouterr()
    assert main(["decode", named, "--spark"]) == 1  # said before any Spark session starts
    error = capsys.readouterr().err
    assert (
        error.count("\n") == 1 and f"{shown}: Spark takes only file names that are UTF-8" in error
    )


@pytest.mark.parametrize(
    "argv,code,message",
    [
        (["decode", "/nonexistent.pcap"], 2, "no such capture file"),
        (["decode", "{capture}", "{folder}"], 2, "is a folder"),
        (["report", "{folder}", "--out", "{folder}/report.html"], 2, "is a folder"),
        (["decode", "{capture}", "--format", "parquet"], 2, "needs --out"),
        (["decode", "{capture}", "--out", "{capture}"], 2, "exists"),
        (["decode", "{capture}", "--out", "{text}/missing/rows.jsonl"], 2, "no such folder"),
        (["report", "{capture}", "--out", "{text}/missing/report.html"], 2, "no such folder"),
        (["decode", "{capture}", "--ports", "x"], 2, "--ports"),
        (["decode", "{capture}", "--ports", "9092,99999"], 2, "--ports"),
        (["decode", "{capture}", "--ports", "-1"], 2, "--ports"),
        (["decode", "{capture}", "--master", "local[2]"], 2, "--master is used only with --spark"),
        (["decode", "{text}"], 1, "not a pcap or pcapng file"),
        (["decode", "{capture}", "--schemas", "/nonexistent-dir"], 1, "does not exist"),
    ],
)
def test_errors_are_one_line(argv, code, message, capture, tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("not a capture\n")
    argv = [a.format(capture=capture, text=text, folder=tmp_path) for a in argv]
    assert main(argv) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]


@pytest.mark.parametrize("command", ["decode", "report"])
@pytest.mark.parametrize(
    "content",
    [b"", b"\xd4\xc3", b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00" + b"\0" * 15],
    ids=["empty", "2 bytes", "23 bytes of a pcap header"],
)
def test_file_shorter_than_any_capture_header_is_no_capture(command, content, tmp_path, capsys):
    short = write(tmp_path, "short.pcap", content)
    out = tmp_path / "out"
    assert main([command, short, "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kraftwire {command}: {short}: not a pcap or pcapng file"]
    assert not out.exists()


def test_header_only_capture_is_an_empty_capture(tmp_path, capsys):
    empty = write(tmp_path, "empty.pcap", pcap_of([]))
    assert main(["decode", empty]) == 0
    captured = capsys.readouterr()
    assert captured.out.endswith("0 exchanges\n") and captured.err == ""


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "table"])
def test_an_output_made_while_decoding_is_never_replaced(
    fmt, capture, tmp_path, capsys, monkeypatch
):
    import kraftwire.spark_decoders.cli as cli

    out = tmp_path / f"rows.{fmt}"
    decode_rows = cli._local_rows

    def someone_writes_the_output_meanwhile(args, ports):
        found = decode_rows(args, ports)
        out.write_text("theirs\n")
        return found

    monkeypatch.setattr(cli, "_local_rows", someone_writes_the_output_meanwhile)
    assert main(["decode", capture, "--format", fmt, "--out", str(out)]) == 1
    assert out.read_text() == "theirs\n"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "File exists" in err[0]


def test_a_report_made_while_decoding_is_never_replaced(capture, tmp_path, capsys, monkeypatch):
    import kraftwire.spark_decoders.report as report

    out = tmp_path / "report.html"
    real_render = report.render

    def render_while_someone_writes(rows, captures):
        out.write_text("theirs\n")
        return real_render(rows, captures)

    monkeypatch.setattr(report, "render", render_while_someone_writes)
    assert main(["report", capture, "--out", str(out)]) == 1
    assert out.read_text() == "theirs\n"
    assert "File exists" in capsys.readouterr().err


def test_jsonl_lines_hold_the_rows_values_with_iso_timestamps():
    import datetime as dt

    from kraftwire.spark_decoders.cli import jsonl_line
    from kraftwire.spark_decoders.output.tables import json_ready

    utc = dt.timezone.utc
    row = dict.fromkeys(COLUMNS)
    row.update(
        request_ts=dt.datetime(2024, 5, 1, 12, 0, 0, 17, tzinfo=utc),
        response_ts=dt.datetime(2024, 5, 1, 12, 0, 1, tzinfo=utc),  # no microseconds
        latency_us=1000017.0,
        client_id="caf\u00e9",
        error_codes=[0, 6],
        request_json='{"a":"\\u00e9"}',
    )
    line = jsonl_line(row)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == json_ready(row)  # "2024-05-01T12:00:00.000017Z", "...12:00:01Z"
    odd = dict(row, capture_file=b"/tmp/\xff.pcap".decode("utf-8", "surrogateescape"))
    line = jsonl_line(odd)  # orjson refuses the lone surrogate: the standard library writes it
    line.decode("utf-8")
    assert json.loads(line) == json_ready(odd)


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path):
    """``kraftwire decode ... | head -1``: the broken pipe ends the command quietly (status 1),
    without a traceback or a message about an output file it never had."""
    import subprocess
    import sys

    conv = conversation(kraft_exchanges(400, seed=3))
    capture = write(tmp_path, "many.pcap", pcap_of(conv.packets))
    command = [sys.executable, "-m", "kraftwire", "decode", capture, "--format", "jsonl"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.readline().startswith(b"{")
        child.stdout.close()  # more than a pipe's buffer is still to come
        err = child.stderr.read()
        assert child.wait(timeout=120) == 1
    assert err == b""


@pytest.mark.timeout(1200)  # a JVM starts: minutes on a loaded 2-core machine
def test_spark_decode_writes_only_our_own_lines_to_stderr(capture, tmp_path):
    """One Spark run (slow: a JVM starts): stderr held the JVM's notes, log4j's profile and WARN
    lines and progress bars; now the JVM's output goes to a log file that is removed on success.
    Its lines (encoded in Spark's tasks) are local mode's, byte for byte."""
    out = tmp_path / "rows.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "kraftwire", "decode", capture, "--spark"]
        + ["--master", "local[2]", "--format", "jsonl", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1100,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert len(out.read_text().splitlines()) == 7
    local = tmp_path / "local.jsonl"
    assert main(["decode", capture, "--format", "jsonl", "--out", str(local)]) == 0
    assert out.read_bytes() == local.read_bytes()


@pytest.mark.timeout(600)  # a JVM starts (and refuses the master)
def test_a_master_spark_refuses_is_one_line_naming_the_log(capture, capsys):
    """``--master bogus://x``: pyspark's traceback (the JVM exited before sending its port) and a
    log folder left unnamed; now one line with the JVM's reason and where its log is."""
    assert main(["decode", capture, "--spark", "--master", "bogus://x"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("kraftwire decode: Spark did not start on master 'bogus://x': ")
    assert "Master must" in line and "Traceback" not in line
    log = line.rsplit("(its log: ", 1)[1].rstrip(")")
    assert os.path.isfile(log)
    shutil.rmtree(os.path.dirname(log))


def test_specs_that_do_not_load_are_one_line_and_leave_no_staging(
    capture, tmp_path, capsys, monkeypatch
):
    """A --schemas folder holding a spec that is not JSON printed the generator's traceback, and left
    the half-made package's staging folder in the codec cache."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "Bad.json").write_text("{ not json")
    cache = tmp_path / "cache"
    monkeypatch.setenv("KRAFTWIRE_CACHE", str(cache))
    argv = ["decode", str(capture), "--schemas", str(specs), "--out", str(tmp_path / "rows.jsonl")]
    assert main([*argv, "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kraftwire decode: --schemas: Bad.json: not valid spec JSON")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not any((cache / "codecs").iterdir())
    assert not (tmp_path / "rows.jsonl").exists()
