"""What ``kraftwire quorum`` asks a quorum, as Kafka's admin client asks it: DescribeCluster to find
the leader, then DescribeQuorum, AddRaftVoter or RemoveRaftVoter there, with the inputs and messages of
``kafka-metadata-quorum.sh`` (docs/operations.md §2-§3).

``add-controller`` reads the new controller's properties file and the directory id from the
``meta.properties`` of its metadata.log.dir, as Kafka's tool does on the machine it runs on.

The request builders are the one place each of these requests is built (the metadata client and the
tests that ask a node directly use them too).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kraftwire.generated import add_raft_voter_request as _add
from kraftwire.generated import describe_cluster_request as _dc
from kraftwire.generated import describe_quorum_request as _dq
from kraftwire.generated import remove_raft_voter_request as _remove
from kraftwire.generated import errors
from kraftwire.node.core.api import METADATA_PARTITION, METADATA_TOPIC, Endpoint
from kraftwire.node.storage import StorageError, uuid_from_str, uuid_to_str
from kraftwire.node.storage.layout import read_meta_properties

from .client import ClientError, KafkaConnection
from .config import ConfigError, load_config
from .local_apis import CONTROLLER_ENDPOINT

Answer = TypeVar("Answer")
VOTER_CHANGE_TIMEOUT_MS = 30000  # what Kafka's tool gives the leader to complete a voter change


class UsageError(ValueError):
    """A bad argument or configuration file."""


class NoLeaderYet(ClientError):
    """A controller answered but no leader can be asked right now (none elected, the one named is
    unreachable, or it stopped leading): worth asking again, as Kafka's admin client does."""


def describe_cluster_request() -> Any:
    """DescribeCluster listing the controllers, as Kafka's admin client asks a controller quorum."""
    return _dc.DescribeClusterRequest(
        endpoint_type=CONTROLLER_ENDPOINT, include_cluster_authorized_operations=False
    )


def describe_quorum_request() -> Any:
    """DescribeQuorum of ``__cluster_metadata``-0 (only the leader answers it with the quorum)."""
    partition = _dq.PartitionData(partition_index=METADATA_PARTITION)
    return _dq.DescribeQuorumRequest(
        topics=[_dq.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])]
    )


def add_raft_voter_request(
    voter_id: int,
    directory_id: uuid.UUID,
    listeners: Mapping[str, Endpoint],
    cluster_id: str | None = None,
) -> Any:
    """AddRaftVoter of replica (``voter_id``, ``directory_id``) reachable at ``listeners``; Kafka's
    tool names no cluster id (None)."""
    return _add.AddRaftVoterRequest(
        cluster_id=cluster_id,
        timeout_ms=VOTER_CHANGE_TIMEOUT_MS,
        voter_id=voter_id,
        voter_directory_id=directory_id,
        listeners=[_add.Listener(name=n, host=e.host, port=e.port) for n, e in listeners.items()],
    )


def remove_raft_voter_request(
    voter_id: int, directory_id: uuid.UUID, cluster_id: str | None = None
) -> Any:
    """RemoveRaftVoter of replica (``voter_id``, ``directory_id``); Kafka's tool names no cluster id."""
    return _remove.RemoveRaftVoterRequest(
        cluster_id=cluster_id, voter_id=voter_id, voter_directory_id=directory_id
    )


def find_leader(host: str, port: int, timeout_s: float = 10.0) -> tuple[str, Any]:
    """(cluster id, the leader's DescribeCluster entry), as Kafka's admin client finds the controller."""
    with KafkaConnection(host, port, timeout_s) as bootstrap:
        cluster = bootstrap.call(describe_cluster_request())
    if cluster.error_code != 0:
        raise ClientError(
            f"DescribeCluster failed: error {cluster.error_code} {cluster.error_message or ''}".rstrip()
        )
    leader = [b for b in cluster.brokers if b.broker_id == cluster.controller_id]
    if not leader:
        raise NoLeaderYet("the quorum has no leader right now")
    return cluster.cluster_id, leader[0]


