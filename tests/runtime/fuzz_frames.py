"""Bad frames at a running leader: random bytes, truncated headers, wrong sizes, valid headers with
garbage bodies, APIs and versions not served. Each closes only its own connection; the leader must
stay up and keep committing.

    .venv/bin/python tests/runtime/fuzz_frames.py --frames 100000 [--seed N]   # the 100k run
"""

from __future__ import annotations

import argparse
import asyncio
import random
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kraftwire.generated import lookup  # noqa: E402
from kraftwire.node.runtime.local_cluster import LocalCluster  # noqa: E402
from kraftwire.node.runtime.producer import MetadataClient  # noqa: E402
from kraftwire.node.runtime.wire import frame_request  # noqa: E402
from runtime_settings import TEST_SETTINGS  # noqa: E402


def bad_frames(rng: random.Random, count: int):
    vote = frame_request(lookup("VoteRequest")(cluster_id="x"), 2, 1, "fuzz")
    fetch = frame_request(lookup("FetchRequest")(), 17, 2, "fuzz")
    kinds = [
        lambda: rng.randbytes(rng.randrange(1, 200)),  # random bytes
        lambda: struct.pack(">i", 200 * 1024 * 1024) + b"\x00" * 16,  # over the 100 MiB cap
        lambda: struct.pack(">i", -rng.randrange(1, 1 << 31)),  # negative size
        lambda: struct.pack(">i", 3) + b"\x00\x34\x00",  # shorter than a request header
        lambda: vote[: rng.randrange(5, len(vote) - 1)],  # truncated frame
        lambda: vote[:12] + rng.randbytes(rng.randrange(1, 80)),  # header start, garbage body
        lambda: fetch[:4]
        + bytes(b ^ rng.randrange(256) if rng.random() < 0.1 else b for b in fetch[4:]),
        lambda: struct.pack(">ihhi", 10, rng.choice([3, 8, 11, 19, 22]), 1, 1)
        + b"\x00\x00",  # not served
        lambda: struct.pack(">ihhi", 10, 52, rng.randrange(3, 100), 1)
        + b"\x00\x00",  # version not served
        lambda: struct.pack(">i", len(vote) - 4 + 3)
        + vote[4:]
        + b"\x00\x00\x00",  # bytes left over
    ]
    for _ in range(count):
        yield rng.choice(kinds)()


async def _send(host: str, port: int, frame: bytes) -> None:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
    except (OSError, asyncio.TimeoutError):
        return
    try:
        writer.write(frame)
        writer.write_eof()
        await asyncio.wait_for(reader.read(), 10)  # until the node closes it
    except (OSError, asyncio.TimeoutError):
        pass
    finally:
        writer.close()


async def fire(host: str, port: int, frames, concurrency: int = 64) -> int:
    semaphore = asyncio.Semaphore(concurrency)
    sent = 0

    async def one(frame: bytes) -> None:
        async with semaphore:
            await _send(host, port, frame)

    tasks = []
    for frame in frames:
        tasks.append(asyncio.ensure_future(one(frame)))
        sent += 1
        if len(tasks) >= 1000:
            await asyncio.gather(*tasks)
            tasks = []
    await asyncio.gather(*tasks)
    return sent


def run_fuzz(directory: str, frames: int, seed: int, rounds: int = 10, log=print) -> None:
    rng = random.Random(seed)
    cluster = LocalCluster(directory, 3, settings=TEST_SETTINGS)
    cluster.format()
    try:
        cluster.start_all()
        leader, epoch = cluster.wait_for_leader()
        endpoint = cluster.endpoints[leader]
        client = MetadataClient(endpoint, deadline_s=60)
        start = time.monotonic()
        per_round = max(1, frames // rounds)
        offsets = []
        for _ in range(rounds):
            asyncio.run(fire(endpoint.host, endpoint.port, bad_frames(rng, per_round)))
            offsets.append(client.produce([b"still-committing"], -1))
        client.close()
        assert offsets == sorted(offsets) and len(set(offsets)) == rounds
        assert leader in cluster.running(), "the leader process died"
        assert cluster.leader() == (leader, epoch), "leadership moved during the fuzzing"
        log(
            f"fuzz: {per_round * rounds} bad frames at the leader in {time.monotonic() - start:.0f} s; "
            f"it stayed leader in epoch {epoch} and committed after every {per_round}"
        )
    finally:
        cluster.stop_all()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_fuzz(tmp, args.frames, args.seed)
