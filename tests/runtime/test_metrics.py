"""Kafka's raft metrics on a running node's Prometheus endpoint (off unless --metrics-port is given)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from kraftwire.node.core.api import QuorumStatus, ReplicaKey, Role
from kraftwire.node.core.values import ReplicaStatus
from kraftwire.node.runtime.local_cluster import free_ports
from kraftwire.node.runtime.metrics import PREFIX, RaftMetrics
from kraftwire.node.runtime.producer import MetadataClient
from kraftwire.node.storage.layout import parse_properties, uuid_to_str

OPERATIONS_DOC = (
    Path(__file__).resolve().parents[2].parent / "shared" / "docs" / "kraft-operations.md"
)
# Kafka's raft-metrics (docs/operations.md §6); the last two exist only while the node leads.
KAFKA_RAFT_METRICS = (
    "current-state current-leader current-vote current-vote-directory-id current-epoch "
    "high-watermark log-end-offset log-end-epoch number-unknown-voter-connections number-of-voters "
    "commit-latency-avg commit-latency-max election-latency-avg election-latency-max "
    "fetch-records-rate append-records-rate poll-idle-ratio-avg"
).split()
LEADER_ONLY = ["number-of-observers", "uncommitted-voter-change"]

pytestmark = pytest.mark.timeout(180)


def scrape(port: int) -> dict[str, str]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {
        line.split(" ")[0]: line.split(" ")[1]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_leader_metrics_on_prometheus_endpoint(cluster):

    port = free_ports(1)[0]
    cluster.start(2)
    cluster.start(3)
    cluster.start(1, "--metrics-port", str(port))
    cluster.wait_for_leader()
    client = MetadataClient(cluster.endpoints[1], deadline_s=30)
    for _ in range(20):
        client.produce([b"m" * 100] * 10, -1)
    client.close()
    stop = time.monotonic() + 30
    while True:
        values = scrape(port)
        if (
            float(values["kafka_server_raft_metrics_high_watermark"]) >= 200
            or time.monotonic() > stop
        ):
            break
        time.sleep(0.3)
    leader = int(float(values["kafka_server_raft_metrics_current_leader"]))
    assert leader in (1, 2, 3)
    assert float(values["kafka_server_raft_metrics_current_epoch"]) >= 1
    assert float(values["kafka_server_raft_metrics_high_watermark"]) >= 200
    assert float(values["kafka_server_raft_metrics_log_end_offset"]) >= 200
    assert float(values["kafka_server_raft_metrics_number_of_voters"]) == 3
    state = next(k for k in values if k.startswith("kafka_server_raft_metrics_current_state"))
    assert (
        state
        == f'kafka_server_raft_metrics_current_state{{state="{"leader" if leader == 1 else "follower"}"}}'
    )
    names = {
        k.split("{")[0][len(PREFIX) :].replace("_", "-") for k in values if k.startswith(PREFIX)
    }
    expected = set(KAFKA_RAFT_METRICS) | (set(LEADER_ONLY) if leader == 1 else set())
    assert names == expected
    assert 0 < float(values[PREFIX + "poll_idle_ratio_avg"]) <= 1
    assert float(values[PREFIX + "log_end_epoch"]) == float(values[PREFIX + "current_epoch"])
    meta = parse_properties(
        (Path(cluster.log_dir(1)) / "meta.properties").read_text(), "meta.properties"
    )
    vote = next(k for k in values if k.startswith(PREFIX + "current_vote_directory_id"))
    if leader == 1:  # a leader reports its own directory id; a follower the one it voted for
        assert vote == f'{PREFIX}current_vote_directory_id{{directory_id="{meta["directory.id"]}"}}'
        assert float(values[PREFIX + "number_of_observers"]) == 0
        assert float(values[PREFIX + "uncommitted_voter_change"]) == 0
    rate = "append_records_rate" if leader == 1 else "fetch_records_rate"
    assert float(values[f"kafka_server_raft_metrics_{rate}"]) > 0
    if leader == 1:
        assert float(values["kafka_server_raft_metrics_commit_latency_max"]) >= 0


def test_metric_names_are_the_ones_kraft_operations_lists():
    if not OPERATIONS_DOC.exists():
        pytest.skip("../shared/docs is not reachable from this checkout")
    section = OPERATIONS_DOC.read_text().split("## 6. Raft metrics", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)`(?:, `-(max)`)?", section, re.M))
    names = set()
    for name, suffix in documented:
        names.add(name)
        if suffix:
            names.add(name.rsplit("-", 1)[0] + "-" + suffix)
    assert names == set(KAFKA_RAFT_METRICS) | set(LEADER_ONLY)


def _status(role: Role, voted: ReplicaKey | None, observers: int = 0) -> QuorumStatus:
    return QuorumStatus(
        role=role,
        epoch=4,
        leader_id=1 if role is Role.LEADER else None,
        voted_key=voted,
        high_watermark=10,
        log_start_offset=0,
        log_end_offset=12,
        kraft_version=1,
        voters=(),
        committed_voters=(),
        voters_offset=-1,
        observer_progress=tuple(
            ReplicaStatus(ReplicaKey(10 + i, None), 12, 0, 0) for i in range(observers)
        ),
    )


def test_leader_only_metrics_and_vote_directory_id():
    own, other = uuid.uuid4(), uuid.uuid4()
    metrics = RaftMetrics(1, own)
    leader = metrics._values(_status(Role.LEADER, ReplicaKey(1, own), 2), time.monotonic(), 4, True)
    assert leader["current-vote-directory-id"] == uuid_to_str(own)
    assert leader["number-of-observers"] == 2 and leader["uncommitted-voter-change"] == 1
    assert leader["log-end-epoch"] == 4
    voter = metrics._values(
        _status(Role.UNATTACHED, ReplicaKey(2, other)), time.monotonic(), 3, False
    )
    assert voter["current-vote"] == 2 and voter["current-vote-directory-id"] == uuid_to_str(other)
    assert "number-of-observers" not in voter and "uncommitted-voter-change" not in voter
    unvoted = metrics._values(_status(Role.UNATTACHED, None), time.monotonic(), 3, False)
    assert unvoted["current-vote-directory-id"] == "AAAAAAAAAAAAAAAAAAAAAA"


def test_poll_idle_ratio_is_the_idle_share_of_the_window():
    metrics = RaftMetrics(1)
    metrics.started = time.monotonic() - 10  # ten seconds of loop time so far
    metrics.on_poll_idle(2.5)
    metrics.on_poll_idle(2.5)
    ratio = metrics._values(_status(Role.FOLLOWER, None), time.monotonic(), 0, False)[
        "poll-idle-ratio-avg"
    ]
    assert 0.49 < ratio <= 0.5


def test_metrics_port_without_the_extra_names_it_in_one_line(tmp_path):
    """prometheus-client hidden (as if the extra was not installed): one line naming the extra, exit 2,
    before the node starts (it printed a 20-line ModuleNotFoundError from inside the running node).
    """
    from runtime_settings import formatted_cluster

    hide_and_run = (
        "import sys; sys.modules['prometheus_client'] = None;"  # import of it raises ImportError
        "from kraftwire.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    port = free_ports(1)[0]
    with formatted_cluster(tmp_path / "cluster", controllers=1) as cluster:
        done = subprocess.run(
            [sys.executable, "-c", hide_and_run, "node", "start"]
            + ["--config", cluster.config_path(1), "--metrics-port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "pip install 'kraftwire[metrics]'" in done.stderr
    assert done.stderr.startswith("kraftwire node start: --metrics-port")
