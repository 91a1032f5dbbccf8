"""The core's Config for a node: the voters and kraft.version come from its settings and from what its
log directory was formatted with (no process, no socket: a formatted directory and the function)."""

from __future__ import annotations

from pathlib import Path

from kraftwire.node.core.api import Endpoint, ReplicaKey, VoterSpec
from kraftwire.node.runtime import config_from_properties
from kraftwire.node.runtime.core_config import core_config
from kraftwire.node.storage import format_directory, open_directory, random_uuid, uuid_to_str

CLUSTER = uuid_to_str(random_uuid())
NODE = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "CONTROLLER://127.0.0.1:19093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.election.timeout.ms": "1234",
}
STATIC = {**NODE, "controller.quorum.voters": "1@127.0.0.1:19093,2@127.0.0.1:19094"}
DYNAMIC = {**NODE, "controller.quorum.bootstrap.servers": "127.0.0.1:19093"}


def configured(tmp_path: Path, settings: dict[str, str], kraft_version: int, voters=()):
    log_dir = str(tmp_path / "log")
    format_directory(log_dir, CLUSTER, 1, kraft_version, voters)
    node = config_from_properties({**settings, "metadata.log.dir": log_dir})
    storage = open_directory(log_dir)
    try:
        return storage.meta, core_config(node, storage, 5000)
    finally:
        storage.close()


def test_a_static_quorum_starts_from_its_configured_voters_at_kraft_version_0(tmp_path):
    meta, config = configured(tmp_path, STATIC, 0)
    assert [(v.key, v.listeners) for v in config.voters] == [
        (ReplicaKey(1, None), {"CONTROLLER": Endpoint("127.0.0.1", 19093)}),
        (ReplicaKey(2, None), {"CONTROLLER": Endpoint("127.0.0.1", 19094)}),
    ]
    assert config.kraft_version == 0
    assert (config.node_id, config.cluster_id, config.directory_id) == (
        1,
        CLUSTER,
        meta.directory_id,
    )
    assert (config.start_ms, config.election_timeout_ms) == (5000, 1234)


def test_a_dynamic_quorum_starts_from_the_bootstrap_voters(tmp_path):
    me = VoterSpec(ReplicaKey(1, random_uuid()), {"CONTROLLER": Endpoint("127.0.0.1", 19093)})
    _, config = configured(tmp_path, DYNAMIC, 1, [me])
    assert [v.key for v in config.voters] == [me.key]
    assert config.kraft_version == 1


def test_a_dynamic_quorum_without_bootstrap_voters_still_runs_kraft_version_1(tmp_path):
    _, config = configured(tmp_path, DYNAMIC, 0)
    assert (list(config.voters), config.kraft_version) == ([], 1)


def test_bootstrap_voters_win_over_configured_static_ones(tmp_path):
    me = VoterSpec(ReplicaKey(1, random_uuid()), {"CONTROLLER": Endpoint("127.0.0.1", 19093)})
    _, config = configured(tmp_path, STATIC, 1, [me])
    assert ([v.key for v in config.voters], config.kraft_version) == ([me.key], 1)
