"""An independent codec (kio) talks to a running node: ApiVersions, DescribeCluster, DescribeQuorum,
Vote and Fetch, built with kio's classes and decoded with kio's readers."""

from __future__ import annotations

import io
import socket
import struct
import time
import uuid

import pytest

pytestmark = pytest.mark.timeout(180)

kio = pytest.importorskip("kio")
from kio.schema.types import BrokerId, TopicName  # noqa: E402
from kio.serial import entity_reader, entity_writer  # noqa: E402
from kio.static.primitive import i8, i32, i64  # noqa: E402

from runtime_settings import TEST_SETTINGS  # noqa: E402
from kraftwire.node.runtime.local_cluster import LocalCluster  # noqa: E402
from kraftwire.node.storage import uuid_from_str  # noqa: E402
from kio.schema.api_versions.v3.request import ApiVersionsRequest  # noqa: E402
from kio.schema.api_versions.v3.response import ApiVersionsResponse  # noqa: E402
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest  # noqa: E402
from kio.schema.describe_cluster.v1.response import DescribeClusterResponse  # noqa: E402
from kio.schema.describe_quorum.v2 import request as dq_request  # noqa: E402
from kio.schema.describe_quorum.v2.response import DescribeQuorumResponse  # noqa: E402
from kio.schema.fetch.v17 import request as fetch_request  # noqa: E402
from kio.schema.fetch.v17.response import FetchResponse  # noqa: E402
from kio.schema.vote.v2 import request as vote_request  # noqa: E402
from kio.schema.vote.v2.response import VoteResponse  # noqa: E402


def call(endpoint, request, response_class, correlation_id=7):
    """Frame ``request`` (a kio object) with kio's header, send it, decode the answer with kio."""
    header_class = request.__header_schema__
    body = io.BytesIO()
    entity_writer(header_class)(
        body,
        header_class(
            request_api_key=request.__api_key__,
            request_api_version=request.__version__,
            correlation_id=i32(correlation_id),
            client_id="kio-test",
        ),
    )
    entity_writer(type(request))(body, request)
    with socket.create_connection((endpoint.host, endpoint.port), timeout=20) as sock:
        sock.sendall(struct.pack(">i", len(body.getvalue())) + body.getvalue())
        size = struct.unpack(">i", _read(sock, 4))[0]
        payload = _read(sock, size)
    header, header_size = entity_reader(response_class.__header_schema__)(payload, 0)
    assert header.correlation_id == correlation_id
    response, body_size = entity_reader(response_class)(payload, header_size)
    assert header_size + body_size == len(payload), "kio read the whole response"
    return response


def _read(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    """One running 3-node cluster for every test here: (cluster, leader id, epoch)."""
    cluster = LocalCluster(str(tmp_path_factory.mktemp("kio") / "c"), 3, settings=TEST_SETTINGS)
    cluster.format()
    try:
        cluster.start_all()
        leader, epoch = cluster.wait_for_leader()
        yield cluster, leader, epoch
    finally:
        cluster.stop_all(graceful_s=5)


def test_api_versions_lists_exactly_the_served_apis(running):
    cluster, leader, epoch = running
    endpoint = cluster.endpoints[leader]
    versions = call(
        endpoint,
        ApiVersionsRequest(client_software_name="kio", client_software_version="1"),
        ApiVersionsResponse,
    )
    assert versions.error_code == 0
    served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert set(served) == {0, 1, 18, 32, 52, 53, 54, 55, 59, 60, 80, 81, 82, 1000}  # 1000: ReadOffset
    assert served[52] == (0, 2) and served[55] == (0, 2) and served[18][1] >= 3


def test_describe_cluster_names_the_controllers(running):
    cluster, leader, epoch = running
    endpoint = cluster.endpoints[leader]
    cluster_answer = call(
        endpoint,
        DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=i8(2)),
        DescribeClusterResponse,
    )
    assert cluster_answer.error_code == 0 and cluster_answer.endpoint_type == 2
    assert cluster_answer.cluster_id == cluster.cluster_id
    assert cluster_answer.controller_id == leader
    assert sorted((b.broker_id, b.port) for b in cluster_answer.brokers) == sorted(
        (i, e.port) for i, e in cluster.endpoints.items()
    )


