"""A MetadataRequest v12 and its MetadataResponse: build, frame, decode, compare, and Kafka's JSON form.

.venv/bin/python examples/metadata_round_trip.py
"""

from __future__ import annotations

import importlib
import json
import uuid

from kafka_specs import kafka_package

METADATA = 3
VERSION = 12


def main() -> None:
    kafka = kafka_package(["Metadata"])
    request_module = importlib.import_module(f"{kafka.__name__}.metadata_request")
    response_module = importlib.import_module(f"{kafka.__name__}.metadata_response")

    request = request_module.MetadataRequest(
        topics=[request_module.MetadataRequestTopic(name="orders")],
        allow_auto_topic_creation=False,
    )
    frame = kafka.encode_request(request, VERSION, correlation_id=5, client_id="example")
    payload, _ = kafka.read_frame(frame)
    assert kafka.decode_request(payload).body == request

    response = response_module.MetadataResponse(
        brokers=[response_module.MetadataResponseBroker(node_id=1, host="broker-1", port=9092)],
        cluster_id="example-cluster",
        controller_id=1,
        topics=[
            response_module.MetadataResponseTopic(
                name="orders",
                topic_id=uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
                partitions=[
                    response_module.MetadataResponsePartition(
                        partition_index=0,
                        leader_id=1,
                        leader_epoch=3,
                        replica_nodes=[1],
                        isr_nodes=[1],
                    )
                ],
            )
        ],
    )
    frame = kafka.encode_response(response, VERSION, correlation_id=5)
    payload, _ = kafka.read_frame(frame)
    decoded = kafka.decode_response(payload, METADATA, VERSION)
    assert decoded.body == response
    print(f"MetadataResponse v{VERSION}: {len(frame)} bytes, decoded back equal")
    print(json.dumps(decoded.body.to_json(VERSION), indent=2))


if __name__ == "__main__":
    main()
