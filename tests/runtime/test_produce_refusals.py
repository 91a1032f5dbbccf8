"""A leader refuses a Produce it cannot take with the error that says why, and answers an acks=0
Produce never, refused or not (one real node process, asked over TCP)."""

from __future__ import annotations

import uuid

import pytest

from kraftwire.generated import produce_request as _pq
from kraftwire.node.core.api import METADATA_TOPIC_ID
from kraftwire.node.runtime.client import KafkaConnection
from kraftwire.records import encode_batch
from runtime_settings import formatted_cluster

pytestmark = pytest.mark.timeout(120)

NONE, CORRUPT_MESSAGE, INVALID_REQUIRED_ACKS, INVALID_REQUEST, UNKNOWN_TOPIC_ID = 0, 2, 21, 42, 100
ONE_RECORD = encode_batch([(None, b"value", None, 0)])


@pytest.fixture(scope="module")
def leader(tmp_path_factory):
    """A connection to the leader of a one-node quorum."""
    with formatted_cluster(tmp_path_factory.mktemp("produce") / "c", controllers=1) as cluster:
        cluster.start_all()
        node, _ = cluster.wait_for_leader()
        endpoint = cluster.endpoints[node]
        with KafkaConnection(endpoint.host, endpoint.port) as connection:
            yield connection


def produce(acks: int, records: bytes = ONE_RECORD, topic_id=METADATA_TOPIC_ID, **fields):
    partition = _pq.PartitionProduceData(index=0, records=records)
    topic = _pq.TopicProduceData(topic_id=topic_id, partition_data=[partition])
    return _pq.ProduceRequest(acks=acks, timeout_ms=10000, topic_data=[topic], **fields)


def error_of(connection: KafkaConnection, request) -> int:
    version = connection.version_for(0)
    assert version >= 13
    return connection.call(request, version).responses[0].partition_responses[0].error_code


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (produce(2), INVALID_REQUIRED_ACKS),
        (produce(-1, transactional_id="tx"), INVALID_REQUEST),
        (produce(-1, topic_id=uuid.UUID(int=99)), UNKNOWN_TOPIC_ID),
        (produce(-1, records=b"\x00" * 30), CORRUPT_MESSAGE),
        (produce(1), NONE),
    ],
    ids=["acks", "transactional", "topic", "records", "taken"],
)
def test_a_refused_produce_names_its_error(leader, request_, error):
    assert error_of(leader, request_) == error


def test_acks_0_gets_no_answer_even_when_refused(leader):
    version = leader.version_for(0)
    leader.send(produce(0, records=b"\x00" * 30), version)
    leader.send(produce(0, topic_id=uuid.UUID(int=99)), version)
    # The next answer on the connection is the next request's (KafkaConnection checks its id).
    assert error_of(leader, produce(1)) == NONE