def first_answer(bootstrap: list[Endpoint], ask: Callable[[Endpoint], Answer]) -> Answer:
    """The answer through the first bootstrap controller that gives one, as Kafka's admin client moves
    on to the next bootstrap address; when none does, a NoLeaderYet if any controller said so (worth
    asking again), else the last failure."""
    failures: list[ClientError] = []
    for endpoint in bootstrap:
        try:
            return ask(endpoint)
        except ClientError as exc:
            failures.append(exc)
    waiting = [f for f in failures if isinstance(f, NoLeaderYet)]
    raise waiting[0] if waiting else failures[-1]


def describe_quorum(host: str, port: int) -> tuple[str, Any]:
    """(cluster id, DescribeQuorum response from the leader); NoLeaderYet when no leader can answer."""
    cluster_id, leader = find_leader(host, port)
    try:
        with KafkaConnection(leader.host, leader.port) as connection:
            response = connection.call(describe_quorum_request())
    except ClientError as exc:
        raise NoLeaderYet(f"leader {leader.broker_id}: {exc}") from None
    if response.error_code != 0:
        raise ClientError(f"DescribeQuorum failed: error {errors.name(response.error_code)}")
    partition = response.topics[0].partitions[0]
    if partition.error_code == errors.NOT_LEADER_OR_FOLLOWER:
        raise NoLeaderYet(f"node {leader.broker_id} is no longer the leader")
    if partition.error_code != 0:
        raise ClientError(f"DescribeQuorum failed: {errors.name(partition.error_code)}")
    return cluster_id, response


def leader_call(bootstrap: list[Endpoint], request: Any) -> Any:
    """Send a voter change to the leader, once: only the DescribeCluster that finds the leader moves on
    to the next bootstrap controller (a change sent twice could be refused after it was made)."""
    _, leader = first_answer(bootstrap, lambda e: find_leader(e.host, e.port))
    with KafkaConnection(leader.host, leader.port, timeout_s=40) as connection:
        response = connection.call(request)
    if response.error_code != 0:
        # Kafka's tool prints the leader's message (or the error's default text when it sent none).
        detail = f": {response.error_message}" if response.error_message else ""
        raise ClientError(
            f"the leader refused with {errors.name(response.error_code)}"
            f" ({response.error_code}){detail}"
        )
    return response


def add_controller(bootstrap: list[Endpoint], config_path: str, dry_run: bool = False) -> str:
    """Kafka's message for the voter added; a dry run checks the inputs and sends nothing."""
    try:
        config = load_config(config_path)
        meta = read_meta_properties(config.log_dir)
    except (ConfigError, StorageError) as exc:
        raise UsageError(str(exc)) from None
    request = add_raft_voter_request(config.node_id, meta.directory_id, config.listeners)
    if not dry_run:
        leader_call(bootstrap, request)
    endpoints = ", ".join(endpoint_text(n, e.host, e.port) for n, e in config.listeners.items())
    done = "DRY RUN of adding" if dry_run else "Added"
    return f"{done} controller {config.node_id} with directory id {uuid_to_str(meta.directory_id)} and endpoints: {endpoints}"


def endpoint_text(name: str, host: str, port: int) -> str:
    """``NAME://host:port`` as Kafka prints an endpoint (an IPv6 host in brackets)."""
    return f"{name}://[{host}]:{port}" if ":" in host else f"{name}://{host}:{port}"


def remove_controller(
    bootstrap: list[Endpoint], node_id: int, directory_id: str, dry_run: bool = False
) -> str:
    """Kafka's message for the voter removed; a dry run checks the inputs and sends nothing."""
    if node_id < 0:
        raise UsageError(f"Invalid negative --controller-id: {node_id}")
    try:
        directory = uuid_from_str(directory_id)
    except ValueError as exc:
        raise UsageError(f"Failed to parse --controller-directory-id: {exc}") from None
    request = remove_raft_voter_request(node_id, directory)
    if not dry_run:
        leader_call(bootstrap, request)
    # Kafka's tool prints "Removed " + " KRaft ..." (two spaces); scripts written against it match that.
    done = "DRY RUN of removing " if dry_run else "Removed "
    return f"{done} KRaft controller {node_id} with directory id {directory_id}"
