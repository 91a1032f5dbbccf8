"""Bad frames at a running leader: each closes only its own connection, with one log line; the node
stays up and keeps committing."""

from __future__ import annotations

import os
import random
import socket
import struct

import pytest

from fuzz_frames import bad_frames, run_fuzz
from kraftwire.node.runtime.producer import MetadataClient

pytestmark = pytest.mark.timeout(240)


def send_raw(endpoint, data: bytes) -> bytes:
    """Send ``data``, then read until the node closes the connection (or 10 s pass)."""
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return b""
        received = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, socket.timeout):
                return received
            if not chunk:
                return received
            received += chunk


def test_bad_frames_close_only_their_connection(cluster):
    cluster.start_all()
    leader, _ = cluster.wait_for_leader()
    endpoint = cluster.endpoints[leader]
    client = MetadataClient(endpoint, deadline_s=60)
    rng = random.Random(20261125)
    try:
        for round_ in range(3):
            for frame in bad_frames(rng, 100):
                send_raw(endpoint, frame)
            assert client.produce([f"still-alive-{round_}".encode()], -1) >= 0
        assert cluster.leader() == (leader, cluster.leader()[1])  # the same node still leads
    finally:
        client.close()
    with open(os.path.join(cluster.directory, f"node{leader}.log")) as f:
        closed = [line for line in f if "closing connection from" in line]
    assert (
        250 <= len(closed) <= 300
    )  # one line per bad connection (a valid Vote frame may be answered)
    assert leader in cluster.running()


def test_unknown_api_versions_version_gets_a_v0_answer(cluster):
    cluster.start_all()
    leader, _ = cluster.wait_for_leader()
    frame = struct.pack(">ihhi", 10, 18, 99, 42) + b"\x00\x00"
    answer = send_raw(cluster.endpoints[leader], frame)
    size, correlation_id, error = struct.unpack_from(">iih", answer)
    assert size == len(answer) - 4 and correlation_id == 42 and error == 35  # UNSUPPORTED_VERSION


def test_fuzzed_frames_concurrently_while_committing(tmp_path):
    run_fuzz(str(tmp_path / "fuzz"), frames=3000, seed=5, rounds=3)
