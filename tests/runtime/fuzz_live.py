"""Mutated frames of every API a node serves, at every node of a running 3-node quorum, while a client
writes with acks=-1. Each frame starts as a well-formed request (Vote, BeginQuorumEpoch, EndQuorumEpoch,
Fetch, FetchSnapshot, DescribeQuorum, DescribeCluster, AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter,
ApiVersions, Produce, ReadOffset) at a version the node serves, naming the right cluster id, a wrong one
or none, real voter ids and epochs near the current one; then it is sent as is or with bytes flipped,
an int32 or int64 overwritten with a boundary value (2^31-1, -1, ...), its body cut or extended, its
version changed. Afterwards every node process is alive, the quorum elects a leader and commits, and
every acknowledged record is in every node's log at the offset it was acknowledged at.

Voter changes use made-up directory ids, so they are refused (a real one would be a legitimate change
that anyone on an unauthenticated listener may make; see the README's Security section).

    .venv/bin/python tests/runtime/fuzz_live.py --frames 1000000 [--seed N]   # the 1M run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dumps import data_records  # noqa: E402
from kraftwire.generated import APIS, ProtocolError  # noqa: E402
from kraftwire.node.core import messages  # noqa: E402
from kraftwire.node.core.api import Endpoint, ReplicaKey, SnapshotId  # noqa: E402
from kraftwire.node.runtime import admin  # noqa: E402
from kraftwire.node.runtime.client import ClientError  # noqa: E402
from kraftwire.node.runtime.local_cluster import LocalCluster  # noqa: E402
from kraftwire.node.runtime.producer import (  # noqa: E402
    MetadataClient,
    ProduceRefused,
    client_fetch_request,
)
from kraftwire.node.runtime.wire import frame_request  # noqa: E402
from kraftwire.node.storage.layout import read_meta_properties  # noqa: E402
from kraftwire.records import encode_batch  # noqa: E402
from runtime_settings import TEST_SETTINGS  # noqa: E402

BOUNDARY_INT32 = (0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0, 1, 0x7FFFFFFE)
BOUNDARY_INT64 = (0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0)
ANSWER_S = 3.0  # how long a worker waits for an answer before it reconnects


class Target:
    """What an attacker on the network knows (DescribeCluster and DescribeQuorum tell anyone): the
    cluster id, the voters' ids, directory ids and endpoints."""

    def __init__(
        self, cluster_id: str, voters: dict[int, Endpoint], directories: dict[int, uuid.UUID]
    ) -> None:
        self.cluster_id = cluster_id
        self.voters = voters
        self.directories = directories

    @classmethod
    def of(cls, cluster: LocalCluster) -> "Target":
        directories = {
            i: read_meta_properties(cluster.log_dir(i)).directory_id for i in cluster.ids
        }
        return cls(cluster.cluster_id, dict(cluster.endpoints), directories)


def _templates(
    rng: random.Random, target: Target, cluster_id: str | None
) -> list[Callable[[], Any]]:
    """Builders of one well-formed request per served API."""
    ids = list(target.voters) + [99, -1, 0]

    def key() -> ReplicaKey:
        """A voter's real key half the time, else an id with a made-up directory id."""
        node = rng.choice(ids)
        if node in target.directories and rng.random() < 0.5:
            return ReplicaKey(node, target.directories[node])
        return ReplicaKey(node, uuid.UUID(int=rng.getrandbits(128)))

    def stranger() -> ReplicaKey:  # voter changes: never a real key, so always refused
        return ReplicaKey(rng.choice(ids), uuid.UUID(int=rng.getrandbits(128)))

    def epoch() -> int:
        return rng.choice([0, 1, 2, 3, 5, 10, 2**31 - 1])

    def offset() -> int:
        return rng.choice([0, 1, 5, 50, 10**6])

    endpoints = {"CONTROLLER": Endpoint("127.0.0.1", rng.randrange(1, 65536))}
    cid = cluster_id or ""
    batch = encode_batch([(None, b"fuzz", None, int(time.time() * 1000))])
    return [
        lambda: messages.vote_request(
            cid, key(), epoch(), key(), epoch(), offset(), rng.random() < 0.5
        ),
        lambda: messages.begin_quorum_epoch_request(
            cid, key(), rng.choice(ids), epoch(), endpoints
        ),
        lambda: messages.end_quorum_epoch_request(
            cid, rng.choice(ids), epoch(), [key(), key()], endpoints
        ),
        lambda: messages.fetch_request(
            cid, key(), epoch(), offset(), epoch(), rng.choice([0, 50]), 1 << 16, None
        ),
        lambda: messages.fetch_snapshot_request(
            cid, key(), epoch(), SnapshotId(offset(), epoch()), 0, 1 << 16
        ),
        lambda: messages.read_offset_request(cluster_id, key(), epoch()),
        lambda: messages.update_raft_voter_request(cid, epoch(), stranger(), endpoints, (0, 1)),
        lambda: messages.add_raft_voter_request(cid, stranger(), endpoints, 1000, True),
        lambda: messages.remove_raft_voter_request(cid, stranger()),
        messages.api_versions_request,
        admin.describe_quorum_request,
        admin.describe_cluster_request,
        lambda: client_fetch_request(15, offset(), epoch(), epoch(), 1 << 16, 0),
        lambda: _produce(batch),
    ]


