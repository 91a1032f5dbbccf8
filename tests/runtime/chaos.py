"""Chaos on real processes: 3 nodes, acks=-1 producers, kill -9 of a random node or the leader every few
seconds followed by a restart. Afterwards every acknowledged record must be in every node's log exactly
once and in each producer's order, all logs must agree record for record, and no node may have
stopped on its own.

    .venv/bin/python tests/runtime/chaos.py --seconds 600 [--dir DIR] [--seed N]   # the 10-minute run
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dumps import data_records  # noqa: E402
from kraftwire.node.runtime.client import ClientError  # noqa: E402
from kraftwire.node.runtime.local_cluster import LocalCluster  # noqa: E402
from kraftwire.node.runtime.producer import MetadataClient, ProduceRefused  # noqa: E402

SETTINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "controller.quorum.request.timeout.ms": 1000,
}


class Producer(threading.Thread):
    def __init__(self, name: str, cluster: LocalCluster, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.name, self.cluster, self.stop = name, cluster, stop
        self.acknowledged: list[bytes] = []
        self.uncertain = 0

    def run(self) -> None:
        n, client = 0, None
        while not self.stop.is_set():
            value = f"{self.name}-{n:07d}".encode()
            n += 1
            try:
                if client is None:
                    node = random.choice(self.cluster.ids)
                    client = MetadataClient(self.cluster.endpoints[node], deadline_s=5, timeout_s=3)
                client.produce([value], -1, timeout_ms=3000)
                self.acknowledged.append(value)
            except (ClientError, ProduceRefused, OSError):
                self.uncertain += 1  # the outcome is unknown: the value may or may not be committed
                if client is not None:
                    client.close()
                client = None
        if client is not None:
            client.close()


def run_chaos(directory: str, seconds: float, seed: int, producers: int = 2, log=print) -> None:
    rng = random.Random(seed)
    cluster = LocalCluster(directory, 3, settings=SETTINGS)
    cluster.format()
    stop = threading.Event()
    workers = [Producer(f"p{i}", cluster, stop) for i in range(producers)]
    kills = 0
    try:
        cluster.start_all()
        cluster.wait_for_leader()
        for worker in workers:
            worker.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(rng.uniform(2.0, 4.0))
            leader = cluster.leader()
            victim = leader[0] if leader and rng.random() < 0.5 else rng.choice(cluster.ids)
            cluster.kill(victim)
            kills += 1
            time.sleep(rng.uniform(0.2, 1.5))
            cluster.start(victim)
        stop.set()
        for worker in workers:
            worker.join(timeout=30)
        cluster.wait_for_leader()
        marker = MetadataClient(cluster.endpoints[cluster.leader()[0]], deadline_s=60)
        marker.produce([b"final-marker"], -1)
        marker.close()
        _wait_for_marker(cluster)
    finally:
        stop.set()
        crashed = [i for i, p in cluster.processes.items() if p.poll() is not None]
        cluster.stop_all()
    assert not crashed, f"nodes {crashed} stopped on their own; see their logs in {directory}"
    _check(cluster, workers, kills, log)


def _wait_for_marker(cluster: LocalCluster, timeout_s: float = 60) -> None:
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        if all(
            any(v == b"final-marker" for _, _, v in data_records(cluster.partition_dir(i)))
            for i in cluster.ids
        ):
            return
        time.sleep(0.5)
    raise AssertionError("not every node caught up with the final record")


def _check(cluster: LocalCluster, workers: list[Producer], kills: int, log) -> None:
    logs = {i: data_records(cluster.partition_dir(i)) for i in cluster.ids}
    reference = logs[cluster.ids[0]]
    for node, records in logs.items():
        assert records == reference, f"node {node}'s log differs from node {cluster.ids[0]}'s"
    counts = Counter(v for _, _, v in reference)
    acknowledged = [v for w in workers for v in w.acknowledged]
    missing = [v for v in acknowledged if counts[v] == 0]
    doubled = [v for v, c in counts.items() if c > 1]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"
    assert not doubled, f"records written twice: {doubled[:3]}"
    for worker in workers:
        mine = [v for _, _, v in reference if v.startswith(worker.name.encode() + b"-")]
        assert mine == sorted(mine), f"{worker.name}'s records are out of order"
    segments = sum(
        len(glob.glob(os.path.join(cluster.partition_dir(i), "*.log"))) for i in cluster.ids
    )
    log(
        f"chaos: {kills} kills, {len(acknowledged)} acknowledged records all present once and in order "
        f"on 3 nodes ({sum(w.uncertain for w in workers)} with unknown outcome), {len(reference)} data "
        f"records per log, {segments} segments"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir")
    args = parser.parse_args()
    if args.dir:
        run_chaos(args.dir, args.seconds, args.seed)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run_chaos(tmp, args.seconds, args.seed)
