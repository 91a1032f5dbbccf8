"""``kraftwire produce``, ``consume`` and ``quorum`` as Kafka's console tools behave, on a real local
quorum: ``--max-records N`` prints exactly N records (it printed whole fetches: 5 gave 103); without
``--from-beginning`` consume starts at the end (it read from 0, so the flag did nothing); the pair
``--from-beginning --offset`` is refused (``--offset`` was dropped silently); and
``--bootstrap-controller`` takes a comma-separated list, moving on when a controller is down (the list
was read as one host name)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from runtime_settings import formatted_cluster
from kraftwire.node.runtime.local_cluster import free_ports
from kraftwire.node.runtime.producer import MetadataClient

pytestmark = pytest.mark.timeout(240)


def kraftwire(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kraftwire", *args],
        capture_output=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    """A running 3-node quorum holding 120 records in 12 batches ("r000" ..), and its offsets."""
    with formatted_cluster(tmp_path_factory.mktemp("client-cli") / "cluster") as cluster:
        cluster.start_all()
        cluster.wait_for_leader()
        client = MetadataClient(cluster.endpoints[1], deadline_s=30)
        for batch in range(12):
            client.produce([f"r{batch * 10 + i:03d}".encode() for i in range(10)], -1)
        records, offset = [], 0
        while len(records) < 120:
            got, offset = client.fetch_committed(offset)
            records.extend(got)
        client.close()
        yield cluster, records


def bootstrap(cluster, node: int = 1) -> str:
    return f"127.0.0.1:{cluster.endpoints[node].port}"


def test_max_records_stops_after_exactly_that_many(quorum):
    cluster, records = quorum
    done = kraftwire(
        "consume", "--bootstrap-controller", bootstrap(cluster), "--from-beginning",
        "--max-records", "5",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [b"r000", b"r001", b"r002", b"r003", b"r004"]
    offset = records[50][0]
    done = kraftwire(
        "consume", "--bootstrap-controller", bootstrap(cluster), "--offset", str(offset),
        "--max-records", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [records[50][1], records[51][1]]


def test_consume_starts_at_the_end_without_from_beginning(quorum):
    cluster, _ = quorum
    process = subprocess.Popen(
        [sys.executable, "-m", "kraftwire", "consume"]
        + ["--bootstrap-controller", bootstrap(cluster, 2), "--max-records", "1"]
        + ["--timeout-ms", "60000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    writer = MetadataClient(cluster.endpoints[1], deadline_s=30)
    try:
        # New records until the consumer has printed one: whenever it found the end, the first
        # record it prints is one written after it started, never one of the 120 before.
        stop, sent = time.monotonic() + 60, 0
        while process.poll() is None and time.monotonic() < stop:
            writer.produce([f"after-{sent}".encode()], -1)
            sent += 1
            time.sleep(0.3)
        out, err = process.communicate(timeout=30)
    finally:
        writer.close()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == 0, err
    assert len(out.splitlines()) == 1 and out.startswith(b"after-"), out


def test_from_beginning_with_offset_is_refused_in_one_line():
    unused = f"127.0.0.1:{free_ports(1)[0]}"
    done = kraftwire(
        "consume", "--bootstrap-controller", unused, "--from-beginning", "--offset", "5"
    )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr == (
        b"kraftwire consume: Options from-beginning and offset cannot be specified together.\n"
    )


@pytest.mark.parametrize("option", ["--offset=-1", "--max-records=0"])
def test_negative_offset_and_no_records_are_usage_errors(option):
    unused = f"127.0.0.1:{free_ports(1)[0]}"
    done = kraftwire("consume", "--bootstrap-controller", unused, option)
    assert done.returncode == 2 and b"Traceback" not in done.stderr


def test_bootstrap_controller_list_moves_past_a_dead_controller(quorum):
    cluster, _ = quorum
    dead = f"127.0.0.1:{free_ports(1)[0]}"  # nothing listens there: connection refused
    endpoints = f"{dead},{bootstrap(cluster, 3)}"
    done = subprocess.run(
        [sys.executable, "-m", "kraftwire", "produce", "--bootstrap-controller", endpoints],
        input=b"via-list\n",
        capture_output=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    done = kraftwire(
        "consume", "--bootstrap-controller", endpoints, "--from-beginning", "--timeout-ms", "2000"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == b"via-list"
    done = kraftwire("quorum", "describe", "--status", "--bootstrap-controller", endpoints)
    assert done.returncode == 0 and b"LeaderId:" in done.stdout, done.stderr
    leader, _ = cluster.wait_for_leader()  # --linearizable reads from the node that answers
    done = kraftwire(
        "consume", "--bootstrap-controller", f"{dead},{bootstrap(cluster, leader)}",
        "--linearizable", "--from-beginning", "--max-records", "1",
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b"r000\n", done.stderr
