"""Where a kraftwire node's resident memory goes, under bench/raft.py's workload (not a timed test).

    .venv/bin/python bench/raft_memory.py [--rate 2000] [--record-size 256] [--warmup 5]
                                          [--window 10] [--trace]

Three bench/_raft_kraftwire_server.py nodes (through bench/_raft_memory_probe.py) run as
bench/raft.py's fixed-rate step runs them: the leader appends ``--record-size``-byte records at
``--rate`` records/s, linger 25 ms, fsync; bench/raft.py reads VmRSS at the end of its window,
``--warmup`` + ``--window`` seconds after the leader is known, plus the few seconds until the
leader prints its window's figures. This prints, per node, when the leader is known and then:
VmRSS, CPU seconds so far (user+sys), modules loaded, the log held (batches, records, encoded MiB,
MiB of objects reachable from the log), and the median VmRSS at the end, the figure bench/raft.py
compares with Kafka's. ``--trace`` adds tracemalloc's top files and lines per
node at the end (tracemalloc itself makes the process bigger and slower: use it to see where, not
how much). First, a node's import cost alone: VmRSS and modules after importing the runtime.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _raft_procs import cpu_seconds  # noqa: E402
from _raft_quorums import KraftwireQuorum  # noqa: E402

PROBE = Path(__file__).resolve().parent / "_raft_memory_probe.py"
TIMERS = {
    "controller.quorum.election.timeout.ms": 1000,
    "controller.quorum.fetch.timeout.ms": 2000,
    "controller.quorum.request.timeout.ms": 2000,
}
_IMPORT_ONLY = (
    "import os, sys, kraftwire.node.runtime, _raft_memory_probe as p; "
    "print(f'{p.rss_mb(os.getpid()):.1f} MiB, {len(sys.modules)} modules')"
)


class ProbedQuorum(KraftwireQuorum):
    def __init__(self, root: Path, args: argparse.Namespace) -> None:
        super().__init__(root, args.rate, args.record_size, TIMERS, args.warmup, args.window)
        self.trace = args.trace

    def report_path(self, node: int) -> Path:
        return self.root / f"node{node}.memory.json"

    def command(self, node: int) -> list[str]:
        server = super().command(node)[2:]  # the server's own arguments
        trace = ["--trace"] if self.trace else []
        return [sys.executable, str(PROBE), "--report", str(self.report_path(node)), *trace]\
            + ["--", *server]  # fmt: skip

    def reports(self) -> dict[int, dict]:
        """Ask every node for its report and read them back."""
        for node, pid in self.pids().items():
            self.report_path(node).unlink(missing_ok=True)
            os.kill(pid, signal.SIGUSR1)
        found: dict[int, dict] = {}
        cpu = {node: cpu_seconds(pid) for node, pid in self.pids().items()}
        deadline = time.monotonic() + 30
        while len(found) < len(self.pids()) and time.monotonic() < deadline:
            for node in self.pids():
                path = self.report_path(node)
                if node not in found and path.exists():
                    found[node] = {**json.loads(path.read_text()), "cpu_s": cpu[node]}
            time.sleep(0.1)
        return found


def describe(node: int, leader: int, report: dict) -> str:
    role = "leader  " if node == leader else "follower"
    line = f"  node {node} {role} VmRSS {report['rss_mib']:5.1f} MiB, CPU {report['cpu_s']:5.2f} s"
    line += f", {report['modules']} modules"
    log = report.get("log")
    if log:
        line += (
            f"; log {log['batches']} batches, {log['records']} records, "
            f"{log['encoded_mib']:.2f} MiB encoded, {log['reachable_mib']:.2f} MiB reachable"
        )
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--record-size", type=int, default=256)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args()
    if args.rate < 1 or args.record_size < 1 or args.warmup < 0 or args.window <= 0:
        parser.error(
            "--rate and --record-size must be at least 1, --warmup at least 0, --window above 0"
        )
    here = str(Path(__file__).resolve().parent)
    imported = subprocess.run(
        [sys.executable, "-c", _IMPORT_ONLY], capture_output=True, text=True, cwd=here, check=True
    )
    print(f"import kraftwire.node.runtime alone: {imported.stdout.strip()}")
    with tempfile.TemporaryDirectory(prefix="raft-memory-") as root:
        quorum = ProbedQuorum(Path(root), args)
        try:
            quorum.start_all()
            leader, _, _ = quorum.wait_leader()
            # bench/raft.py reads VmRSS once the leader printed its window's figures, which it
            # does min(5, window) seconds after the window closes
            end = args.warmup + args.window + min(5.0, args.window)
            moments = [("leader known", 0.0), ("as bench/raft.py reads it", end)]
            began = time.monotonic()
            for name, at in moments:
                time.sleep(max(0.0, began + at - time.monotonic()))
                reports = quorum.reports()
                print(f"{name} ({time.monotonic() - began:.0f} s after):")
                for node in sorted(reports):
                    print(describe(node, leader, reports[node]))
            median = statistics.median(r["rss_mib"] for r in reports.values())
            print(f"median VmRSS then: {median:.1f} MiB (load {os.getloadavg()[0]:.1f})")
            for node in sorted(reports) if args.trace else ():
                print(
                    f"node {node}: {reports[node]['traced_mib']:.1f} MiB traced; top files, lines:"
                )
                for line in reports[node]["by_file"] + reports[node]["by_line"]:
                    print("   ", line)
        finally:
            quorum.stop_all(5.0)


if __name__ == "__main__":
    main()
