"""Loopback captures of an interop run, decoded by ``kraftwire decode`` and by tshark.

A kraftwire node writes its own capture (``kraftwire node start --capture``); the links between Kafka's
processes are captured by tcpdump on ``lo`` with a port filter (:class:`LoopbackCapture`, stopped by
its pid). :func:`api_counts` and :func:`tshark_counts` count the Kafka requests and responses of a
capture per API key, as kraftwire and tshark see them; the tests require them equal.

Broker traffic needs codecs beyond the bundled KRaft set: :func:`schemas_for` gathers the specs of the
APIs tshark saw from ../shared's Kafka specs into a scratch directory (``kraftwire decode --schemas``),
so generating them takes seconds, not the minutes the whole spec tree takes.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from kraftwire.codegen.loader import load_raw

REQUEST, RESPONSE = "request", "response"
HEADERS = ("RequestHeader", "ResponseHeader")  # framing needs them beside the APIs' bodies
# "truncated" is not here: the tests kill Kafka processes with -9, which can cut a response mid-send.
BAD_STATUSES = ("decode_error", "unsupported_version", "gap", "no_request")


class LoopbackCapture:
    """tcpdump on ``lo`` for the given TCP ports, from :meth:`start` until :meth:`stop`."""

    def __init__(self, path: Path, ports: list[int]) -> None:
        self.path = path
        self.ports = ports
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 10.0) -> None:
        expression = " or ".join(f"tcp port {port}" for port in self.ports)
        self.process = subprocess.Popen(
            ["tcpdump", "-i", "lo", "-U", "-s", "0", "-w", str(self.path), expression],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        # tcpdump says "listening on lo" once it captures; before that, early packets would be lost.
        assert self.process.stderr is not None
        stop = time.monotonic() + timeout_s
        line = b""
        while time.monotonic() < stop and b"listening on" not in line:
            line = self.process.stderr.readline()
            if not line and self.process.poll() is not None:
                raise RuntimeError(f"tcpdump exited {self.process.returncode}")
        if b"listening on" not in line:
            raise TimeoutError(f"tcpdump did not start capturing in {timeout_s} s")

    def stop(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # tcpdump writes out what it holds and exits
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def tshark_counts(capture: Path, server_ports: list[int]) -> Counter[tuple[int, str]]:
    """(api key, request/response) -> how many whole Kafka PDUs tshark frames in ``capture``.

    A response's API is its request's, found by TCP stream and correlation id: tshark names it on a
    response only when it could dissect the request's body, and its dissector (Wireshark 4.0 here)
    stops at older versions than Kafka 4.4 sends (Metadata v9, Fetch v11, ...)."""
    command = ["tshark", "-r", str(capture), "-Y", "kafka"]
    for port in server_ports:
        command += ["-d", f"tcp.port=={port},kafka"]
    fields = ("tcp.stream", "tcp.dstport", "kafka.api_key", "kafka.correlation_id")
    command += ["-T", "fields", *(arg for field in fields for arg in ("-e", field))]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True).stdout
    requests: dict[tuple[str, str], int] = {}
    responses: list[tuple[str, str]] = []
    for line in out.splitlines():
        stream, port, keys, correlations = line.split("\t")
        if int(port) in server_ports:
            for key, correlation in zip(keys.split(","), correlations.split(",")):
                requests[stream, correlation] = int(key)
        else:
            responses += [(stream, c) for c in correlations.split(",")]
    counts: Counter[tuple[int, str]] = Counter((key, REQUEST) for key in requests.values())
    counts.update((requests[r], RESPONSE) for r in responses if r in requests)
    return counts


def decode_rows(capture: Path, server_ports: list[int], schemas: Path | None = None) -> list[dict]:
    """``kraftwire decode --format jsonl`` of ``capture``: one dict per exchange."""
    command = [sys.executable, "-m", "kraftwire", "decode", "--format", "jsonl"]
    command += ["--ports", ",".join(map(str, server_ports)), str(capture)]
    if schemas is not None:
        command += ["--schemas", str(schemas)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def api_counts(rows: list[dict]) -> Counter[tuple[int, str]]:
    """(api key, request/response) -> how many whole PDUs kraftwire decoded; a response cut short
    (its process was killed mid-send: status ``truncated``) is not a whole one."""
    counts: Counter[tuple[int, str]] = Counter()
    for row in rows:
        if row["request_frame"] is not None:
            counts[row["api_key"], REQUEST] += 1
        if row["response_frame"] is not None and row["status"] != "truncated":
            counts[row["api_key"], RESPONSE] += 1
    return counts


def bad_rows(rows: list[dict]) -> list[dict]:
    return [row for row in rows if row["status"] in BAD_STATUSES]


def schemas_for(api_keys: set[int], message_dir: Path, into: Path) -> Path:
    """A directory with the request and response specs of ``api_keys`` (and the headers) from
    ``message_dir``."""
    into.mkdir(parents=True, exist_ok=True)
    for path in sorted(message_dir.glob("*.json")):
        if path.stem in HEADERS:
            shutil.copy(path, into / path.name)
        elif path.stem.endswith(("Request", "Response")):
            if load_raw(path).data.get("apiKey") in api_keys:
                shutil.copy(path, into / path.name)
    return into
