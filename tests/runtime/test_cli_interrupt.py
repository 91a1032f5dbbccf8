"""Ctrl-C ends a command quietly with status 130, the way a terminal sends it: SIGINT to the whole
foreground process group (the command and any worker it started). ``consume`` (which a user stops
this way), ``decode`` in the middle of a big capture and ``codegen`` while its workers render printed
a KeyboardInterrupt traceback (and each worker one more)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from process_group import ctrl_c_as_in_a_terminal
from runtime_settings import formatted_cluster
from shared import shared_path
from kraftwire.node.runtime.producer import MetadataClient

pytestmark = pytest.mark.timeout(180)


def start(*argv: str, **options) -> subprocess.Popen:
    """``python -m kraftwire ARGV`` as the leader of a new process group (as a terminal's job)."""
    return subprocess.Popen(
        [sys.executable, "-m", "kraftwire", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
        **options,
    )


def wait_until(condition, process: subprocess.Popen, timeout_s: float = 60.0) -> None:
    stop = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < stop, "the command never got to the point of the test"
        time.sleep(0.05)


def ctrl_c(process: subprocess.Popen) -> tuple[bytes, bytes]:
    """SIGINT to the process group, as Ctrl-C in a terminal; the command's output; every process
    of the group is gone afterwards (killed, if it has to be, and the test fails)."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        out, err = process.communicate(timeout=60)
        stop = time.monotonic() + 30
        while _group_alive(process.pid) and time.monotonic() < stop:
            time.sleep(0.05)
        assert not _group_alive(process.pid), "a worker outlived Ctrl-C"
    finally:
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.wait(timeout=30)
    return out, err


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _has_open(pid: int, path: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            if path in f.read():
                return True
        return any(
            os.readlink(f"/proc/{pid}/fd/{fd}") == path for fd in os.listdir(f"/proc/{pid}/fd")
        )
    except OSError:
        return False


def assert_quiet_130(process: subprocess.Popen, err: bytes) -> None:
    assert process.returncode == 130, err.decode(errors="replace")
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err, err.decode(errors="replace")


def test_consume_stops_on_ctrl_c(tmp_path):
    with formatted_cluster(tmp_path / "cluster") as cluster:
        cluster.start_all()
        cluster.wait_for_leader()
        writer = MetadataClient(cluster.endpoints[1], deadline_s=30)
        writer.produce([b"one", b"two"], -1)
        writer.close()
        where = f"127.0.0.1:{cluster.endpoints[1].port}"
        process = start(
            "consume", "--bootstrap-controller", where, "--from-beginning", "--timeout-ms", "120000"
        )
        # consume printed the records and waits for more
        assert [process.stdout.readline(), process.stdout.readline()] == [b"one\n", b"two\n"]
        out, err = ctrl_c(process)
    assert_quiet_130(process, err)
    assert out == b""


def test_decode_stops_on_ctrl_c(tmp_path):
    from kraftwire.synthetic_capture import Conversation, link_frame, pcap_bytes
    from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET
    from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

    conv = Conversation(("10.0.0.1", 40001), ("10.0.0.2", 9093))
    ts = 1_700_000_000_000_000_000
    conv.handshake(ts)
    for exchange in kraft_exchanges(3000, seed=5):
        ts += 1_000_000
        conv.send(True, exchange.request, ts, 1460)
        conv.send(False, exchange.response, ts + 500_000, 1460)
    capture = tmp_path / "big.pcap"
    packets = [(t, link_frame(LINK_ETHERNET, ip)) for t, ip in conv.packets]
    capture.write_bytes(pcap_bytes(packets, LINK_ETHERNET))
    # The same capture 200 times: many seconds of decoding, far more than the test waits for.
    # One process (--jobs 1): this test watches the process itself open the capture; the workers of
    # --jobs N are stopped by tests/spark/test_jobs.py's Ctrl-C test.
    process = start("decode", *[str(capture)] * 200, "--format", "jsonl", "--jobs", "1")
    wait_until(lambda: _has_open(process.pid, str(capture)), process)
    out, err = ctrl_c(process)
    assert_quiet_130(process, err)


def test_codegen_stops_on_ctrl_c(tmp_path):
    specs = shared_path("kafka-schemas")
    out_dir = tmp_path / "pkg"
    process = start("codegen", "--schemas", str(specs), "--out", str(out_dir), "--jobs", "2")
    wait_until(lambda: len(_children(process.pid)) >= 2, process)  # the workers are rendering
    out, err = ctrl_c(process)
    assert_quiet_130(process, err)
    assert not out_dir.exists() or not any(out_dir.iterdir())  # nothing half-written


def test_simulate_stops_on_ctrl_c():
    process = start("simulate", "--scenario", "all", "--runs", "500", "--jobs", "2")
    wait_until(lambda: len(_children(process.pid)) >= 2, process)  # the workers are simulating
    time.sleep(0.5)
    out, err = ctrl_c(process)
    assert_quiet_130(process, err)