def test_describe_quorum_from_the_leader(running):
    cluster, leader, epoch = running
    endpoint = cluster.endpoints[leader]
    quorum = call(
        endpoint,
        dq_request.DescribeQuorumRequest(
            topics=(
                dq_request.TopicData(
                    topic_name=TopicName("__cluster_metadata"),
                    partitions=(dq_request.PartitionData(partition_index=i32(0)),),
                ),
            )
        ),
        DescribeQuorumResponse,
    )
    partition = quorum.topics[0].partitions[0]
    assert (
        partition.error_code == 0
        and partition.leader_id == leader
        and partition.leader_epoch == epoch
    )
    assert sorted(v.replica_id for v in partition.current_voters) == [1, 2, 3]


def test_vote_refusals(running):
    cluster, leader, epoch = running
    endpoint = cluster.endpoints[leader]

    # A stale-epoch vote from an unknown directory is refused, and kio decodes the refusal;
    # the same vote naming another cluster is refused with INCONSISTENT_CLUSTER_ID (104).
    def vote_for(cluster_id):
        partition = vote_request.PartitionData(
            partition_index=i32(0),
            replica_epoch=i32(0),
            replica_id=BrokerId(2 if leader != 2 else 3),
            replica_directory_id=uuid.uuid4(),
            voter_directory_id=uuid.UUID(int=0),
            last_offset_epoch=i32(0),
            last_offset=i64(0),
            pre_vote=False,
        )
        topic = vote_request.TopicData(
            topic_name=TopicName("__cluster_metadata"), partitions=(partition,)
        )
        request = vote_request.VoteRequest(
            cluster_id=cluster_id, voter_id=BrokerId(leader), topics=(topic,)
        )
        return call(endpoint, request, VoteResponse)

    vote = vote_for(cluster.cluster_id)
    vote_partition = vote.topics[0].partitions[0]
    assert vote.error_code == 0 and vote_partition.vote_granted is False
    assert vote_partition.leader_id == leader and vote_partition.leader_epoch == epoch
    assert vote_for("AAAAAAAAAAAAAAAAAAAAAw").error_code == 104


def test_observer_fetch_gets_records(running):
    cluster, _, _ = running
    # An observer fetch (id 9, not a voter) from offset 0 gets the leader's records. A leader knows
    # its high watermark only once a majority has fetched in its epoch (-1 before): on a loaded
    # machine that can come after the election, so ask again for a bounded time.
    for _ in range(300):
        leader, epoch = cluster.wait_for_leader()
        fetched = _observer_fetch(cluster, leader, epoch)
        if fetched.error_code == 0 and fetched.high_watermark >= 1:
            break
        time.sleep(0.1)
    assert fetched.error_code == 0
    assert (
        fetched.high_watermark >= 1 and fetched.records
    )  # the leader's LeaderChange batch at least


def _observer_fetch(cluster, leader, epoch):
    endpoint = cluster.endpoints[leader]
    fetch = call(
        endpoint,
        fetch_request.FetchRequest(
            cluster_id=cluster.cluster_id,
            replica_state=fetch_request.ReplicaState(replica_id=BrokerId(9), replica_epoch=i64(-1)),
            max_wait=i32Timedelta(0),
            min_bytes=i32(0),
            max_bytes=i32(1 << 20),
            isolation_level=i8(0),
            session_id=i32(0),
            session_epoch=i32(-1),
            topics=(
                fetch_request.FetchTopic(
                    topic_id=uuid.UUID(int=1),
                    partitions=(
                        fetch_request.FetchPartition(
                            partition=i32(0),
                            current_leader_epoch=i32(epoch),
                            fetch_offset=i64(0),
                            last_fetched_epoch=i32(0),
                            log_start_offset=i64(-1),
                            partition_max_bytes=i32(1 << 20),
                            replica_directory_id=uuid_from_str("AAAAAAAAAAAAAAAAAAAAAg"),
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        ),
        FetchResponse,
    )
    assert fetch.error_code == 0
    return fetch.responses[0].partitions[0]


def i32Timedelta(ms):  # noqa: N802 - kio's type name
    import datetime

    from kio.static.primitive import i32Timedelta as kio_timedelta

    return kio_timedelta.parse(datetime.timedelta(milliseconds=ms))
