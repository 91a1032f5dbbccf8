"""The answers the core builds carry, field for field, what Kafka's KafkaRaftClient puts in the same
answer (issue #10: disagreements found side by side with Kafka's own controllers).

Kafka builds its answers from generated message classes whose unset fields keep the spec's defaults: a
string without a default is "" (not null), an int without one is 0 (not -1). Where a handler sets
nothing, the wire shows those defaults, and so must ours. Each answer is decoded from the bytes of the
request's version, as a peer sees it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import kraft_requests as requests_dsl
from kraft_datadriven import Command
from kraft_harness import Env, _wire
from kraftwire.generated import errors
from kraftwire.node.core.api import METADATA_TOPIC, OutboundResponse, RequestReceived

CLIENT = 9  # a client outside the quorum: its answers are collected, never delivered to a node


class ClientEnv(Env):
    """The transcript cluster, plus an inbox for every answer sent to :data:`CLIENT`."""

    def __init__(self) -> None:
        super().__init__()
        self.inbox: list[Any] = []

    def deliver_one(self, src: int, m: Any, out: list[str]) -> None:
        if isinstance(m, OutboundResponse) and m.destination == CLIENT:
            self.inbox.append(_wire(m.response, m.api_version))
            return
        super().deliver_one(src, m, out)

    def run(self, line: str) -> str:
        name, *rest = line.split()
        args = [a for a in rest if "=" not in a]
        kwargs = dict(a.split("=", 1) for a in rest if "=" in a)
        return self.handle(Command(name, args, kwargs))

    def ask(self, dst: int, api: str, version: int | None = None, **fields: Any) -> Any:
        """Send one request from the client to ``dst``; return its answer if it came at once."""
        req = requests_dsl.build(api, self, dst, CLIENT, {k: str(v) for k, v in fields.items()})
        v = req.HIGHEST_VERSION if version is None else version
        self.injected += 1
        self.step(
            dst, RequestReceived(CLIENT, 200000 + self.injected, v, _wire(req, v), self.now), []
        )
        self.deliver(Command("deliver", [], {"to": str(CLIENT)}), [])
        return self.inbox.pop() if self.inbox else None


@pytest.fixture
def env() -> ClientEnv:
    """Three voters, 1 leading epoch 1 with its first batch committed everywhere."""
    e = ClientEnv()
    e.run("bootstrap 3")
    return e


def _only_partition(resp: Any) -> Any:
    (topic,) = resp.topics
    (part,) = topic.partitions
    return part


# -- DescribeQuorum -------------------------------------------------------------------------------------


def test_describe_quorum_on_a_non_leader_carries_kafka_defaults(env: ClientEnv) -> None:
    """``DescribeQuorumResponse.singletonErrorResponse``: only the index, error code and message are set."""
    resp = env.ask(2, "DescribeQuorum", version=2)
    assert (resp.error_code, resp.error_message, resp.nodes) == (0, "", [])
    assert resp.topics[0].topic_name == METADATA_TOPIC
    part = _only_partition(resp)
    assert part.error_code == errors.NOT_LEADER_OR_FOLLOWER
    assert part.error_message == errors.message(errors.NOT_LEADER_OR_FOLLOWER)
    assert (part.partition_index, part.leader_id, part.leader_epoch, part.high_watermark) == (
        0,
        0,
        0,
        0,
    )
    assert (part.current_voters, part.observers) == ([], [])


def test_describe_quorum_of_an_unknown_partition_echoes_what_was_asked(env: ClientEnv) -> None:
    """``DescribeQuorumRequest.getPartitionLevelErrorResponse``: each topic and partition asked for, by
    the request's names, with UNKNOWN_TOPIC_OR_PARTITION and its message; nothing else set."""
    resp = env.ask(1, "DescribeQuorum", version=2, topic="other", partition=3)
    assert (resp.error_code, resp.error_message) == (0, "")
    assert resp.topics[0].topic_name == "other"
    part = _only_partition(resp)
    assert (part.partition_index, part.error_code) == (3, errors.UNKNOWN_TOPIC_OR_PARTITION)
    assert part.error_message == errors.message(errors.UNKNOWN_TOPIC_OR_PARTITION)
    assert (part.leader_id, part.leader_epoch, part.high_watermark) == (0, 0, 0)


