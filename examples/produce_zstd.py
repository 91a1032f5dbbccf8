"""Build a ProduceRequest v11 carrying a zstd-compressed record batch, frame it, and decode it back.

.venv/bin/python examples/produce_zstd.py
"""

from __future__ import annotations

import importlib

from kafka_specs import kafka_package

from kraftwire.records import decode_batches, encode_batch

VERSION = 11


def main() -> None:
    kafka = kafka_package(["Produce"])
    produce = importlib.import_module(f"{kafka.__name__}.produce_request")

    batch = encode_batch(
        [
            (b"order-1", b'{"item": "tea", "qty": 2}', [("source", b"web")], 1_700_000_000_000),
            (b"order-2", b'{"item": "cake", "qty": 1}', [], 1_700_000_000_250),
        ],
        compression="zstd",
    )
    request = produce.ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            produce.TopicProduceData(
                name="orders", partition_data=[produce.PartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    frame = kafka.encode_request(request, VERSION, correlation_id=1, client_id="example")
    print(
        f"ProduceRequest v{VERSION}: {len(frame)} bytes on the wire, "
        f"batch {len(batch)} bytes (zstd)"
    )

    payload, _ = kafka.read_frame(frame)
    decoded = kafka.decode_request(payload)
    assert decoded.body == request
    records = decoded.body.topic_data[0].partition_data[0].records
    batches, partial_tail = decode_batches(records)
    assert not partial_tail
    for found in batches:
        print(
            f"batch at offset {found.base_offset}: {found.compression}, "
            f"{len(found.records)} records"
        )
        for record in found.records:
            print(
                f"  {record.offset}: key={record.key!r} value={record.value!r} "
                f"headers={record.headers}"
            )


if __name__ == "__main__":
    main()
