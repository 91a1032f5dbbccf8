"""The client side of ReadOffset (issue #13): ask one node for the offset up to which it can serve a
linearizable read, for ``kraftwire consume --linearizable``, the tests and ``bench/reads.py``."""

from __future__ import annotations

from kraftwire.node.core.messages import read_offset_request as read_offset_request

from .client import KafkaConnection


class ReadRefused(Exception):
    """The node answered ReadOffset with an error; ``leader_id`` is the leader it named (-1: none)."""

    def __init__(self, address: str, error_code: int, leader_id: int = -1) -> None:
        leader = "no leader known" if leader_id < 0 else f"leader {leader_id}"
        super().__init__(f"{address} refused the read offset with error {error_code} ({leader})")
        self.error_code = error_code
        self.leader_id = leader_id


def read_offset(connection: KafkaConnection, cluster_id: str | None = None) -> int:
    """The offset (exclusive) below which ``connection``'s node has every committed record that a read
    starting now must see; raises :class:`ReadRefused` or :class:`~.client.ClientError`."""
    answer = connection.call(read_offset_request(cluster_id))
    if answer.error_code != 0:
        raise ReadRefused(connection.address, answer.error_code)
    partition = answer.topics[0].partitions[0]
    if partition.error_code != 0:
        leader = partition.current_leader.leader_id if partition.current_leader else -1
        raise ReadRefused(connection.address, partition.error_code, leader)
    offset: int = partition.applied_offset
    return offset