def _produce(batch: bytes) -> Any:
    from kraftwire.generated import produce_request as pq

    topic = pq.TopicProduceData(
        name="__cluster_metadata", partition_data=[pq.PartitionProduceData(index=0, records=batch)]
    )
    return pq.ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[topic])


def _mutate(rng: random.Random, payload: bytearray) -> None:
    """One mutation of a request payload (header included), in place."""
    kind = rng.randrange(7)
    body = 8  # past api key, version and correlation id
    if kind == 0 or len(payload) <= body + 8:
        return  # sent as built
    at = rng.randrange(body, len(payload) - 8)
    if kind == 1:
        for _ in range(rng.randrange(1, 5)):
            payload[rng.randrange(body, len(payload))] ^= 1 << rng.randrange(8)
    elif kind == 2:
        struct.pack_into(">I", payload, at, rng.choice(BOUNDARY_INT32))
    elif kind == 3:
        struct.pack_into(">Q", payload, at, rng.choice(BOUNDARY_INT64))
    elif kind == 4:
        del payload[rng.randrange(body, len(payload)) :]
    elif kind == 5:
        payload[at:at] = rng.randbytes(rng.randrange(1, 16))
    else:
        struct.pack_into(">h", payload, 2, rng.randrange(-1, 20))


WRONG_CLUSTER_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def mutated_frames(rng: random.Random, target: Target, count: int, knows_cluster_id: bool = True):
    """``count`` frames: each a built request, perhaps mutated, with a size prefix that matches.
    Without ``knows_cluster_id`` every request that carries a cluster id names a wrong one."""
    made = 0
    choices = [target.cluster_id, target.cluster_id, WRONG_CLUSTER_ID, None]
    while made < count:
        cluster_id = rng.choice(choices) if knows_cluster_id else WRONG_CLUSTER_ID
        request = rng.choice(_templates(rng, target, cluster_id))()
        api = APIS[request.API_KEY]
        version = rng.randrange(api.lowest_version, api.highest_version + 1)
        try:
            frame = frame_request(request, version, rng.randrange(1 << 31), "fuzz-live")
        except (ProtocolError, ValueError, AttributeError, TypeError):
            continue  # a field this version cannot carry
        payload = bytearray(frame[4:])
        _mutate(rng, payload)
        made += 1
        yield struct.pack(">i", len(payload)) + bytes(payload)


class Tally:
    """What became of the frames sent: each was read by the node, which answered it or closed."""

    def __init__(self) -> None:
        self.sent = self.answered = self.closed = self.unanswered = 0
        self.connect_failures = 0  # connects refused or timed out (retried; no frame lost to them)

    def add(self, other: "Tally") -> None:
        for name in ("sent", "answered", "closed", "unanswered", "connect_failures"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


async def _worker(endpoint: Endpoint, frames: Iterator[bytes], tally: Tally) -> None:
    """Send frames one at a time, each only once the node has answered the last or closed the
    connection over it, so every frame counted reached the node's reader; reconnect after a close.
    """
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    for frame in frames:
        while connection is None:
            try:
                connection = await asyncio.wait_for(
                    asyncio.open_connection(endpoint.host, endpoint.port), 10
                )
            except (OSError, asyncio.TimeoutError) as exc:
                tally.connect_failures += 1
                if tally.connect_failures > 1000:
                    raise AssertionError(f"cannot connect to {endpoint}: {exc}") from None
                await asyncio.sleep(0.05)
        reader, writer = connection
        try:
            writer.write(frame)
            tally.sent += 1
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), ANSWER_S))[0]
            await asyncio.wait_for(reader.readexactly(size), ANSWER_S)
            tally.answered += 1
            continue
        except (OSError, asyncio.IncompleteReadError):
            tally.closed += 1
        except asyncio.TimeoutError:  # acks=0 Produce, or a request the node parks: start afresh
            tally.unanswered += 1
        writer.close()
        connection = None
    if connection is not None:
        connection[1].close()


