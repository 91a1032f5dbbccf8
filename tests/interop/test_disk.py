"""Disk compatibility: a directory formatted by Kafka's StorageTool runs a kraftwire node, and one
formatted by ``kraftwire storage format`` runs a Kafka controller (meta.properties, the bootstrap
checkpoint with the voters, and the quorum-state each kind then writes)."""

from __future__ import annotations

import json

import pytest

from kafka_jars import METADATA_QUORUM, run_tool
from quorum import MixedQuorum, kraftwire_cli, read_meta

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("formatter, runner", [("kafka", "kraftwire"), ("kraftwire", "kafka")])
def test_one_kind_formats_the_other_runs(tmp_path, formatter, runner):
    quorum = MixedQuorum(tmp_path, {1: formatter}, dynamic=True)
    quorum.format()
    meta = read_meta(quorum.log_dir(1))
    assert meta["cluster.id"] == quorum.cluster_id and meta["node.id"] == "1"
    quorum.hand_over(1, runner)
    try:
        quorum.start(1)
        leader, epoch, _ = quorum.wait_for_leader(timeout_s=90)
        assert leader == 1 and epoch >= 1
        # The voter set the formatter wrote is what the runner serves, directory id included.
        described = kraftwire_cli(
            "quorum", "describe", "--bootstrap-controller", quorum.endpoint(1), "--status", "--json"
        )
        status = json.loads(described.stdout)
        voters = status["CurrentVoters"] if "CurrentVoters" in status else status["currentVoters"]
        assert [(v["id"], v["directoryId"]) for v in voters] == [
            (1, quorum.members[1].directory_id)
        ]
        kafka_view = run_tool(
            METADATA_QUORUM, "--bootstrap-controller", quorum.endpoint(1), "describe", "--status"
        ).stdout
        assert f"ClusterId:              {quorum.cluster_id}" in kafka_view
        assert (quorum.partition_dir(1) / "quorum-state").is_file()
    finally:
        quorum.stop_all()
