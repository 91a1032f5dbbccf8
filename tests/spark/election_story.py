"""A KRaft election told in exchanges with a known outcome, for the report's timeline tests.

Node 1 stands for epoch 1 (votes from 2 and 3), begins it and leads while 2 and 3 fetch from it;
node 3 then asks a pre-vote, stands for epoch 2 (a vote from 2), begins it, leads, and resigns
(EndQuorumEpoch). Each node's requests go over a connection of its own.
"""

from __future__ import annotations

from kraftwire.generated import encode_request, encode_response, lookup
from kraftwire.synthetic_capture import Conversation

from captures import T0

TOPIC = "__cluster_metadata"
NO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
# epoch -> leader; the candidates of each epoch with the votes granted them
LEADERS = {1: 1, 2: 3}
CANDIDATES = {1: {1: 2}, 2: {3: 1}}
RESIGNED = {2}
PORTS = {1: 9001, 2: 9002, 3: 9003}


def _partition(**fields) -> dict:
    return {"topics": [{"topicName": TOPIC, "partitions": [{"partitionIndex": 0, **fields}]}]}


def vote(candidate: int, voter: int, epoch: int, granted: bool, pre_vote: bool = False):
    request = {"clusterId": None, "voterId": voter} | _partition(
        replicaEpoch=epoch,
        replicaId=candidate,
        replicaDirectoryId=NO_UUID,
        voterDirectoryId=NO_UUID,
        lastOffsetEpoch=epoch - 1,
        lastOffset=0,
        preVote=pre_vote,
    )
    response = {"errorCode": 0} | _partition(
        errorCode=0, leaderId=-1, leaderEpoch=epoch, voteGranted=granted
    )
    return 52, 2, request, response, {"nodeEndpoints": []}


def begin(leader: int, voter: int, epoch: int):
    request = {"clusterId": None, "voterId": voter} | _partition(
        voterDirectoryId=NO_UUID, leaderId=leader, leaderEpoch=epoch
    )
    request["leaderEndpoints"] = [
        {"name": "CONTROLLER", "host": "10.0.0.%d" % leader, "port": PORTS[leader]}
    ]
    response = {"errorCode": 0} | _partition(errorCode=0, leaderId=leader, leaderEpoch=epoch)
    return 53, 1, request, response, {"nodeEndpoints": []}


def end(leader: int, epoch: int):
    request = {"clusterId": None} | _partition(
        leaderId=leader, leaderEpoch=epoch, preferredCandidates=[]
    )
    request["leaderEndpoints"] = []
    response = {"errorCode": 0} | _partition(errorCode=0, leaderId=leader, leaderEpoch=epoch)
    return 54, 1, request, response, {"nodeEndpoints": []}


def fetch(replica: int, leader: int, epoch: int):
    request = {
        "clusterId": None,
        "replicaState": {"replicaId": replica, "replicaEpoch": -1},
        "maxWaitMs": 500,
        "minBytes": 0,
        "maxBytes": 1048576,
        "isolationLevel": 0,
        "sessionId": 0,
        "sessionEpoch": -1,
        "topics": [
            {
                "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                "partitions": [
                    {
                        "partition": 0,
                        "currentLeaderEpoch": epoch,
                        "fetchOffset": 0,
                        "lastFetchedEpoch": epoch,
                        "logStartOffset": -1,
                        "partitionMaxBytes": 1048576,
                        "replicaDirectoryId": NO_UUID,
                    }
                ],
            }
        ],
        "forgottenTopicsData": [],
        "rackId": "",
    }
    response = {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "sessionId": 0,
        "responses": [
            {
                "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "errorCode": 0,
                        "highWatermark": 0,
                        "lastStableOffset": 0,
                        "logStartOffset": 0,
                        "currentLeader": {"leaderId": leader, "leaderEpoch": epoch},
                        "abortedTransactions": [],
                        "preferredReadReplica": -1,
                        "records": None,
                    }
                ],
            }
        ],
        "nodeEndpoints": [],
    }
    return 1, 17, request, response, {}


def story() -> list[tuple[int, int, int, tuple]]:
    """(ms after T0, sender node, receiver node, exchange) in time order."""
    steps = [(0, 1, 2, vote(1, 2, 1, True)), (1, 1, 3, vote(1, 3, 1, True))]
    steps += [(5, 1, 2, begin(1, 2, 1)), (6, 1, 3, begin(1, 3, 1))]
    steps += [(10 + 100 * i, r, 1, fetch(r, 1, 1)) for i in range(10) for r in (2, 3)]
    steps += [(2000, 3, 2, vote(3, 2, 1, True, pre_vote=True))]
    steps += [(2010, 3, 2, vote(3, 2, 2, True)), (2020, 3, 2, begin(3, 2, 2))]
    steps += [(2030 + 100 * i, 2, 3, fetch(2, 3, 2)) for i in range(5)]
    steps += [(2600, 3, 2, end(3, 2))]
    return sorted(steps, key=lambda step: step[0])


def story_packets() -> list[tuple[int, bytes]]:
    """The story's packets, one connection per (sender, receiver) pair, in time order."""
    conversations: dict[tuple[int, int], Conversation] = {}
    correlation = 0
    for ms, sender, receiver, (api_key, version, request, response, extra) in story():
        pair = (sender, receiver)
        if pair not in conversations:
            conversations[pair] = Conversation(
                ("10.0.0.%d" % sender, 40000 + 10 * sender + receiver),
                ("10.0.0.%d" % receiver, PORTS[receiver]),
            )
            conversations[pair].handshake(T0 + ms * 1_000_000 - 10_000)
        correlation += 1
        request_cls = lookup(lookup_name(api_key, "Request"))
        response_cls = lookup(lookup_name(api_key, "Response"))
        ts = T0 + ms * 1_000_000
        conv = conversations[pair]
        conv.send(
            True,
            encode_request(
                request_cls.from_json(request, version),
                version,
                correlation,
                f"raft-client-{sender}",
            ),
            ts,
        )
        conv.send(
            False,
            encode_response(
                response_cls.from_json(response | extra, version), version, correlation
            ),
            ts + 300_000,
        )
    return sorted((p for c in conversations.values() for p in c.packets), key=lambda p: p[0])


def lookup_name(api_key: int, kind: str) -> str:
    name = {1: "Fetch", 52: "Vote", 53: "BeginQuorumEpoch", 54: "EndQuorumEpoch"}[api_key]
    return name + kind
