"""KRaft exchanges built from the bundled codecs, with their expected decoding (ground truth).

``kraft_exchanges(count, seed)`` gives request/response frames of Vote, BeginQuorumEpoch,
EndQuorumEpoch, Fetch (with record batches: data and a LeaderChange control record),
DescribeQuorum, ApiVersions and FetchSnapshot, each with the JSON the decoder must produce.
"""

from __future__ import annotations

import random
from typing import Callable, NamedTuple

from kraftwire.generated import Message, encode_request, encode_response, lookup
from kraftwire.generated.records import encode_batch, encode_control_batch


class Exchange(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    request: bytes  # size-prefixed frame
    response: bytes
    request_body: object
    response_body: object


# A request and its response, made up from a random source.
_Pair = tuple[Message, Message]


def _fetch_pair(rng: random.Random) -> _Pair:
    request = lookup("FetchRequest")(max_wait_ms=500, cluster_id="kraftwire-demo")
    response_cls = lookup("FetchResponse")
    records = encode_batch(
        [
            (
                None,
                bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))),
                None,
                1_700_000_000_000 + i,
            )
            for i in range(rng.randint(1, 3))
        ],
        base_offset=rng.randint(0, 1000),
    )
    control = encode_control_batch(
        [(2, lookup("LeaderChangeMessage")(leader_id=1))], timestamp=1_700_000_000_000
    )
    response = response_cls.from_json(
        {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "sessionId": 0,
            "responses": [
                {
                    "topic": "__cluster_metadata",
                    "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                    "partitions": [
                        {
                            "partitionIndex": 0,
                            "errorCode": rng.choice([0, 0, 6]),
                            "highWatermark": 10,
                            "lastStableOffset": 10,
                            "logStartOffset": 0,
                            "abortedTransactions": [],
                            "preferredReadReplica": -1,
                            "records": "",
                        }
                    ],
                }
            ],
            "nodeEndpoints": [],
        },
        17,
    )
    response.responses[0].partitions[0].records = records + control
    return request, response


def _simple(request_name: str, response_name: str) -> Callable[[random.Random], _Pair]:
    def make(rng: random.Random) -> _Pair:
        return lookup(request_name)(), lookup(response_name)()

    return make


_KINDS = [
    (52, 2, _simple("VoteRequest", "VoteResponse")),
    (53, 1, _simple("BeginQuorumEpochRequest", "BeginQuorumEpochResponse")),
    (54, 1, _simple("EndQuorumEpochRequest", "EndQuorumEpochResponse")),
    (1, 17, _fetch_pair),
    (55, 2, _simple("DescribeQuorumRequest", "DescribeQuorumResponse")),
    (18, 3, _simple("ApiVersionsRequest", "ApiVersionsResponse")),
    (59, 1, _simple("FetchSnapshotRequest", "FetchSnapshotResponse")),
]


def kraft_exchanges(count: int, seed: int = 0, first_correlation_id: int = 1) -> list[Exchange]:
    rng = random.Random(seed)
    out = []
    for index in range(count):
        api_key, version, make = _KINDS[index % len(_KINDS)] if count < 50 else rng.choice(_KINDS)
        request, response = make(rng)
        correlation_id = first_correlation_id + index
        client_id = f"raft-client-{rng.randint(1, 3)}"
        out.append(exchange_of(api_key, version, correlation_id, client_id, request, response))
    return out


def exchange_of(
    api_key: int,
    version: int,
    correlation_id: int,
    client_id: str,
    request: Message,
    response: Message,
) -> Exchange:
    """The exchange of ``request`` and ``response`` at ``version``, their frames encoded."""
    return Exchange(
        api_key,
        version,
        correlation_id,
        client_id,
        encode_request(request, version, correlation_id, client_id),
        encode_response(response, version, correlation_id),
        request,
        response,
    )
