"""``kraftwire quorum``'s output is what Kafka's own ``kafka-metadata-quorum.sh`` (MetadataQuorumCommand)
prints for the same DescribeQuorum answer.

The expected texts below were checked against Kafka's tool run on the same quorums (a static quorum whose
voters have no directory id, a dynamic one with an observer); the rules they pin are Kafka's: labels
padded to 24 columns, ``"directoryId": null`` for the zero uuid, endpoints from the response's ``nodes``
for voters and observers alike, the replication table's tab-terminated padded cells, leader first.
"""

from __future__ import annotations

import uuid

import pytest

from kraftwire.generated import describe_quorum_response as dq
from kraftwire.node.core.api import Endpoint
from kraftwire.node.runtime.admin import NoLeaderYet, first_answer
from kraftwire.node.runtime.cli_quorum import (
    RelativeTimeError,
    until_a_leader_answers,
    render_status,
    render_table,
    replication_rows,
    status_fields,
)
from kraftwire.node.runtime.client import ClientError
from kraftwire.node.storage.layout import uuid_from_str

DIR_1 = "vL43avpJRtG5YCKTUbJL2w"
DIR_5 = "vGxCL0ZzRNq1ArTcUxRcLA"


def replica(node_id: int, directory: str | None, end: int, fetch: int, caught_up: int):
    return dq.ReplicaState(
        replica_id=node_id,
        replica_directory_id=uuid_from_str(directory) if directory else uuid.UUID(int=0),
        log_end_offset=end,
        last_fetch_timestamp=fetch,
        last_caught_up_timestamp=caught_up,
    )


def response(voters, observers=(), leader_id=2, endpoints=(1, 2, 5)):
    nodes = [
        dq.Node(
            node_id=i, listeners=[dq.Listener(name="CONTROLLER", host="127.0.0.1", port=9090 + i)]
        )
        for i in endpoints
    ]
    partition = dq.PartitionData(
        partition_index=0,
        error_code=0,
        leader_id=leader_id,
        leader_epoch=7,
        high_watermark=41,
        current_voters=list(voters),
        observers=list(observers),
    )
    return dq.DescribeQuorumResponse(
        error_code=0,
        topics=[dq.TopicData(topic_name="__cluster_metadata", partitions=[partition])],
        nodes=nodes,
    )


def two_voters_and_an_observer():
    return response(
        voters=[
            replica(1, DIR_1, 40, 1_700_000_000_500, 1_700_000_000_400),
            replica(2, None, 42, 1_700_000_001_000, 1_700_000_001_000),
        ],
        observers=[replica(5, DIR_5, 42, 1_700_000_000_900, 1_700_000_000_900)],
    )


def test_status_is_kafkas_text():
    text = render_status(status_fields("FA6nGaCFTrWUOqSTa90FKQ", two_voters_and_an_observer()))
    assert text.splitlines() == [
        "ClusterId:              FA6nGaCFTrWUOqSTa90FKQ",
        "LeaderId:               2",
        "LeaderEpoch:            7",
        "HighWatermark:          41",
        "MaxFollowerLag:         2",
        "MaxFollowerLagTimeMs:   600",
        'CurrentVoters:          [{"id": 1, "directoryId": "vL43avpJRtG5YCKTUbJL2w", "endpoints":'
        ' ["CONTROLLER://127.0.0.1:9091"]}, {"id": 2, "directoryId": null, "endpoints":'
        ' ["CONTROLLER://127.0.0.1:9092"]}]',
        'CurrentObservers:       [{"id": 5, "directoryId": "vGxCL0ZzRNq1ArTcUxRcLA", "endpoints":'
        ' ["CONTROLLER://127.0.0.1:9095"]}]',
    ]


def test_status_json_has_the_same_fields_with_null_directory():
    fields = status_fields("c", two_voters_and_an_observer())
    assert fields["CurrentVoters"][1] == {
        "id": 2,
        "directoryId": None,
        "endpoints": ["CONTROLLER://127.0.0.1:9092"],
    }
    # a replica the leader lists no endpoints for shows none, voter or observer
    bare = status_fields("c", response([replica(2, None, 3, 1, 1)], endpoints=()))
    assert bare["CurrentVoters"] == [{"id": 2, "directoryId": None}]


