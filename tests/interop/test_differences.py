"""Behaviours where kraftwire once differed from Apache Kafka, each pinned against a real Kafka process
(the release each follows is named). The voter-change answers (ErrorMessage null on success, as
Kafka 4.4.0 answers; 4.0.x answered "NONE") are checked in test_tools.py, where both kinds answer them.
"""

from __future__ import annotations

import json
import time

import pytest

from kafka_jars import CONFIG_COMMAND, run_tool
from quorum import MixedQuorum, kraftwire_cli, wait_until

pytestmark = pytest.mark.timeout(240)

# What Kafka's own client does in the same place: it waits controller.quorum.retry.backoff.ms (20 ms by
# default) after a NOT_LEADER_OR_FOLLOWER that names no leader, and one request is in flight per
# connection, so 30-40 Fetch/s were seen from it; kraftwire once sent up to 1,378/s.
MOST_FETCHES_PER_SECOND = 60


def fetches_to(capture, port: int) -> list[float]:
    """The times (s) of the Fetch requests the capture saw go to ``port``."""
    rows = kraftwire_cli("decode", str(capture), "--format", "jsonl").stdout.splitlines()
    times = []
    for line in rows:
        row = json.loads(line)
        if row["api_name"] == "Fetch" and row["server_port"] == port and row["request_ts"]:
            times.append(row["request_ts"])
    return times


def test_fetch_to_a_leaderless_kafka_voter_backs_off(tmp_path):
    """A kraftwire observer whose only reachable voter (a Kafka controller that cannot win an
    election alone) answers NOT_LEADER_OR_FOLLOWER with no leader keeps to Kafka's pace."""
    quorum = MixedQuorum(
        tmp_path, {1: "kafka", 2: "kafka"}, dynamic=False, observers={3: "kraftwire"}
    )
    quorum.format()
    capture = tmp_path / "observer.pcapng"
    try:
        quorum.start(1)  # voter 2 never starts: no election can succeed
        quorum.start(3, "--capture", str(capture))
        wait_until(lambda: capture.exists() and capture.stat().st_size > 4096, 60, "Fetch traffic")
        time.sleep(6)
        quorum.kill(3)
    finally:
        quorum.stop_all()
    times = fetches_to(capture, quorum.members[1].port)
    assert len(times) >= 3, "the observer sent (almost) no Fetch"
    span_s = max(1.0, _seconds(times[-1]) - _seconds(times[0]))
    rate = len(times) / span_s
    assert rate <= MOST_FETCHES_PER_SECOND, f"{len(times)} Fetch in {span_s:.1f} s: {rate:.0f}/s"


def _seconds(timestamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(timestamp).timestamp()


# Settings whose values name the node itself (its id, its listener, its directory): they differ
# between any two nodes, whatever their kind.
PER_NODE = (
    "listeners",
    "advertised.listeners",
    "controller.quorum.bootstrap.servers",
    "metadata.log.dir",
    "log.dirs",
)


# kraftwire's snapshots hold the whole history (Kafka's a compact image), so it writes them only when
# these are set: described with no value, where Kafka lists its defaults (README, differences).
OFF_UNLESS_SET = (
    "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.max.snapshot.interval.ms",
)


def config_lines(quorum: MixedQuorum, node: int) -> dict[str, str]:
    """ConfigCommand --describe --all of a controller, as Kafka 4.4.0's tool prints it: key -> line."""
    out = run_tool(
        CONFIG_COMMAND,
        "--bootstrap-controller",
        quorum.bootstrap(),
        "--describe",
        "--entity-type",
        "brokers",
        "--entity-name",
        str(node),
        "--all",
    ).stdout.splitlines()
    assert out[0] == f"All configs for broker {node} are:", out[:2]
    return {line.strip().split("=", 1)[0]: line.strip() for line in out[1:]}


def test_describe_configs_is_served_as_kafka_controllers_serve_it(tmp_path):
    """Kafka's Admin (ConfigCommand) describes a kraftwire controller as it describes a Kafka one: every
    setting kraftwire lists, Kafka's controller lists with the same value, sensitivity and synonyms
    (the static settings both files hold, and Kafka's defaults for the rest). Each kind runs alone:
    in a Kafka-led quorum the admin client could not reach a kraftwire controller, which does not
    register itself with the active controller (see the README's list of differences)."""
    lines = {}
    for kind in ("kafka", "kraftwire"):
        quorum = MixedQuorum(tmp_path / kind, {1: kind}, dynamic=True)
        quorum.format()
        try:
            quorum.start_all()
            quorum.wait_for_leader(timeout_s=90)
            lines[kind] = config_lines(quorum, 1)
        finally:
            quorum.stop_all()
    kafka, ours = lines["kafka"], lines["kraftwire"]
    shared = [
        key
        for key in ours
        if key not in PER_NODE and key not in OFF_UNLESS_SET and not key.startswith("kraftwire.")
    ]
    assert len(shared) >= 10, ours
    assert {key: ours[key] for key in shared} == {key: kafka.get(key) for key in shared}
