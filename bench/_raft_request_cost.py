"""The leader's request path for one follower Fetch, timed in this process alone (no sockets, no other
process competing): read the frame from a buffered stream, decode it, build the answer the core
gives (a FetchResponse carrying ``records_bytes`` of records) and frame it. bench/raft.py prints it
beside the in-run figure, which a loaded machine inflates."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid

from kraftwire.generated import CODEC_IMPLEMENTATION, decode_request
from kraftwire.generated import fetch_request as _fq
from kraftwire.node.core.responses import fetch_response
from kraftwire.node.runtime.limits import RequestBytes, read_request
from kraftwire.node.runtime.wire import frame_request, frame_response

FETCH_VERSION = 17  # what a kraftwire follower sends (and Kafka 4's)


def _follower_fetch() -> bytes:
    partition = _fq.FetchPartition(
        partition=0,
        current_leader_epoch=5,
        fetch_offset=123_456,
        last_fetched_epoch=5,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
        replica_directory_id=uuid.UUID(int=7),
    )
    topic = _fq.FetchTopic(topic_id=uuid.UUID(int=1), partitions=[partition])
    request = _fq.FetchRequest(
        replica_state=_fq.ReplicaState(replica_id=2, replica_epoch=-1),
        max_wait_ms=500,
        max_bytes=8 << 20,
        topics=[topic],
    )
    return frame_request(request, FETCH_VERSION, 99, "raft-client-2")


def request_path_us(records_bytes: int, count: int = 2000) -> dict[str, float | str]:
    """Microseconds of thread CPU per request in each step, averaged over ``count`` requests."""
    frame = _follower_fetch()
    records = b"r" * records_bytes

    async def run() -> dict[str, float]:
        reader = asyncio.StreamReader(limit=1 << 30)
        reader.feed_data(frame * count)
        budget = RequestBytes(1 << 30)
        spent = {"read": 0.0, "decode": 0.0, "answer": 0.0, "encode": 0.0}
        for _ in range(count):
            t0 = time.thread_time()
            read = await read_request(reader, 1 << 20, budget, 600.0)
            assert read is not None
            t1 = time.thread_time()
            decode_request(read[0])
            t2 = time.thread_time()
            answer = fetch_response(FETCH_VERSION, 0, 0, 1, 5, 123_456 + 100, 0, records)
            t3 = time.thread_time()
            frame_response(answer, FETCH_VERSION, 99)
            t4 = time.thread_time()
            for step, began, ended in (
                ("read", t0, t1),
                ("decode", t1, t2),
                ("answer", t2, t3),
                ("encode", t3, t4),
            ):
                spent[step] += ended - began
        return {step: 1e6 * seconds / count for step, seconds in spent.items()}

    figures: dict[str, float | str] = dict(asyncio.run(run()))
    figures["codecs"] = CODEC_IMPLEMENTATION
    figures["bytes"] = len(frame) - 4
    return figures


def describe(records_bytes: int) -> str:
    f = request_path_us(records_bytes)
    total = sum(float(f[step]) for step in ("read", "decode", "answer", "encode"))
    return (
        f"request path per follower Fetch, in this process alone ({f['codecs']} codecs, a "
        f"{f['bytes']}-byte request, a {records_bytes:,}-byte records answer): {total:.0f} us = read "
        f"{float(f['read']):.0f} + decode {float(f['decode']):.0f} + answer built "
        f"{float(f['answer']):.0f} + encoded {float(f['encode']):.0f} us"
    )


if __name__ == "__main__":
    print(describe(32 * 1024))
