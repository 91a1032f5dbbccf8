"""CPU seconds per 10,000 committed records of each node of a three-node kraftwire quorum at fixed
offered rates, to four decimals: bench/raft.py's kraftwire step alone (no failover, no Kafka), for
comparing two trees' append paths run after run.

    .venv/bin/python bench/raft_cpu.py [--rates 20000,60000,135000] [--warmup 5 --window 10]
    ../old-tree/.venv/bin/python bench/raft_cpu.py --tree ../old-tree     # the other tree's nodes

``--tree``: the checkout whose bench (node process and driver) is run; its nodes import kraftwire as
the interpreter running this script does, so run it with that tree's own virtualenv. CPU time
(/proc utime + stime over the measured window), not wall clock, so that figures hold on a shared
machine; alternate the trees' runs all the same, the machine's load moves them by 10-20%.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--rates", default="20000,60000,135000", help="records/s, comma-separated")
    parser.add_argument("--record-size", type=int, default=256)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=10.0)
    args = parser.parse_args()
    try:
        rates = [int(rate) for rate in args.rates.split(",")]
    except ValueError:
        parser.error(
            f"--rates takes records/s as whole numbers separated by commas, not {args.rates!r}"
        )
    if min(rates) < 1 or args.record_size < 1 or args.warmup < 0 or args.window <= 0:
        parser.error("every rate and --record-size must be at least 1, --window above 0")
    if not (Path(args.tree) / "bench" / "raft.py").is_file():
        parser.error(f"--tree {args.tree}: no bench/raft.py there")
    sys.path.insert(0, str(Path(args.tree) / "bench"))
    import raft  # the tree's own bench/raft.py

    step = argparse.Namespace(
        record_size=args.record_size, warmup=args.warmup, window=args.window, quick=False
    )
    for rate in rates:
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as root:
            row = raft.kraftwire_step(Path(root), rate, step, 0)  # 0 failover trials
        leader = row["leader"]
        followers = " ".join(
            f"{cpu:.4f}" for node, cpu in sorted(row["cpu_per_10k"].items()) if node != leader
        )
        print(
            f"{Path(args.tree).name} at {rate:,}/s: {row['records_per_s']:,.0f} committed/s, p50 "
            f"{row['p50']:.1f} ms; CPU s per 10,000 records leader {row['cpu_per_10k'][leader]:.4f}, "
            f"followers {followers}; load average {load:.1f} -> {os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit(130)
    except (TimeoutError, RuntimeError) as exc:  # a quorum that did not start or lead, as raft.py
        raise SystemExit(f"bench/raft_cpu.py: {exc}")
