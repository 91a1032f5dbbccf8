"""A FetchResponse v12 whose partition carries two batches (lz4 data and a transaction marker), sent as
a response frame and read back with its records: all with the bundled ``kraftwire.generated``.

    .venv/bin/python examples/fetch_records.py
"""

from __future__ import annotations

import kraftwire.generated as kw
from kraftwire.generated.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData
from kraftwire.records import (
    decode_batches,
    decode_control_record,
    encode_batch,
    end_txn_marker_batch,
)

FETCH = 1
VERSION = 12  # the last version that names topics (13+ send topic ids)


def main() -> None:
    data = encode_batch(
        [(f"k{i}".encode(), f"value {i}".encode(), [], 1_700_000_000_000 + i) for i in range(3)],
        base_offset=40,
        compression="lz4",
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )
    commit = end_txn_marker_batch(True, producer_id=7, producer_epoch=0, base_offset=43)
    partition = PartitionData(partition_index=0, high_watermark=44, records=data + commit)
    response = FetchResponse(
        responses=[FetchableTopicResponse(topic="payments", partitions=[partition])]
    )

    frame = kw.encode_response(response, VERSION, correlation_id=12)
    payload, _ = kw.read_frame(frame)
    assert payload is not None  # None: the buffer does not hold a whole frame yet
    decoded = kw.decode_response(payload, FETCH, VERSION)  # a response header has no API key
    body = decoded.body
    assert isinstance(body, FetchResponse) and decoded.correlation_id == 12 and body == response

    records = body.responses[0].partitions[0].records
    batches, _ = decode_batches(records or b"")
    for batch in batches:
        kind = "control" if batch.is_control else batch.compression
        print(
            f"batch {batch.base_offset}..{batch.base_offset + batch.last_offset_delta} ({kind}, "
            f"transactional={batch.is_transactional})"
        )
        for record in batch.records:
            if batch.is_control:
                control = decode_control_record(record.key, record.value)
                print(f"  offset {record.offset}: {control.type_name} marker")
            else:
                print(f"  offset {record.offset}: key={record.key!r} value={record.value!r}")


if __name__ == "__main__":
    main()
