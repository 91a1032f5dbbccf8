"""The listener's limits against a running quorum (issue 26, item 4), with real sockets: memory held by
requests still arriving stays bounded however many connections declare huge frames; idle connections
are closed after connections.max.idle.ms; connections over max.connections or max.connections.per.ip
are closed at once; the quorum keeps committing through each."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from runtime_settings import TEST_SETTINGS, formatted_cluster
from kraftwire.node.runtime.producer import MetadataClient

pytestmark = pytest.mark.timeout(300)

MIB = 1 << 20


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the node closes ``sock`` within ``seconds`` (anything it sends first is ignored)."""
    sock.settimeout(seconds)
    stop = time.monotonic() + seconds
    try:
        while time.monotonic() < stop:
            if not sock.recv(4096):
                return True
    except ConnectionResetError:
        return True
    except (socket.timeout, BlockingIOError):
        return False
    return False


def connect(endpoint, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(
        (endpoint.host, endpoint.port), timeout=10, source_address=(source, 0)
    )


@pytest.mark.parametrize("bound_mib", [None, 16])
def test_declared_huge_frames_do_not_take_memory(tmp_path, bound_mib):
    """10 connections each declare a 100 MiB request and send 30 MiB of it: before the limit the node
    held all 300 MiB; now the partial requests together stay under queued.max.request.bytes, which
    is socket.request.max.bytes (100 MiB) when left at Kafka's -1."""
    settings = dict(TEST_SETTINGS)
    if bound_mib is not None:
        settings["queued.max.request.bytes"] = bound_mib * MIB
    with formatted_cluster(tmp_path / "cluster", settings) as cluster:
        cluster.start_all()
        leader, epoch = cluster.wait_for_leader()
        endpoint = cluster.endpoints[leader]
        client = MetadataClient(endpoint, deadline_s=60)
        client.produce([b"warm-up"], -1)
        pid = cluster.processes[leader].pid
        before = rss_mib(pid)
        attackers, piece = [], b"\0" * MIB
        for _ in range(10):
            sock = connect(endpoint)
            attackers.append(sock)
            try:
                sock.sendall(struct.pack(">i", 100 * MIB))
                for _ in range(30):
                    sock.sendall(piece)
            except OSError:
                pass  # closed by the node: this request did not fit
        time.sleep(1.0)
        during = rss_mib(pid)
        assert client.produce([b"during the attack"], -1) >= 0
        for sock in attackers:
            sock.close()
        client.close()
        print(
            f"queued.max.request.bytes={bound_mib or -1} MiB: leader RSS {before:.0f} MiB before,"
            f" {during:.0f} MiB with 10 x 30 MiB sent"
        )
        assert during - before < (bound_mib or 100) + 40, (before, during)
        assert cluster.leader() == (leader, epoch)


def test_idle_connections_are_closed(tmp_path):
    settings = {**TEST_SETTINGS, "connections.max.idle.ms": 1500}
    with formatted_cluster(tmp_path / "cluster", settings) as cluster:
        cluster.start_all()
        leader, epoch = cluster.wait_for_leader()
        endpoint = cluster.endpoints[leader]
        idle = [connect(endpoint) for _ in range(500)]
        for sock in idle[:250]:
            sock.sendall(b"\0")  # one byte of a size prefix, then nothing
        started = time.monotonic()
        assert all(closed_within(sock, 10) for sock in idle)
        assert 1.0 < time.monotonic() - started < 15
        for sock in idle:
            sock.close()
        client = MetadataClient(endpoint, deadline_s=60)
        assert client.produce([b"after the idle ones"], -1) >= 0
        client.close()
        assert cluster.leader() == (leader, epoch)


def test_connections_over_the_limits_are_closed(tmp_path):
    settings = {
        **TEST_SETTINGS,
        "max.connections": 40,
        "max.connections.per.ip": 5,
        "max.connections.per.ip.overrides": "127.0.0.1:1000",
    }
    with formatted_cluster(tmp_path / "cluster", settings) as cluster:
        cluster.start_all()
        leader, epoch = cluster.wait_for_leader()
        endpoint = cluster.endpoints[leader]
        client = MetadataClient(endpoint, deadline_s=60)  # connected before the flood
        client.produce([b"before"], -1)
        held: list[socket.socket] = []
        per_ip = [connect(endpoint, "127.0.0.2") for _ in range(6)]
        assert [closed_within(s, 0.5) for s in per_ip] == [False] * 5 + [True]
        held += per_ip[:5]
        source, refused = 3, None
        while refused is None and source < 60:
            for _ in range(5):
                sock = connect(endpoint, f"127.0.0.{source}")
                if closed_within(sock, 0.3):
                    refused = sock
                    break
                held.append(sock)
            source += 1
        assert refused is not None  # the node's total reached max.connections
        print(f"max.connections=40: {len(held)} attacker connections held, the next one closed")
        assert len(held) <= 40
        assert client.produce([b"during"], -1) >= 0  # open connections, peers' too, carry on
        for sock in held + [refused]:
            sock.close()
        client.close()
        time.sleep(0.5)
        assert cluster.leader() == (leader, epoch)  # no election while the node was full
        after = MetadataClient(endpoint, deadline_s=60)
        assert after.produce([b"after"], -1) >= 0
        after.close()
