"""Kafka's tools against kraftwire and kraftwire's against Kafka: MetadataQuorumCommand's describe
output equals ``kraftwire quorum describe``'s for the same quorum (timestamps masked), add-controller
and remove-controller work through either tool against a kraftwire-led and a Kafka-led dynamic quorum,
and DumpLogSegments and ``kraftwire dump-log`` print the same batches for either kind's segments and
snapshots."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_jars import DUMP_LOG, METADATA_QUORUM, run_tool
from kraftwire.node.core.api import Endpoint
from kraftwire.node.runtime.admin import leader_call
from kraftwire.node.runtime.admin import add_raft_voter_request, remove_raft_voter_request
from kraftwire.node.runtime.config import load_config, parse_endpoint
from kraftwire.node.storage import uuid_from_str
from kraftwire.node.storage.layout import read_meta_properties
from quorum import MixedQuorum, kraftwire_cli, wait_until

pytestmark = pytest.mark.timeout(300)

TIMESTAMP = re.compile(r"\b\d{13}\b")  # milliseconds since the epoch, in both tools' output


def kafka_describe(quorum: MixedQuorum, what: str) -> str:
    return run_tool(
        METADATA_QUORUM, "--bootstrap-controller", quorum.bootstrap(), "describe", what
    ).stdout


def kraftwire_describe(quorum: MixedQuorum, what: str) -> str:
    return kraftwire_cli(
        "quorum", "--bootstrap-controller", quorum.bootstrap(), "describe", what
    ).stdout


def status_fields(text: str, moving: bool) -> dict[str, str]:
    """The --status lines as a dict; ``moving`` masks what a Kafka leader's idle writes advance."""
    fields = dict(re.split(r":\s+", line, maxsplit=1) for line in text.strip().splitlines())
    for name in ("MaxFollowerLagTimeMs",) + (("HighWatermark", "MaxFollowerLag") if moving else ()):
        fields[name] = "masked"
    return fields


def replication_rows(text: str, moving: bool) -> list[dict[str, str]]:
    lines = [line.split() for line in text.strip().splitlines()]
    header, rows = lines[0], [dict(zip(lines[0], row)) for row in lines[1:]]
    assert header == [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    for row in rows:
        row["LastFetchTimestamp"] = TIMESTAMP.sub("T", row["LastFetchTimestamp"])
        row["LastCaughtUpTimestamp"] = TIMESTAMP.sub("T", row["LastCaughtUpTimestamp"])
        if moving:
            row["LogEndOffset"] = row["Lag"] = "masked"
    return rows


def assert_same_describe(quorum: MixedQuorum, moving: bool) -> None:
    for what in ("--status", "--replication"):
        ours, theirs = kraftwire_describe(quorum, what), kafka_describe(quorum, what)
        if what == "--status":
            assert status_fields(ours, moving) == status_fields(theirs, moving), (ours, theirs)
        else:
            assert replication_rows(ours, moving) == replication_rows(theirs, moving), (
                ours,
                theirs,
            )


def voters(quorum: MixedQuorum) -> list[int]:
    answer = quorum.describe()
    if answer is None:
        return []
    return sorted(v.replica_id for v in answer.topics[0].partitions[0].current_voters)


def add_with_kafka(quorum: MixedQuorum, node: int) -> None:
    run_tool(
        METADATA_QUORUM,
        "--bootstrap-controller",
        quorum.bootstrap(),
        "--command-config",
        str(quorum.config_path(node)),
        "add-controller",
    )


def add_with_kraftwire(quorum: MixedQuorum, node: int) -> None:
    """The AddRaftVoter kraftwire's tool sends; a success names no error message (see below)."""
    config = load_config(str(quorum.config_path(node)))
    directory = read_meta_properties(config.log_dir).directory_id
    answer = leader_call(
        bootstrap(quorum), add_raft_voter_request(node, directory, config.listeners)
    )
    assert answer.error_message is None, answer


def remove_with_kafka(quorum: MixedQuorum, node: int) -> None:
    run_tool(
        METADATA_QUORUM,
        "--bootstrap-controller",
        quorum.bootstrap(),
        "remove-controller",
        "--controller-id",
        str(node),
        "--controller-directory-id",
        quorum.members[node].directory_id,
    )


def remove_with_kraftwire(quorum: MixedQuorum, node: int) -> None:
    directory = uuid_from_str(quorum.members[node].directory_id)
    answer = leader_call(bootstrap(quorum), remove_raft_voter_request(node, directory))
    # A completed voter change answers ErrorMessage null, as Kafka 4.4.0 does (4.0.x said "NONE").
    assert answer.error_message is None, answer


def bootstrap(quorum: MixedQuorum) -> list[Endpoint]:
    return [parse_endpoint(e) for e in quorum.bootstrap().split(",")]


def batch_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("baseOffset:")]


def assert_same_batches(path: Path) -> int:
    """Both dump tools print the same batch lines for ``path``; how many batches."""
    theirs = run_tool(DUMP_LOG, "--cluster-metadata-decoder", "--files", str(path)).stdout
    ours = kraftwire_cli("dump-log", str(path)).stdout
    assert batch_lines(ours) == batch_lines(theirs), path
    assert batch_lines(ours), f"no batch in {path}"
    return len(batch_lines(ours))


def dump_every_file(quorum: MixedQuorum) -> int:
    batches = 0
    for node in quorum.members:
        directory = quorum.partition_dir(node)
        for path in sorted(directory.glob("*.log")) + sorted(directory.glob("*.checkpoint")):
            batches += assert_same_batches(path)
    return batches


@pytest.mark.parametrize(
    "leaders, joiner, add, remove",
    [
        # A kraftwire-led quorum: Kafka's tool adds a Kafka controller, kraftwire's removes it.
        ("kraftwire", "kafka", add_with_kafka, remove_with_kraftwire),
        # A Kafka-led quorum: kraftwire's tool adds a kraftwire node, Kafka's removes it.
        ("kafka", "kraftwire", add_with_kraftwire, remove_with_kafka),
    ],
    ids=["kraftwire-led", "kafka-led"],
)
def test_tools_on_either_leader(tmp_path, leaders, joiner, add, remove):
    voters_kind = {1: leaders, 2: leaders} if leaders == "kraftwire" else {1: leaders}
    joining = max(voters_kind) + 1
    quorum = MixedQuorum(tmp_path, voters_kind, dynamic=True, observers={joining: joiner})
    quorum.format()
    try:
        quorum.start_all()
        quorum.wait_for_leader(timeout_s=90, kind=leaders)
        wait_until(lambda: observers(quorum) == [joining], 60, "the joiner fetching as an observer")
        assert_same_describe(quorum, moving=leaders == "kafka")

        add(quorum, joining)
        wait_until(lambda: voters(quorum) == sorted(voters_kind) + [joining], 60, "voter added")
        assert_same_describe(quorum, moving=leaders == "kafka")

        remove(quorum, joining)
        wait_until(lambda: voters(quorum) == sorted(voters_kind), 60, "voter removed")
        quorum.stop_all()
        assert dump_every_file(quorum) > 0
    finally:
        quorum.stop_all()


def observers(quorum: MixedQuorum) -> list[int]:
    answer = quorum.describe()
    if answer is None:
        return []
    return sorted(o.replica_id for o in answer.topics[0].partitions[0].observers)
