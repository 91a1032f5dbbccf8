"""Kafka's raft metrics on a running node's Prometheus endpoint (off unless --metrics-port is given)."""

from __future__ import annotations

import time
import urllib.request

import pytest

from kraftwire.node.runtime.local_cluster import free_ports
from kraftwire.node.runtime.producer import MetadataClient

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
    rate = "append_records_rate" if leader == 1 else "fetch_records_rate"
    assert float(values[f"kafka_server_raft_metrics_{rate}"]) > 0
    if leader == 1:
        assert float(values["kafka_server_raft_metrics_commit_latency_max"]) >= 0
