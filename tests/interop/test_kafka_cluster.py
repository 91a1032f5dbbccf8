"""kraftwire inside a real Kafka cluster: two Kafka controllers and one Kafka broker, with a kraftwire
node that first follows the metadata log as an observer and then joins the quorum as a voter.

Kafka's own clients create a topic and move records through the broker; kraftwire's copy of
``__cluster_metadata`` must then equal the Kafka controllers' batch for batch (offset, epoch, CRC),
and ``kraftwire dump-log --cluster-metadata-decoder`` must print each record line as Kafka's
DumpLogSegments does. As a voter, kraftwire resigns any leadership it wins (it cannot run Kafka's
QuorumController), so a Kafka controller becomes active again and the broker keeps working.
``kraftwire produce`` cannot write into this log. Last, the run's loopback captures (kraftwire's own
``--capture`` and tcpdump's of the Kafka processes' ports) decode with ``kraftwire decode`` and count
the same requests and responses per API as tshark.

One cluster serves the whole module (the tests run in file order: the second adds the observer
of the first as a voter), to keep the interop suite within its time budget.
"""

from __future__ import annotations

import os
import re
import shutil
import time

import pytest

from kafka_cluster import KafkaCluster, elapsed, kraftwire_dump, wait_for
from quorum import kraftwire_cli
from kafka_jars import DUMP_LOG, METADATA_QUORUM, run_tool
from shared import shared_path
from traffic import (
    LoopbackCapture,
    api_counts,
    bad_rows,
    decode_rows,
    schemas_for,
    tshark_counts,
)

pytestmark = pytest.mark.timeout(300)

KRAFTWIRE = 3
TOPIC = "interop"
RECORDS = [f"record-{i}" for i in range(20)]
# kraftwire notices a dead leader and stands long before a Kafka controller does (see
# force_kraftwire_leadership); the Kafka controllers keep the rest of quorum.TIMERS.
QUICK_ELECTIONS = {
    "controller.quorum.fetch.timeout.ms": 500,
    "controller.quorum.election.timeout.ms": 200,
    "controller.quorum.election.backoff.max.ms": 100,
}
PATIENT_ELECTIONS = {"controller.quorum.fetch.timeout.ms": 5000}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("kafka-cluster")
    found = KafkaCluster(
        root,
        {1: "kafka", 2: "kafka"},
        observers={KRAFTWIRE: "kraftwire"},
        kraftwire_extra=QUICK_ELECTIONS,
        kafka_extra=PATIENT_ELECTIONS,
    )
    found.format()
    loopback = None
    if capture_tools_missing() is None:  # else the traffic test says what is missing
        loopback = LoopbackCapture(root / "kafka-links.pcap", found.kafka_ports())
        loopback.start()
    found.loopback = loopback
    try:
        start = time.monotonic()
        found.start_all()
        found.start_broker()
        found.wait_for_leader(timeout_s=90, kind="kafka")
        found.wait_for_broker()
        found.create_topic(TOPIC)
        print(f"cluster up and topic created in {elapsed(start)} s")
        yield found
    finally:
        found.stop_all()
        if loopback is not None:
            loopback.stop()


def observers(cluster: KafkaCluster) -> dict[int, int]:
    answer = cluster.describe()
    if answer is None:
        return {}
    return {o.replica_id: o.log_end_offset for o in answer.topics[0].partitions[0].observers}


def batch_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("baseOffset:")]


def record_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| offset:")]


def last_offset(line: str) -> int:
    return int(re.search(r"lastOffset: (\d+)", line)[1])


def record_offset(line: str) -> int:
    return int(re.search(r"\| offset: (\d+)", line)[1])


def same_batches(cluster: KafkaCluster, kafka_node: int) -> list[str]:
    """kraftwire's copy of the log and a Kafka controller's hold the same batches (offsets, epochs,
    positions, CRCs) up to the smaller end: both keep growing (the active controller writes a
    NoOpRecord every 500 ms). The common batch lines."""
    ours = batch_lines(kraftwire_dump(cluster.segments(KRAFTWIRE)[0]))
    theirs = batch_lines(run_tool(DUMP_LOG, "--files", str(cluster.segments(kafka_node)[0])).stdout)
    end = min(last_offset(ours[-1]), last_offset(theirs[-1]))
    ours = [line for line in ours if last_offset(line) <= end]
    theirs = [line for line in theirs if last_offset(line) <= end]
    assert ours == theirs
    return ours


