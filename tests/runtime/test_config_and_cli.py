"""Properties files and the storage/node commands: bad settings are named and stop start-up."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kraftwire.node.runtime.config import ConfigError, config_from_properties, load_config

BASE = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "CONTROLLER://127.0.0.1:19093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.bootstrap.servers": "127.0.0.1:19093",
    "metadata.log.dir": "/tmp/x",
}


def kraftwire(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "kraftwire", *args],
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
    )


def test_defaults_and_kafka_names():
    config = config_from_properties({**BASE, "controller.quorum.fetch.timeout.ms": "3000"})
    assert (
        config.node_id == 1
        and config.fetch_timeout_ms == 3000
        and config.election_timeout_ms == 1000
    )
    assert config.listener_name == "CONTROLLER" and config.bootstrap_servers[0].port == 19093
    static = config_from_properties(
        {
            **{k: v for k, v in BASE.items() if "bootstrap" not in k},
            "controller.quorum.voters": "1@127.0.0.1:19093,2@h:2",
        }
    )
    assert sorted(static.voters) == [1, 2]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"log.retention.hours": "1"}, "unknown setting 'log.retention.hours'"),
        ({"node.id": "-1"}, "invalid node.id"),
        (
            {"controller.quorum.election.timeout.ms": "soon"},
            "invalid controller.quorum.election.timeout.ms",
        ),
        ({"process.roles": "broker,controller"}, "process.roles must be 'controller'"),
        ({"controller.listener.names": "OTHER"}, "not in listeners"),
        ({"controller.quorum.voters": "1@127.0.0.1:19093"}, "exactly one of"),
        ({"listeners": "CONTROLLER://nohostport"}, "invalid listeners"),
        (
            {"controller.quorum.auto.join.enable": "yes"},
            "invalid controller.quorum.auto.join.enable",
        ),
    ],
)
def test_bad_settings_are_named(change, message):
    with pytest.raises(ConfigError, match=message):
        config_from_properties({**BASE, **change}, "node.properties")


def test_node_start_refuses_unknown_setting_in_one_line(tmp_path):
    path = tmp_path / "bad.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in {**BASE, "num.io.threads": "8"}.items()))
    result = kraftwire("node", "start", "--config", str(path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"kraftwire node start: {path}: unknown setting 'num.io.threads'"
    ]


def test_storage_format_and_refusals(tmp_path):
    path = tmp_path / "n.properties"
    props = {**BASE, "metadata.log.dir": str(tmp_path / "meta")}
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    cluster_id = kraftwire("storage", "random-uuid").stdout.strip()
    assert len(cluster_id) == 22
    missing = kraftwire("storage", "format", "--config", str(path), "--cluster-id", cluster_id)
    assert missing.returncode == 2 and "--standalone" in missing.stderr
    ok = kraftwire(
        "storage", "format", "--config", str(path), "--cluster-id", cluster_id, "--standalone"
    )
    assert ok.returncode == 0, ok.stderr
    again = kraftwire(
        "storage", "format", "--config", str(path), "--cluster-id", cluster_id, "--standalone"
    )
    assert (
        again.returncode == 1
        and "already formatted" in again.stderr
        and len(again.stderr.splitlines()) == 1
    )
    meta = (tmp_path / "meta" / "meta.properties").read_text()
    assert f"cluster.id={cluster_id}" in meta and "node.id=1" in meta and "version=1" in meta
    dump = kraftwire(
        "dump-log",
        str(
            tmp_path
            / "meta"
            / "__cluster_metadata-0"
            / "00000000000000000000-0000000000.checkpoint"
        ),
    )
    assert "Snapshot end offset: 0, epoch: 0" in dump.stdout and "KRaftVoters" in dump.stdout
    bad_id = kraftwire(
        "storage", "format", "--config", str(path), "--cluster-id", "nope", "--standalone"
    )
    assert bad_id.returncode == 2 and "not a Kafka uuid" in bad_id.stderr


def test_load_config_reads_a_file(tmp_path):
    path = tmp_path / "n.properties"
    path.write_text("# comment\n" + "".join(f"{k} = {v}\n" for k, v in BASE.items()))
    assert load_config(str(path)).log_dir == "/tmp/x"
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(tmp_path / "missing.properties"))


def test_dump_log_reports_torn_tail(tmp_path):
    from kraftwire.node.core.api import LogBatch
    from kraftwire.node.storage import FileLog

    log = FileLog.open(str(tmp_path))
    log.append([LogBatch(0, 1, (b"a", b"b"))])
    log.append([LogBatch(2, 1, (b"c",))])
    log.close()
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(segment.read_bytes()[:-7])
    result = kraftwire("dump-log", str(segment))
    assert result.returncode == 0
    assert "| offset: 1 " in result.stdout and "payload: b" in result.stdout
    assert "invalid bytes at the end of 00000000000000000000.log" in result.stdout