def test_describe_quorum_on_the_leader_has_empty_messages(env: ClientEnv) -> None:
    resp = env.ask(1, "DescribeQuorum", version=2)
    part = _only_partition(resp)
    assert (resp.error_message, part.error_message) == ("", "")
    assert (part.error_code, part.leader_id, part.leader_epoch, part.high_watermark) == (0, 1, 1, 3)


# -- Fetch and FetchSnapshot ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "fields", "error"),
    [
        (2, {}, errors.NOT_LEADER_OR_FOLLOWER),
        (1, {"epoch": 0}, errors.FENCED_LEADER_EPOCH),
        (1, {"epoch": 5}, errors.UNKNOWN_LEADER_EPOCH),
        (1, {"offset": -1}, errors.INVALID_REQUEST),
    ],
)
def test_fetch_error_answers_have_no_high_watermark(
    env: ClientEnv, node: int, fields: dict, error: int
) -> None:
    """``buildEmptyFetchResponse(..., Optional.empty())``: HighWatermark -1 even where one is known."""
    resp = env.ask(node, "Fetch", replica=3, **fields)
    part = resp.responses[0].partitions[0]
    assert part.error_code == error
    assert part.high_watermark == -1
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (1, 1)
    assert part.records == b""


def test_a_parked_fetch_answered_on_resignation_has_no_high_watermark(env: ClientEnv) -> None:
    assert env.ask(1, "Fetch", replica=2, offset=3, last_epoch=1, max_wait=5000) is None  # parked
    env.run("shutdown 1")
    env.run("tick 1")  # the poll after the shutdown call resigns
    env.deliver(Command("deliver", [], {"to": str(CLIENT)}), [])
    resp = env.inbox.pop()
    part = resp.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark) == (errors.NOT_LEADER_OR_FOLLOWER, -1)


@pytest.mark.parametrize(
    ("node", "fields", "error"),
    [
        (2, {}, errors.NOT_LEADER_OR_FOLLOWER),
        (1, {"snapshot": "3,1"}, errors.SNAPSHOT_NOT_FOUND),
        (1, {"snapshot": "0,0"}, errors.SNAPSHOT_NOT_FOUND),
    ],
)
def test_fetch_snapshot_errors_leave_the_snapshot_id_unset(
    env: ClientEnv, node: int, fields: dict, error: int
) -> None:
    """Kafka sets only the error and the current leader (``addQuorumLeader``): SnapshotId stays (0, 0)."""
    resp = env.ask(node, "FetchSnapshot", **fields)
    part = _only_partition(resp)
    assert part.error_code == error
    assert (part.snapshot_id.end_offset, part.snapshot_id.epoch) == (0, 0)
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (1, 1)
    assert (part.size, part.position) == (0, 0)


def test_fetch_snapshot_of_an_unknown_partition_names_it_and_no_leader(env: ClientEnv) -> None:
    resp = env.ask(1, "FetchSnapshot", topic="other", partition=4)
    assert resp.topics[0].name == "other"
    part = _only_partition(resp)
    assert (part.index, part.error_code) == (4, errors.UNKNOWN_TOPIC_OR_PARTITION)
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (0, 0)


# -- AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter -----------------------------------------------------


@pytest.mark.parametrize("api", ["AddRaftVoter", "RemoveRaftVoter"])
def test_voter_change_on_a_non_leader_has_an_empty_message(env: ClientEnv, api: str) -> None:
    """KafkaRaftClient answers the leader-only check with ``new ...ResponseData().setErrorCode(...)``."""
    resp = env.ask(2, api, voter=3)
    assert (resp.error_code, resp.error_message) == (errors.NOT_LEADER_OR_FOLLOWER, "")


@pytest.mark.parametrize("api", ["AddRaftVoter", "RemoveRaftVoter"])
def test_voter_change_with_another_cluster_id_names_both(env: ClientEnv, api: str) -> None:
    resp = env.ask(1, api, voter=3, cluster="other")
    assert resp.error_code == errors.INCONSISTENT_CLUSTER_ID
    assert resp.error_message == 'The given id "other" doesn\'t match the cluster id "cluster"'