def test_kraftwire_observer_copies_the_kafka_metadata_log(cluster):
    cluster.produce(TOPIC, RECORDS)
    assert cluster.consume(TOPIC, len(RECORDS)) == RECORDS

    leader, _, high_watermark = cluster.wait_for_leader(kind="kafka")
    wait_for(
        lambda: observers(cluster).get(KRAFTWIRE, -1) >= high_watermark,
        60,
        "the kraftwire observer caught up",
        cluster,
    )
    ours = same_batches(cluster, leader)
    assert len(ours) > 10

    # One segment, both decoders: every record line the same, whatever its type.
    segment = cluster.segments(leader)[0]
    kafka_lines = record_lines(
        run_tool(DUMP_LOG, "--cluster-metadata-decoder", "--files", str(segment)).stdout
    )
    schemas = str(shared_path("kafka-schemas", "metadata"))
    ours_lines = record_lines(
        kraftwire_dump(segment, "--cluster-metadata-decoder", "--schemas", schemas)
    )
    end = min(record_offset(kafka_lines[-1]), record_offset(ours_lines[-1]))
    kafka_lines = [line for line in kafka_lines if record_offset(line) <= end]
    ours_lines = [line for line in ours_lines if record_offset(line) <= end]
    assert ours_lines == kafka_lines
    types = set(re.findall(r'payload: \{"type":"(\w+)"', "\n".join(ours_lines)))
    assert {"REGISTER_BROKER_RECORD", "TOPIC_RECORD", "PARTITION_RECORD"} <= types, types
    assert {"FEATURE_LEVEL_RECORD"} <= types, types
    print(
        f"{len(ours)} batches and {len(ours_lines)} records compared; record types {sorted(types)}"
    )


def voters(cluster: KafkaCluster) -> list[int]:
    answer = cluster.describe()
    if answer is None:
        return []
    return sorted(v.replica_id for v in answer.topics[0].partitions[0].current_voters)


RESIGNED = "resigning the leadership of epoch"


def resignations(cluster: KafkaCluster) -> int:
    return cluster.output(KRAFTWIRE).read_text(errors="replace").count(RESIGNED)


# What a Kafka controller refuses, logged as an error, while it starts or becomes active: retriable.
NOT_YET = ("There is no finalized MetadataVersion", "NotControllerException")


def controller_errors(text: str) -> list[str]:
    """A Kafka controller's ERROR and FATAL lines, but for the requests it refuses while it starts or
    becomes active (the harness's DescribeCluster polls, its own ControllerRegistration): Kafka logs
    those as errors, the retriable exception on the next line."""
    lines = text.splitlines()
    return [
        line
        for i, line in enumerate(lines)
        if ("] ERROR " in line or "] FATAL " in line or "Exiting Kafka" in line)
        and not (i + 1 < len(lines) and any(word in lines[i + 1] for word in NOT_YET))
    ]


def force_kraftwire_leadership(cluster: KafkaCluster) -> None:
    """Stop both Kafka controllers (kill -9) and restart the follower: it comes back following the
    dead leader, grants kraftwire's PreVote and Vote (it has not fetched from that leader since it
    started) and waits its 5 s fetch timeout before standing itself, while kraftwire stands every
    ~0.7 s. (A restarted leader would stand at once.) kraftwire wins, resigns at once (its log line
    is the evidence), and the Kafka controller takes the next epoch; then the old leader restarts.
    """
    before = resignations(cluster)
    leader, _, _ = cluster.wait_for_leader(kind="kafka")
    (follower,) = [n for n in cluster.ids("kafka") if n != leader]
    cluster.kill(leader)
    cluster.kill(follower)
    cluster.start(follower)
    wait_for(lambda: resignations(cluster) > before, 90, "kraftwire leads and resigns", cluster)
    cluster.start(leader)


