"""A blocking client for ``__cluster_metadata-0`` on a quorum: finds the leader with DescribeCluster,
produces with acks -1/1/0 and reads committed records back. Used by ``kraftwire produce/consume``, the
tests and ``bench/node.py``.

It never re-sends a record on its own: after a disconnect or timeout the outcome is unknown, and a
resend could commit the record twice. :meth:`MetadataClient.produce` raises :class:`ProduceRefused` for
a definite refusal and :class:`OutcomeUnknown` (a :class:`~.client.ClientError`) as soon as the outcome is
unknown; only a NOT_LEADER answer (the records were certainly not taken) is retried, at the leader it
names. :meth:`MetadataClient.fetch_committed` raises :class:`FetchRefused` for a definite refusal.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Callable, TypeVar

from kraftwire.generated import fetch_request as _fq
from kraftwire.generated import produce_request as _pq
from kraftwire.generated.errors import (
    FENCED_LEADER_EPOCH,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    UNKNOWN_LEADER_EPOCH,
)
from kraftwire.node.core.api import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID, Endpoint
from kraftwire.generated.records import decode_batches, encode_batch

from .admin import find_leader, first_answer
from .client import ClientError, KafkaConnection

_Result = TypeVar("_Result")


class ProduceRefused(Exception):
    """The leader answered with an error: the records were not written."""


class FetchRefused(Exception):
    """The leader answered a Fetch with an error other than a leader or epoch change."""

    def __init__(self, address: str, error_code: int) -> None:
        super().__init__(f"{address} refused the fetch with error {error_code}")
        self.error_code = error_code


class OutcomeUnknown(ClientError):
    """A Produce was sent and then the connection failed: the records may or may not be written.
    Raised at once: waiting for a leader cannot tell, and resending could write them twice."""


class MetadataClient:
    def __init__(
        self,
        bootstrap: Endpoint | Sequence[Endpoint],
        deadline_s: float = 30.0,
        timeout_s: float = 10.0,
        pinned: bool = False,
    ) -> None:
        """``bootstrap``: one controller, or several asked in turn (the next when one cannot be
        reached or fails), as Kafka's clients go through their bootstrap servers. ``pinned``: talk
        to the first bootstrap controller that answers instead of the leader (reading from a
        follower)."""
        self.bootstrap = [bootstrap] if isinstance(bootstrap, Endpoint) else list(bootstrap)
        self.pinned = pinned
        self.deadline_s = deadline_s
        self.timeout_s = timeout_s
        self.leader: KafkaConnection | None = None
        self.epoch = 0  # the leader epoch a Fetch names; corrected from the leader's answers
        # pinned to a follower that names another leader: why, if that is still so at the deadline
        self._not_serving: str | None = None

    def close(self) -> None:
        if self.leader is not None:
            self.leader.close()
            self.leader = None

    def _leader(self) -> KafkaConnection:
        if self.leader is None and self.pinned:
            self.leader = first_answer(self.bootstrap, self._connect)
        if self.leader is None:
            _, leader = first_answer(
                self.bootstrap, lambda e: find_leader(e.host, e.port, self.timeout_s)
            )
            self.leader = self._connect(leader)
        return self.leader

    def _connect(self, endpoint: Any) -> KafkaConnection:
        return KafkaConnection(endpoint.host, endpoint.port, self.timeout_s)

    def _retrying(self, attempt: Callable[[KafkaConnection], _Result | None]) -> _Result:
        """Run ``attempt(connection)`` until it returns non-None; a NOT_LEADER answer returns None."""
        stop = time.monotonic() + self.deadline_s
        while True:
            try:
                result = attempt(self._leader())
                if result is not None:
                    return result
            except OutcomeUnknown:
                self.close()
                raise
            except ClientError:
                if time.monotonic() > stop:
                    raise
            self.close()
            if time.monotonic() > stop:
                raise ClientError(
                    self._not_serving
                    or f"no leader accepted the request within {self.deadline_s:.0f} s"
                )
            time.sleep(0.1)

    def _note_not_serving(self, connection: KafkaConnection, error: int, leader: Any) -> None:
        """A pinned node that answers NOT_LEADER_OR_FOLLOWER naming a leader does not serve client
        Fetches as a follower: the setting that makes it do so is what to name (issue 26)."""
        named = leader is not None and leader.leader_id >= 0
        self._not_serving = (
            f"{connection.address} does not serve reads as a follower (leader is node "
            f"{leader.leader_id}): set kraftwire.follower.fetch.enable=true on it, or read from the leader"
            if self.pinned and error == NOT_LEADER_OR_FOLLOWER and named
            else None
        )

    def produce(self, values: list[bytes], acks: int = -1, timeout_ms: int = 10000) -> int:
        """Write ``values`` in one batch; returns the base offset (-1 for acks=0)."""
        batch = encode_batch([(None, v, None, int(time.time() * 1000)) for v in values])

        def attempt(connection: KafkaConnection) -> int | None:
            version = connection.version_for(0)
            topic = _pq.TopicProduceData(
                partition_data=[_pq.PartitionProduceData(index=0, records=batch)],
                **({"topic_id": METADATA_TOPIC_ID} if version >= 13 else {"name": METADATA_TOPIC}),
            )
            request = _pq.ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=[topic])
            connection.send(request, version)  # a failed send leaves no whole frame: retried
            if acks == 0:
                return -1
            try:
                response = connection.receive(request.API_KEY, version)
            except ClientError as exc:
                raise OutcomeUnknown(f"outcome unknown: {exc}") from None
            partition = response.responses[0].partition_responses[0]
            if partition.error_code == NOT_LEADER_OR_FOLLOWER:
                return None  # definitely not written: ask the leader it names
            if partition.error_code != 0:
                detail = f": {partition.error_message}" if partition.error_message else ""
                raise ProduceRefused(f"produce failed with error {partition.error_code}{detail}")
            base_offset: int = partition.base_offset
            return base_offset

        return self._retrying(attempt)

    def fetch_committed(
        self, offset: int, max_bytes: int = 1 << 20, max_wait_ms: int = 0
    ) -> tuple[list[tuple[int, bytes]], int]:
        """Committed data records from ``offset``: ([(offset, value)], next offset). With
        ``max_wait_ms`` the leader holds the fetch that long for records to commit."""
        answer = self._fetch(offset, max_bytes, max_wait_ms)
        batches, _ = decode_batches(answer.records or b"")
        out: list[tuple[int, bytes]] = []
        next_offset = offset
        # Kafka's leader serves a replica -1 Fetch uncommitted records too: keep those below its HW.
        for batch in batches:
            if batch.last_offset >= answer.high_watermark:
                break
            next_offset = batch.last_offset + 1
            if not batch.is_control:
                out.extend((r.offset, r.value or b"") for r in batch.records if r.offset >= offset)
        return out, next_offset

    def log_offsets(self) -> tuple[int, int]:
        """(log start offset, high watermark) of the leader (or the pinned node): where "earliest"
        and "latest" are for a reader. A Fetch of one byte answers both; one below the log start
        is answered OFFSET_OUT_OF_RANGE with the log start, and asked again there."""
        offset = 0
        for _ in range(3):
            answer = self._fetch(offset, 1, 0, allowed=(OFFSET_OUT_OF_RANGE,))
            if answer.error_code == 0:
                return answer.log_start_offset, answer.high_watermark
            offset = answer.log_start_offset
        raise FetchRefused("the leader", OFFSET_OUT_OF_RANGE)

    def _fetch(
        self, offset: int, max_bytes: int, max_wait_ms: int, allowed: tuple[int, ...] = ()
    ) -> Any:
        """The leader's Fetch answer for ``offset``; errors other than ``allowed`` and a leader or
        epoch change (asked again) raise FetchRefused."""

        def attempt(connection: KafkaConnection) -> Any:
            version = connection.version_for(1)
            # Kafka's leader validates the epochs of every Fetch. A reader that never truncates can
            # name the leader's epoch as its last fetched one: that epoch ends at the leader's LEO,
            # at or past any offset worth asking for, so the pair is always consistent.
            request = client_fetch_request(
                version, offset, self.epoch, self.epoch, max_bytes, max_wait_ms
            )
            answer = connection.call(request, version).responses[0].partitions[0]
            if answer.error_code in (
                FENCED_LEADER_EPOCH,
                UNKNOWN_LEADER_EPOCH,
                NOT_LEADER_OR_FOLLOWER,
            ):
                leader = getattr(answer, "current_leader", None)
                if leader is not None and leader.leader_epoch >= 0:
                    self.epoch = leader.leader_epoch
                self._note_not_serving(connection, answer.error_code, leader)
                return None
            if answer.error_code != 0 and answer.error_code not in allowed:
                raise FetchRefused(connection.address, answer.error_code)
            return answer

        return self._retrying(attempt)


def client_fetch_request(
    version: int,
    offset: int,
    current_leader_epoch: int,
    last_fetched_epoch: int,
    max_bytes: int = 1 << 20,
    max_wait_ms: int = 0,
) -> Any:
    """A Fetch of ``__cluster_metadata``-0 from ``offset`` by a client (replica -1), for ``version``:
    the topic by id from v13, the replica in ReplicaState from v15."""
    partition = _fq.FetchPartition(
        partition=METADATA_PARTITION,
        fetch_offset=offset,
        partition_max_bytes=max_bytes,
        current_leader_epoch=current_leader_epoch,
        last_fetched_epoch=last_fetched_epoch,
    )
    topic = _fq.FetchTopic(
        partitions=[partition],
        **({"topic_id": METADATA_TOPIC_ID} if version >= 13 else {"topic": METADATA_TOPIC}),
    )
    request = _fq.FetchRequest(
        max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes, topics=[topic]
    )
    if version >= 15:
        request.replica_state = _fq.ReplicaState(replica_id=-1)
    else:
        request.replica_id = -1
    return request
