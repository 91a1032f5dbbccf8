"""The batches a KRaft leader appends, as Kafka's own controllers wrote them into the metadata log
(the Fetch responses of ``kraft.pcap`` and ``kraft-quorum.pcap``): ``encode_value_batch``, the
leader's writer of kraftwire's node, builds each data batch byte for byte from its values, and
``read_value_batch`` gives back those values or leaves the batch to the general reader."""

from __future__ import annotations

import pytest

from corpus_data import wire_exchanges
from kraftwire.generated.api_keys import FETCH
from kraftwire.generated.records import (
    batch_spans,
    decode_batches,
    encode_value_batch,
    read_value_batch,
)


def leader_batches(name: str, package) -> list[bytes]:
    """Every whole record batch of the capture's Fetch responses, in order."""
    found: list[bytes] = []
    for w in wire_exchanges(name):
        if w.api_key != FETCH or w.response is None:
            continue
        payload, version = w.response.payload, w.api_version
        _, start = package.lookup("ResponseHeader").read(
            payload, 0, package.response_header_version(FETCH, version)
        )
        body, _ = package.response_class(FETCH).read(payload, start, version)
        for topic in body.responses:
            for partition in topic.partitions:
                spans, _ = batch_spans(partition.records or b"")
                found += [partition.records[begin:end] for begin, end, _ in spans]
    return found


@pytest.mark.parametrize("name", ["kraft.pcap", "kraft-quorum.pcap"])
def test_kafka_leaders_data_batches_are_what_encode_value_batch_writes(name, upstream):
    data_batches = 0
    for raw in leader_batches(name, upstream):
        (batch,), _ = decode_batches(raw)
        if batch.is_control:
            continue
        # what a Raft leader writes: values only, one timestamp, uncompressed, no producer
        assert batch.attributes == 0 and batch.producer_id == -1, batch
        assert {(r.key, tuple(r.headers), r.timestamp) for r in batch.records} == {
            (None, (), batch.base_timestamp)
        }
        values = [record.value for record in batch.records]
        assert [r.offset for r in batch.records] == list(
            range(batch.base_offset, batch.base_offset + len(values))
        )
        assert (
            encode_value_batch(
                values,
                base_offset=batch.base_offset,
                leader_epoch=batch.partition_leader_epoch,
                timestamp=batch.base_timestamp,
            )
            == raw
        )
        read = read_value_batch(raw)
        if read is not None:  # values of one length
            assert read == (
                batch.base_offset,
                batch.partition_leader_epoch,
                batch.base_timestamp,
                values,
            )
        data_batches += 1
    assert data_batches > 0