@pytest.mark.parametrize(
    ("api", "text"),
    [
        ("AddRaftVoter", "Add voter request didn't include a valid voter"),
        ("RemoveRaftVoter", "Remove voter request didn't include a valid voter"),
    ],
)
def test_voter_change_without_a_valid_voter_says_so(env: ClientEnv, api: str, text: str) -> None:
    resp = env.ask(1, api, voter=4, voter_dir=0)
    assert (resp.error_code, resp.error_message) == (errors.INVALID_REQUEST, text)


def test_voter_change_errors_carry_kafkas_texts(env: ClientEnv) -> None:
    resp = env.ask(1, "AddRaftVoter", voter=2)
    assert resp.error_code == errors.DUPLICATE_VOTER
    assert resp.error_message.startswith(
        "The voter id for ReplicaKey(id=2, directoryId=AAAAAAAAAAAAAAAAAAAAAg) "
    )
    resp = env.ask(1, "RemoveRaftVoter", voter=2, voter_dir=22)
    assert resp.error_code == errors.VOTER_NOT_FOUND
    assert resp.error_message.startswith(
        "Cannot remove voter ReplicaKey(id=2, directoryId=AAAAAAAAAAAAAAAAAAAAFg) "
    )
    assert env.ask(1, "AddRaftVoter", voter=4) is None  # probing node 4: the one slot is taken
    resp = env.ask(1, "RemoveRaftVoter", voter=3)
    assert resp.error_code == errors.REQUEST_TIMED_OUT
    assert (
        resp.error_message
        == "Request timed out waiting for leader to handle previous voter change request"
    )


def test_voter_change_expiry_carries_the_default_message(env: ClientEnv) -> None:
    assert env.ask(1, "AddRaftVoter", voter=4) is None
    env.run("tick 2000")
    env.deliver(Command("deliver", [], {"to": str(CLIENT)}), [])
    resp = env.inbox.pop()
    assert (resp.error_code, resp.error_message) == (
        errors.REQUEST_TIMED_OUT,
        "The request timed out.",
    )


def test_a_committed_removal_is_answered_with_a_null_message(env: ClientEnv) -> None:
    """Kafka 4.4.0's ``RaftUtil.removeVoterResponse(Errors.NONE, null)`` leaves ErrorMessage null
    (4.0.x set ``Errors.NONE.message()``, "NONE"; kraftwire follows 4.4.0)."""
    assert env.ask(1, "RemoveRaftVoter", voter=3) is None
    env.run("stabilize")
    resp = env.inbox.pop()
    assert (resp.error_code, resp.error_message) == (errors.NONE, None)


def test_a_committed_addition_is_answered_with_a_null_message(env: ClientEnv) -> None:
    """Kafka 4.4.0's ``RaftUtil.addVoterResponse(Errors.NONE, null)``: ErrorMessage null."""
    env.run("add-observer 4")
    env.run("stabilize")
    assert env.ask(1, "AddRaftVoter", voter=4) is None
    env.run("stabilize")
    resp = env.inbox.pop()
    assert (resp.error_code, resp.error_message) == (errors.NONE, None)


def test_update_voter_without_a_known_leader_leaves_host_and_port_unset() -> None:
    """``RaftUtil.updateVoterResponse`` sets Host and Port only from a known leader endpoint: else "" and 0."""
    e = ClientEnv()
    e.run("add-nodes 3")
    resp = e.ask(2, "UpdateRaftVoter", voter=2, epoch=0)
    assert resp.error_code == errors.NOT_LEADER_OR_FOLLOWER
    leader = resp.current_leader
    assert (leader.leader_id, leader.leader_epoch, leader.host, leader.port) == (-1, 0, "", 0)


def test_every_error_the_core_names_has_kafkas_default_message() -> None:
    core = Path(__file__).resolve().parents[2] / "node" / "core"
    named = {n for p in core.glob("*.py") for n in re.findall(r"\berrors\.([A-Z_]+)", p.read_text())}
    assert len(named) > 10
    for name in sorted(named):
        code = getattr(errors, name)
        text = errors.message(code)
        assert text == name if code == errors.NONE else text.endswith("."), (name, text)
