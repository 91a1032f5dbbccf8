"""The Python clients of the capture corpus: kafka-python and confluent-kafka (librdkafka), each
producing a few batches to a topic of its own and reading them back without a group, then the
same through a group with an offset commit.

Run by ``tests/corpus/record.py`` as ``python tests/corpus/python_clients.py CLIENT BOOTSTRAP TOPIC``;
prints one JSON line of what it did (the capture's truth).
"""

from __future__ import annotations

import json
import sys
import time

RECORDS = 60
TIMEOUT_S = 30.0


def value(i: int) -> bytes:
    return f"corpus record {i} {'abcdefghij' * (1 + i % 7)}".encode()


def kafka_python(bootstrap: str, topic: str, api_version=None, codec: str = "gzip") -> dict:
    """``api_version``: the Kafka release whose API versions the client keeps to (None: the newest
    both sides know)."""
    from kafka import KafkaConsumer, KafkaProducer

    versions = {} if api_version is None else {"api_version": api_version}
    client_id = "corpus-kafka-python" if api_version is None else "corpus-kafka-python-2.5"
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        compression_type=codec,
        **versions,
        linger_ms=20,
        acks="all",
    )
    for i in range(RECORDS):
        producer.send(topic, key=f"k{i}".encode(), value=value(i), partition=i % 2)
        if i % 20 == 19:
            producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        client_id=client_id,
        group_id=f"{client_id}-group",
        **versions,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    read = 0
    deadline = time.monotonic() + TIMEOUT_S
    for _ in consumer:
        read += 1
        if read >= RECORDS or time.monotonic() > deadline:
            break
    consumer.commit()
    consumer.close()
    return {"client": client_id, "topic": topic, "codec": codec, "sent": RECORDS, "read": read}


def kafka_python_legacy(bootstrap: str, topic: str) -> dict:
    """kafka-python keeping to Kafka 2.5's API versions (Produce v8, Fetch v11, Metadata v9, ...):
    versions whose bodies tshark 4.0's dissector reads, so its fields can be compared."""
    return kafka_python(bootstrap, topic, api_version=(2, 5), codec="snappy")


def confluent(bootstrap: str, topic: str) -> dict:
    from confluent_kafka import Consumer, Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "corpus-librdkafka",
            "compression.codec": "lz4",
            "linger.ms": 20,
            "acks": "all",
        }
    )
    for i in range(RECORDS):
        producer.produce(topic, key=f"k{i}".encode(), value=value(i), partition=i % 2)
        if i % 20 == 19:
            producer.flush(TIMEOUT_S)
    left = producer.flush(TIMEOUT_S)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "corpus-librdkafka",
            "group.id": "corpus-librdkafka-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    read = 0
    deadline = time.monotonic() + TIMEOUT_S
    while read < RECORDS and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    sent = RECORDS - left
    return {"client": "confluent-kafka", "topic": topic, "codec": "lz4", "sent": sent, "read": read}


CLIENTS = {
    "kafka-python": kafka_python,
    "kafka-python-2.5": kafka_python_legacy,
    "confluent-kafka": confluent,
}

if __name__ == "__main__":
    client, bootstrap_server, topic_name = sys.argv[1:4]
    print(json.dumps(CLIENTS[client](bootstrap_server, topic_name)))
