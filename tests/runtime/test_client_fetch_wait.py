"""A client Fetch (replica id -1) that finds no new committed records is held up to MaxWaitMs, as
Kafka's broker holds it, and answered as soon as records commit."""

from __future__ import annotations

import threading
import time

import pytest

from kraftwire.node.runtime.producer import MetadataClient

pytestmark = pytest.mark.timeout(180)


def test_client_fetch_is_held_until_max_wait_or_a_commit(cluster):
    cluster.start_all()
    leader, _ = cluster.wait_for_leader()
    client = MetadataClient(cluster.endpoints[leader], deadline_s=30, timeout_s=30)
    try:
        client.produce([b"first"], -1)
        records, end = client.fetch_committed(0, max_wait_ms=20000)
        assert [v for _, v in records] == [b"first"]  # data there: answered without waiting

        started = time.monotonic()
        records, _ = client.fetch_committed(end, max_wait_ms=1500)
        held_s = time.monotonic() - started
        assert records == []
        assert held_s >= 1.4  # a lower bound only: held for MaxWaitMs, not answered at once

        answer: dict = {}

        def held_fetch() -> None:
            reader = MetadataClient(cluster.endpoints[leader], deadline_s=30, timeout_s=30)
            try:
                answer["records"] = reader.fetch_committed(end, max_wait_ms=20000)[0]
            finally:
                reader.close()

        reader = threading.Thread(target=held_fetch)
        reader.start()
        time.sleep(0.5)  # let the fetch reach the leader and be held before the record exists
        client.produce([b"late"], -1)
        reader.join(timeout=25)
        assert not reader.is_alive()
        # Answered with the record committed after the fetch arrived, not empty at once.
        assert [v for _, v in answer["records"]] == [b"late"]
    finally:
        client.close()
