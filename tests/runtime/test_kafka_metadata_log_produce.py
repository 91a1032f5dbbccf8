"""A node whose log is a Kafka metadata log (its bootstrap checkpoint holds Kafka's metadata.version
FeatureLevelRecord, as Kafka's StorageTool writes it) refuses Produce with POLICY_VIOLATION and a
message that names the reason; ``kraftwire produce`` prints it on one line. One real process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kraftwire.node.core.api import Endpoint
from kraftwire.node.runtime.client_path import KAFKA_METADATA_LOG_REFUSAL
from kraftwire.node.runtime.local_cluster import free_ports
from kraftwire.node.runtime.producer import MetadataClient, ProduceRefused
from runtime_settings import TEST_SETTINGS

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def kafka_formatted_leader(tmp_path):
    """A one-voter quorum formatted with ``--feature metadata.version=33``, leading."""
    port = free_ports(1)[0]
    config = tmp_path / "node1.properties"
    settings = "".join(f"{k}={v}\n" for k, v in TEST_SETTINGS.items())
    config.write_text(
        "node.id=1\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.quorum.voters=1@127.0.0.1:{port}\nmetadata.log.dir={tmp_path / 'log'}\n"
        + settings
    )
    kraftwire = [sys.executable, "-m", "kraftwire"]
    subprocess.run(
        kraftwire
        + ["storage", "format", "-c", str(config), "-t", "MkU3OEVBNTcwNTJENDM2Qg"]
        + ["--feature", "metadata.version=33"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    with open(tmp_path / "node1.log", "wb") as log:
        process = subprocess.Popen(
            kraftwire + ["node", "start", "-c", str(config)], stdout=log, stderr=log
        )
    try:
        yield Endpoint("127.0.0.1", port)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def test_produce_into_a_kafka_metadata_log_is_refused_with_the_reason(kafka_formatted_leader):
    client = MetadataClient(kafka_formatted_leader, deadline_s=30)
    try:
        with pytest.raises(ProduceRefused) as refused:
            client.produce([b"not a metadata record"])
    finally:
        client.close()
    assert str(refused.value) == f"produce failed with error 44: {KAFKA_METADATA_LOG_REFUSAL}"


def test_the_produce_command_prints_the_refusal_on_one_line(kafka_formatted_leader):
    endpoint = f"{kafka_formatted_leader.host}:{kafka_formatted_leader.port}"
    done = subprocess.run(
        [sys.executable, "-m", "kraftwire", "produce", "--bootstrap-controller", endpoint]
        + ["--count", "1"],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode != 0
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "Kafka metadata log" in lines[0], lines