async def fire(endpoints: list[Endpoint], frames: Iterator[bytes], workers: int = 24) -> Tally:
    tally = Tally()
    await asyncio.gather(
        *(_worker(endpoints[i % len(endpoints)], frames, tally) for i in range(workers))
    )
    return tally


def run_live_fuzz(
    directory: str,
    frames: int,
    seed: int,
    rounds: int = 10,
    knows_cluster_id: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """Fuzz a fresh 3-node quorum in ``directory``; raises AssertionError on a broken promise."""
    rng = random.Random(seed)
    cluster = LocalCluster(directory, 3, settings=TEST_SETTINGS)
    cluster.format()
    acknowledged: dict[int, bytes] = {}
    totals = Tally()
    start = time.monotonic()
    try:
        cluster.start_all()
        cluster.wait_for_leader()
        target = Target.of(cluster)
        endpoints = list(cluster.endpoints.values())
        per_round = max(1, frames // rounds)
        for round_ in range(rounds):
            frames_now = mutated_frames(rng, target, per_round, knows_cluster_id)
            totals.add(asyncio.run(fire(endpoints, frames_now)))
            dead = [i for i in cluster.ids if i not in cluster.running()]
            assert not dead, f"node(s) {dead} died in round {round_}; see {directory}/node*.log"
            value = f"acknowledged-{round_}".encode()
            acknowledged[_commit(cluster, value, round_)] = value
        leader, epoch = cluster.wait_for_leader(timeout_s=60)
        _wait_replicated(cluster, max(acknowledged) + 1)
    finally:
        cluster.stop_all()
    _check_every_node(cluster, acknowledged)
    summary = {
        "frames": totals.sent,
        "answered": totals.answered,
        "closed": totals.closed,
        "unanswered": totals.unanswered,
        "connect_failures": totals.connect_failures,
        "seconds": round(time.monotonic() - start),
        "acknowledged": len(acknowledged),
        "leader": leader,
        "epoch": epoch,
    }
    log(
        f"fuzz-live: {totals.sent} mutated frames read by 3 nodes in {summary['seconds']} s"
        f" ({totals.answered} answered, {totals.closed} closed their connection,"
        f" {totals.unanswered} unanswered in {ANSWER_S:.0f} s, {totals.connect_failures} connects"
        f" retried); every node alive, leader {leader} in"
        f" epoch {epoch}, {len(acknowledged)} acknowledged records on every node"
    )
    return summary


def _check_every_node(cluster: LocalCluster, acknowledged: dict[int, bytes]) -> None:
    """Every acknowledged record is in every node's log, at the offset it was acknowledged at."""
    for node in cluster.ids:
        log_values = {
            offset: value for offset, _, value in data_records(cluster.partition_dir(node))
        }
        lost = {o: v for o, v in acknowledged.items() if log_values.get(o) != v}
        assert not lost, f"node {node} lacks acknowledged records {lost}"


def _commit(cluster: LocalCluster, value: bytes, round_: int) -> int:
    """``value``'s offset, written with acks=-1 through the leader; AssertionError when the quorum
    has no leader or does not commit within a minute."""
    try:
        leader, _ = cluster.wait_for_leader(timeout_s=60)
        client = MetadataClient(cluster.endpoints[leader], deadline_s=60)
        try:
            return client.produce([value], -1)
        finally:
            client.close()
    except (TimeoutError, ClientError, ProduceRefused) as exc:
        raise AssertionError(f"the quorum stopped committing after round {round_}: {exc}") from None


def _wait_replicated(cluster: LocalCluster, end_offset: int, timeout_s: float = 60) -> None:
    """Until every node reports a log end at or past ``end_offset`` in DescribeQuorum."""
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        described = cluster.describe()
        if described is not None:
            partition = described[1].topics[0].partitions[0]
            ends = [v.log_end_offset for v in partition.current_voters]
            if len(ends) == len(cluster.ids) and min(ends) >= end_offset:
                return
        time.sleep(0.2)
    raise AssertionError(f"not every node reached offset {end_offset} within {timeout_s} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument(
        "--wrong-cluster-id", action="store_true", help="every cluster id sent is a wrong one"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_live_fuzz(
            os.path.join(tmp, "cluster"),
            args.frames,
            args.seed,
            args.rounds,
            knows_cluster_id=not args.wrong_cluster_id,
        )
