"""``kraftwire decode --jobs N``: the same bytes as one process, for every format and table, on the
shared captures, the real clients' corpus and synthetic traffic (many interleaved connections,
connections continuing from one rotated file into the next, one exchange seen by two captures);
small captures and standard input stay in one process; a worker's error is the CLI's one line; and
Ctrl-C ends the command with 130 and no worker left running.

``--parallel-above 0`` (hidden, for tests) makes the tiny captures here take the worker path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from captures import T0, conversation, pcap_of, write
from process_group import ctrl_c_as_in_a_terminal
from kraftwire.cli import main
from kraftwire.spark_decoders import local_parallel
from kraftwire.spark_decoders.output.tables import TABLES
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges
from shared import shared_path

pytestmark = pytest.mark.timeout(300)

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "data"
FORMATS = ("table", "jsonl", "parquet")
HOUR = 3600 * 10**9


def _decode(captures: list[str], out: Path, jobs: int, *options: str) -> bytes:
    argv = ["decode", *captures, "--out", str(out), "--jobs", str(jobs), "--parallel-above", "0"]
    assert main([*argv, *options]) == 0
    return out.read_bytes()


def _assert_same_for_every_job_count(captures: list[str], tmp_path: Path, *options: str) -> None:
    one = _decode(captures, tmp_path / "jobs1", 1, *options)
    assert one, "the single-process decode wrote nothing: the comparison would prove nothing"
    for jobs in (2, 3):
        assert _decode(captures, tmp_path / f"jobs{jobs}", jobs, *options) == one, (jobs, options)


def _interleaved(
    connections: int, exchanges: int, seed: int, t0: int = T0, network: int = 0
) -> list[tuple[int, bytes]]:
    """The packets of ``connections`` conversations at once, in time order: consecutive packets
    belong to different connections, so to different workers. Clients in 10.``network``/16."""
    packets = []
    for index in range(connections):
        conv = conversation(
            kraft_exchanges(exchanges, seed=seed + index),
            client=(f"10.{network}.{index // 200}.{index % 200 + 1}", 40000 + index),
            t0=t0 + index * 37_000,
        )
        packets.extend(conv.packets)
    return sorted(packets, key=lambda packet: packet[0])


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> dict[str, list[str]]:
    folder = tmp_path_factory.mktemp("jobs")
    packets = _interleaved(12, 9, seed=5)
    whole = write(folder, "whole.pcap", pcap_of(packets))
    half = len(packets) // 2  # rotated mid-traffic: every connection continues in the next file
    first = write(folder, "rotated-1.pcap", pcap_of(packets[:half]))
    second = write(folder, "rotated-2.pcap", pcap_of(packets[half:]))
    seen_twice = write(folder, "tap.pcap", pcap_of(packets))  # the same exchanges: sightings
    return {"whole": [whole], "rotated": [second, first], "sightings": [whole, seen_twice]}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("table", TABLES)
def test_synthetic_traffic_gives_the_same_bytes(synthetic, tmp_path, fmt, table):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    for name, captures in synthetic.items():
        folder = tmp_path / name
        folder.mkdir()
        _assert_same_for_every_job_count(captures, folder, "--format", fmt, "--table", table)


@pytest.mark.parametrize("fmt", ("table", "jsonl"))
def test_shared_captures_give_the_same_bytes(tmp_path, fmt):
    captures = sorted(str(p) for p in shared_path("captures").glob("*.pcap*"))
    assert captures
    for index, capture in enumerate(captures):
        folder = tmp_path / str(index)
        folder.mkdir()
        _assert_same_for_every_job_count([capture], folder, "--format", fmt)
    all_of_them = tmp_path / "all"
    all_of_them.mkdir()
    _assert_same_for_every_job_count(captures, all_of_them, "--format", fmt)


@pytest.mark.parametrize("table", TABLES)
def test_the_corpus_gives_the_same_bytes(tmp_path, table):
    captures = sorted(str(p) for p in CORPUS.glob("*.pcap*"))
    assert captures
    for index, capture in enumerate(captures):
        folder = tmp_path / str(index)
        folder.mkdir()
        _assert_same_for_every_job_count([capture], folder, "--format", "jsonl", "--table", table)


def test_small_captures_and_one_job_stay_in_this_process(synthetic, tmp_path, monkeypatch):
    def no_workers(*args, **kwargs):
        raise AssertionError("workers started")

    monkeypatch.setattr(local_parallel, "decode_parallel", no_workers)
    capture = synthetic["whole"]
    assert os.path.getsize(capture[0]) < local_parallel.PARALLEL_ABOVE_BYTES
    assert main(["decode", *capture, "--out", str(tmp_path / "a"), "--jobs", "2"]) == 0
    argv = ["decode", *capture, "--out", str(tmp_path / "b"), "--jobs", "1"]
    assert main([*argv, "--parallel-above", "0"]) == 0
    with pytest.raises(AssertionError, match="workers started"):
        main(["decode", *capture, "--out", str(tmp_path / "c"), "--parallel-above", "0"])


def test_standard_input_stays_in_this_process(synthetic, tmp_path):
    capture = synthetic["whole"][0]
    command = [sys.executable, "-m", "kraftwire", "decode", "-", "--format", "jsonl"]
    with open(capture, "rb") as stdin:
        streamed = subprocess.run(
            [*command, "--jobs", "2", "--parallel-above", "0"],
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    assert streamed.returncode == 0, streamed.stderr
    from_file = _decode([capture], tmp_path / "file", 1, "--format", "jsonl")
    assert _without_file_names(streamed.stdout) == _without_file_names(from_file)


def _without_file_names(lines: bytes) -> list[dict]:
    rows = [json.loads(line) for line in lines.splitlines()]
    assert rows
    for row in rows:  # standard input is named -
        del row["capture_file"], row["capture_files"]
    return rows


def test_jobs_must_be_a_positive_number_and_not_with_spark(synthetic, capsys):
    with pytest.raises(SystemExit):
        main(["decode", *synthetic["whole"], "--jobs", "0"])
    assert "--jobs: must be a whole number of at least 1, not '0'" in capsys.readouterr().err
    assert main(["decode", *synthetic["whole"], "--jobs", "2", "--spark"]) == 2
    assert "--jobs is used only without --spark" in capsys.readouterr().err


def test_a_workers_error_is_the_clis_one_line(synthetic, tmp_path, monkeypatch, capsys):
    def unreadable(path):
        raise PermissionError(13, "Permission denied", path)

    # Workers are forked from this process: they read the captures through this stand-in.
    monkeypatch.setattr(local_parallel, "map_file", unreadable)
    argv = ["decode", *synthetic["whole"], "--out", str(tmp_path / "rows")]
    assert main([*argv, "--jobs", "2", "--parallel-above", "0"]) == 1
    stderr = capsys.readouterr().err
    assert stderr == f"kraftwire decode: [Errno 13] Permission denied: '{synthetic['whole'][0]}'\n"
    assert not (tmp_path / "rows").exists()


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(child) for child in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_ctrl_c_exits_130_and_leaves_no_worker(tmp_path):
    # Seconds of work for the workers: 108,000 exchanges, each file's from clients of its own.
    captures = [
        write(tmp_path, f"busy-{n}.pcap", pcap_of(_interleaved(300, 60, n, T0 + n * HOUR, n + 1)))
        for n in range(6)
    ]
    command = [sys.executable, "-m", "kraftwire", "decode", *captures, "--format", "jsonl"]
    out = tmp_path / "rows.jsonl"
    process = subprocess.Popen(
        [*command, "--out", str(out), "--jobs", "2", "--parallel-above", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        workers: set[int] = set()
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline and process.poll() is None:
            workers = _children(process.pid)
            time.sleep(0.02)
        assert len(workers) == 2, "the workers never started (or the decode ended first)"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and not out.exists(), stderr
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)


def test_files_that_are_no_capture_or_cut_short_are_told_alike(synthetic, tmp_path, capsys):
    junk = write(tmp_path, "junk.pcap", b"hello, not a capture")
    whole = Path(synthetic["whole"][0]).read_bytes()
    cut = write(tmp_path, "cut.pcap", whole[: len(whole) // 2 + 7])
    said = []
    for jobs in ("1", "2"):
        argv = ["decode", junk, cut, *synthetic["rotated"], "--format", "jsonl"]
        code = main([*argv, "--jobs", jobs, "--parallel-above", "0"])
        said.append((code, capsys.readouterr()))
    assert said[0] == said[1]
    code, (out, err) = said[1]
    assert code == 1 and out and "junk.pcap: not a pcap or pcapng file" in err
