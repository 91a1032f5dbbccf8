"""Mixed controller quorums of kraftwire nodes and Apache Kafka's own controllers (QuorumController on
its KafkaRaftClient): a leader is elected, what one kind commits is on every node, kill -9 of a
kraftwire leader and of a Kafka leader is followed by re-election and catch-up, and a Kafka controller
auto-joins a kraftwire-led dynamic quorum. Afterwards every node's log is one log: the same batches by
offset, epoch and CRC."""

from __future__ import annotations

import pytest

from kafka_jars import KAFKA, KAFKA_OLD
from logs import assert_prefixes_of_one_log, log_batches
from quorum import MixedQuorum, wait_until

pytestmark = pytest.mark.timeout(300)


def high_watermark(quorum: MixedQuorum) -> int:
    found = quorum.leader()
    return found[2] if found else -1


def kill_leader_and_recover(quorum: MixedQuorum, kind: str) -> tuple[int, int]:
    """kill -9 the leader (which must be of ``kind``), wait for a new leader in a later epoch that
    commits past what the old one had, restart the killed node; (killed, new leader)."""
    killed, epoch, committed = quorum.wait_for_leader(timeout_s=90, kind=kind)
    quorum.kill(killed)
    new, new_epoch, _ = quorum.wait_for_leader(timeout_s=90, not_in=(killed,))
    assert new_epoch > epoch
    wait_until(lambda: high_watermark(quorum) > committed, 60, "a commit in the new epoch")
    quorum.start(killed)
    return killed, new


def caught_up(quorum: MixedQuorum) -> bool:
    """Every voter and observer has fetched up to the leader's high watermark."""
    answer = quorum.describe()
    if answer is None:
        return False
    partition = answer.topics[0].partitions[0]
    replicas = list(partition.current_voters) + list(partition.observers)
    ids = {r.replica_id for r in replicas}
    return ids == set(quorum.running()) and all(
        r.log_end_offset >= partition.high_watermark for r in replicas
    )


def finish(quorum: MixedQuorum) -> int:
    """Wait for every node to catch up, stop them all, compare their logs; batches shared."""
    wait_until(lambda: caught_up(quorum), 90, "every node caught up")
    committed = high_watermark(quorum)
    quorum.stop_all()
    logs = {node: log_batches(quorum.partition_dir(node)) for node in quorum.members}
    return assert_prefixes_of_one_log(logs, at_least=committed)


@pytest.mark.parametrize("version", [KAFKA, pytest.param(KAFKA_OLD, marks=pytest.mark.old_release)])
def test_two_kraftwire_one_kafka_static_voters(tmp_path, version):
    quorum = MixedQuorum(
        tmp_path, {1: "kraftwire", 2: "kraftwire", 3: "kafka"}, dynamic=False, version=version
    )
    quorum.format()
    try:
        quorum.start_all()
        quorum.wait_for_leader(timeout_s=90)
        # Kill whichever kind leads first, then the other kind's leader if the election moves there.
        first_kind = quorum.kind(quorum.wait_for_leader()[0])
        killed, new = kill_leader_and_recover(quorum, first_kind)
        assert killed != new
        assert finish(quorum) > 0
    finally:
        quorum.stop_all()


def test_one_kraftwire_two_kafka_dynamic_quorum(tmp_path):
    quorum = MixedQuorum(tmp_path, {1: "kraftwire", 2: "kafka", 3: "kafka"}, dynamic=True)
    quorum.format()
    try:
        quorum.start_all()
        # A Kafka leader writes metadata records (registrations, no-ops) that kraftwire replicates.
        leader = quorum.wait_for_leader(timeout_s=90)[0]
        if quorum.kind(leader) == "kraftwire":
            kill_leader_and_recover(quorum, "kraftwire")
        kill_leader_and_recover(quorum, "kafka")
        assert finish(quorum) > 0
    finally:
        quorum.stop_all()


def test_kafka_controller_auto_joins_kraftwire_led_quorum(tmp_path):
    quorum = MixedQuorum(
        tmp_path,
        {1: "kraftwire", 2: "kraftwire"},
        dynamic=True,
        observers={3: "kafka"},
        kafka_extra={"controller.quorum.auto.join.enable": "true"},
    )
    quorum.format()
    try:
        quorum.start_all()
        quorum.wait_for_leader(timeout_s=90, kind="kraftwire")

        def voters():
            answer = quorum.describe()
            return answer and sorted(
                v.replica_id for v in answer.topics[0].partitions[0].current_voters
            )

        wait_until(lambda: voters() == [1, 2, 3], 90, "the Kafka controller joining as a voter")
        kill_leader_and_recover(quorum, "kraftwire")
        assert finish(quorum) > 0
    finally:
        quorum.stop_all()