@pytest.mark.parametrize(
    "voters, expected",
    [
        # every voter at the leader's offset: the first of them is "the laggard", as in Kafka's min()
        ([replica(1, DIR_1, 42, 5, 100), replica(2, None, 42, 9, 900)], 800),
        # the leader itself is the first lowest: 0
        ([replica(2, None, 42, 9, 900), replica(1, DIR_1, 42, 5, 100)], 0),
        # the laggard was never caught up: -1
        ([replica(1, DIR_1, 3, -1, -1), replica(2, None, 42, 9, 900)], -1),
    ],
)
def test_max_follower_lag_time_follows_kafkas_rule(voters, expected):
    assert status_fields("c", response(voters))["MaxFollowerLagTimeMs"] == expected


def test_replication_table_is_kafkas_text():
    text = render_table(replication_rows(two_voters_and_an_observer()))
    assert text.split("\n") == [
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
        "LastCaughtUpTimestamp\tStatus  \t",
        "2     \tAAAAAAAAAAAAAAAAAAAAAA\t42          \t0  \t1700000001000     \t"
        "1700000001000        \tLeader  \t",
        "1     \tvL43avpJRtG5YCKTUbJL2w\t40          \t2  \t1700000000500     \t"
        "1700000000400        \tFollower\t",
        "5     \tvGxCL0ZzRNq1ArTcUxRcLA\t42          \t0  \t1700000000900     \t"
        "1700000000900        \tObserver\t",
    ]


def test_human_readable_timestamps_are_ms_ago_and_minus_one_stays():
    quorum = response([replica(2, None, 42, 1_000, 1_000), replica(1, DIR_1, 40, -1, -1)])
    rows = replication_rows(quorum, now_ms=1_250)
    assert [(r["LastFetchTimestamp"], r["LastCaughtUpTimestamp"]) for r in rows] == [
        ("250 ms ago", "250 ms ago"),
        (-1, -1),
    ]


@pytest.mark.parametrize("stamp", [2_000, 0])
def test_human_readable_refuses_a_timestamp_it_cannot_show(stamp):
    quorum = response([replica(2, None, 42, stamp, stamp)])
    with pytest.raises(RelativeTimeError, match=f"last fetch timestamp is {stamp}"):
        replication_rows(quorum, now_ms=1_250)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def answers_after(failures: list[Exception]):
    def ask():
        if failures:
            raise failures.pop(0)
        return "described"

    return ask


def test_describe_asks_again_while_there_is_no_leader():
    clock = FakeClock()
    ask = answers_after([NoLeaderYet("no leader"), NoLeaderYet("leader 2: refused")] * 3)
    assert until_a_leader_answers(ask, 60_000, clock, clock.sleep) == "described"
    assert len(clock.pauses) == 6 and clock.pauses == sorted(clock.pauses)


def test_describe_gives_up_with_the_last_reason_when_the_time_is_up():
    clock = FakeClock()
    ask = answers_after([NoLeaderYet("the quorum has no leader right now")] * 1000)
    with pytest.raises(ClientError, match=r"no leader right now \(still so after 3000 ms\)"):
        until_a_leader_answers(ask, 3_000, clock, clock.sleep)
    assert clock.now <= 3.0


def test_describe_does_not_retry_other_failures():
    clock = FakeClock()
    with pytest.raises(ClientError, match="cannot connect"):
        until_a_leader_answers(
            answers_after([ClientError("cannot connect to 127.0.0.1:1")]),
            60_000,
            clock,
            clock.sleep,
        )
    assert clock.pauses == []


def test_a_controller_waiting_for_a_leader_outweighs_one_that_cannot_be_reached():
    endpoints = [Endpoint("127.0.0.1", 1), Endpoint("127.0.0.1", 2), Endpoint("127.0.0.1", 3)]
    reasons = {1: ClientError("refused"), 2: NoLeaderYet("electing"), 3: ClientError("refused")}

    def ask(endpoint):
        raise reasons[endpoint.port]

    with pytest.raises(NoLeaderYet, match="electing"):
        first_answer(endpoints, ask)
    reasons[2] = ClientError("refused too")
    with pytest.raises(ClientError, match="^refused$"):
        first_answer(endpoints, ask)
    assert first_answer(endpoints, lambda e: e.port if e.port == 3 else ask(e)) == 3