def test_kraftwire_voter_that_wins_resigns_so_kafka_stays_active(cluster):
    run_tool(
        METADATA_QUORUM,
        "--bootstrap-controller",
        cluster.bootstrap(),
        "--command-config",
        str(cluster.config_path(KRAFTWIRE)),
        "add-controller",
    )
    wait_for(lambda: voters(cluster) == [1, 2, KRAFTWIRE], 60, "kraftwire added", cluster)

    start = time.monotonic()
    force_kraftwire_leadership(cluster)
    leader, _, _ = cluster.wait_for_leader(timeout_s=30, kind="kafka")
    print(f"kraftwire led and resigned; Kafka controller {leader} leads, in {elapsed(start)} s")

    # The active controller serves the broker again: a new topic needs it (CreateTopics goes to it),
    # and the broker takes records for it with acks=all. Not checked: consuming afterwards. A broker
    # whose heartbeat channel reached kraftwire while it led (kraftwire's ApiVersions has no
    # BrokerHeartbeat) may keep failing its heartbeats locally and be fenced by the Kafka controller
    # about 9 s later (broker.session.timeout.ms), with its partitions offline: seen in 1 of 4 runs.
    cluster.create_topic("after-resign")
    cluster.produce("after-resign", RECORDS[:5])
    for node in cluster.ids("kafka"):
        assert controller_errors(cluster.output(node).read_text(errors="replace")) == [], node
    assert sorted(cluster.running()) == [1, 2, KRAFTWIRE]
    # kraftwire's epoch is in every log: its LeaderChange batch, committed before it resigned, which the
    # Kafka controllers replayed; the logs are still the same batch for batch.
    epoch = int(re.findall(rf"{RESIGNED} (\d+)", cluster.output(KRAFTWIRE).read_text())[-1])
    common = same_batches(cluster, leader)
    assert any(f"partitionLeaderEpoch: {epoch} " in line for line in common), epoch


def test_kraftwire_produce_is_refused_by_the_kafka_metadata_quorum(cluster):
    """Nothing but Kafka's controllers may write metadata records: ``kraftwire produce`` gets a
    clear one-line refusal, and the log holds no record that is not a metadata record."""
    leader, _, _ = cluster.wait_for_leader(kind="kafka")
    for node in (leader, KRAFTWIRE):
        result = kraftwire_cli(
            "produce",
            "--bootstrap-controller",
            cluster.endpoint(node),
            "--count",
            "1",
            "--timeout-ms",
            "10000",
            check=False,
        )
        assert result.returncode != 0 and result.stderr.count("\n") == 1, result
        assert "cannot connect" not in result.stderr, result.stderr
        print(f"kraftwire produce to node {node}: {result.stderr.strip()}")
    schemas = str(shared_path("kafka-schemas", "metadata"))
    # kraftwire's copy holds the controllers' batches (the first test): every record decodes.
    text = kraftwire_dump(
        cluster.segments(KRAFTWIRE)[0], "--cluster-metadata-decoder", "--schemas", schemas
    )
    assert "not a metadata record" not in text


def capture_tools_missing() -> str | None:
    for tool in ("tcpdump", "tshark"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/run installs it)"
    if os.geteuid() != 0:
        return "tcpdump needs root to capture on lo"
    return None


def test_captures_decode_and_agree_with_tshark(cluster, tmp_path):
    """The run's loopback traffic: kraftwire's own capture (bundled KRaft codecs) and tcpdump's of
    the Kafka processes' ports (broker APIs too: codecs generated from Kafka's specs of the APIs
    tshark saw) decode with no bad exchange, and every API's request and response counts equal
    tshark's."""
    missing = capture_tools_missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing} (CI must run the traffic checks)", pytrace=False)
        pytest.skip(missing)
    cluster.stop_all()
    cluster.loopback.stop()
    ports = cluster.kafka_ports() + [cluster.members[KRAFTWIRE].port]
    message_dir = shared_path(
        "kafka-schemas", "clients", "src", "main", "resources", "common", "message"
    )
    captures = [(cluster.capture(KRAFTWIRE), False), (cluster.loopback.path, True)]
    for capture, needs_specs in captures:
        theirs = tshark_counts(capture, ports)
        schemas = None
        if needs_specs:
            keys = {key for key, _ in theirs}
            schemas = schemas_for(keys, message_dir, tmp_path / capture.stem)
        rows = decode_rows(capture, ports, schemas)
        assert not bad_rows(rows), bad_rows(rows)[:3]
        ours = api_counts(rows)
        assert ours == theirs, (capture, ours - theirs, theirs - ours)
        assert sum(ours.values()) > 100, capture
        print(
            f"{capture.name}: {len(rows)} exchanges, {sum(ours.values())} PDUs in {len(ours)} "
            f"(API, direction) pairs equal to tshark's"
        )
