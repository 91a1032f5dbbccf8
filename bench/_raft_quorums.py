"""The two three-node quorums bench/raft.py compares, on 127.0.0.1, with the same timers and workload:

* :class:`KafkaQuorum`: three ``kafka.tools.TestRaftServer`` processes (Apache Kafka's Raft
  throughput server) with a static ``controller.quorum.voters``; the leader appends to
  ``__raft_performance_test-0``. It serves no DescribeQuorum, so the leader and the first commit of
  an epoch are read from its INFO log (``High watermark set to ... for the first time for epoch E``
  from ``LeaderState``, with the log line's millisecond time stamp);
* :class:`KraftwireQuorum`: three bench/_raft_kraftwire_server.py processes (a KRaftNode each,
  formatted by LocalCluster) that print the same marks themselves.

Both expose: ``start_all``, ``start(node)``, ``kill(node)``, ``stop_all``, ``pids``,
``wait_leader(after_epoch, not_in)`` -> (node, epoch, wall time of the epoch's first commit),
``wait_follower(node, epoch)`` and ``partition_dir(node)``. Every process is stopped by its pid.
"""

from __future__ import annotations

import base64
import datetime
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _raft_procs import Output, kill, stop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))

from kafka_jars import INTEROP, JVM_FLAGS, TEST_RAFT_SERVER, classpath  # noqa: E402
from kraftwire.node.runtime.local_cluster import LocalCluster, free_ports  # noqa: E402

HOST = "127.0.0.1"
SERVER = Path(__file__).resolve().parent / "_raft_kraftwire_server.py"

# kafka-run-class.sh's default JVM performance options; the heap is kafka-server-start.sh's default
# (-Xmx1G -Xms1G) unless --kafka-heap-mb says otherwise. The interop tests' flags (serial GC, client
# compiler only) are used by --quick alone (they start a JVM sooner): they would handicap a long run.
KAFKA_JVM = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
    f"-Dlog4j2.configurationFile={INTEROP / 'log4j2.yaml'}",
    "-Dkraftwire.log.level=INFO",
)
_KAFKA_COMMIT = re.compile(
    r"^\[([\d-]+ [\d:,]+)\] INFO \[RaftManager id=(\d+)\] High watermark set to .* for the first "
    r"time for epoch (\d+) .*\(org\.apache\.kafka\.raft\.(Leader|Follower)State\)"
)
_KRAFTWIRE_MARK = re.compile(r"^(LEADER|FOLLOWER) epoch=(\d+) hw_time=([\d.]+)")


class _Quorum:
    kind = ""

    def __init__(self, root: Path, rate: int, size: int, timers: dict[str, int]) -> None:
        self.root = root
        self.rate, self.size, self.timers = rate, size, timers
        self.ids = [1, 2, 3]
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self.outputs: dict[int, Output] = {}

    def output_path(self, node: int) -> Path:
        return self.root / f"node{node}.out"

    def command(self, node: int) -> list[str]:
        raise NotImplementedError

    def marks(self, node: int) -> list[tuple[str, int, float]]:
        """(role, epoch, wall time of the epoch's first known high watermark) the node printed."""
        raise NotImplementedError

    def start(self, node: int) -> None:
        path = self.output_path(node)
        self.outputs[node] = Output(path)
        with open(path, "ab") as out:
            self.processes[node] = subprocess.Popen(
                self.command(node), stdout=out, stderr=out, stdin=subprocess.DEVNULL
            )

    def start_all(self) -> None:
        for node in self.ids:
            self.start(node)

    def kill(self, node: int) -> None:
        kill(self.processes[node])

    def stop_all(self, graceful_s: float = 10.0) -> None:
        stop(list(self.processes.values()), graceful_s)

    def pids(self) -> dict[int, int]:
        return {n: p.pid for n, p in self.processes.items() if p.poll() is None}

    def wait_leader(
        self, timeout_s: float = 120.0, after_epoch: int = -1, not_in: tuple[int, ...] = ()
    ) -> tuple[int, int, float]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [
                (epoch, node, at)
                for node in self.ids
                if node not in not_in and self.processes[node].poll() is None
                for role, epoch, at in self.marks(node)
                if role == "LEADER" and epoch > after_epoch
            ]
            if found:
                epoch, node, at = max(found)
                return node, epoch, at
            self._check_alive()
            time.sleep(0.05)
        raise TimeoutError(
            f"{self.kind}: no leader after epoch {after_epoch} in {timeout_s} s\n{self.tails()}"
        )

    def wait_follower(self, node: int, epoch: int, timeout_s: float = 120.0) -> None:
        """Until ``node`` (restarted) follows with a known high watermark in ``epoch`` or later."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(e >= epoch for _, e, _ in self.marks(node)):
                return
            self._check_alive()
            time.sleep(0.1)
        raise TimeoutError(f"{self.kind}: node {node} did not rejoin epoch {epoch}\n{self.tails()}")

    def tails(self, lines: int = 8) -> str:
        """The last lines each node printed, for the error that stops the bench."""
        return "\n".join(
            f"--- {self.kind} node {node} ---\n" + "\n".join(out.lines()[-lines:])
            for node, out in self.outputs.items()
        )

    def _check_alive(self) -> None:
        for node, process in self.processes.items():
            if process.returncode not in (None, -9) and process.poll() is not None:
                tail = "\n".join(self.outputs[node].lines()[-10:])
                raise RuntimeError(f"{self.kind} node {node} exited {process.returncode}:\n{tail}")


class KafkaQuorum(_Quorum):
    kind = "Kafka"

    def __init__(
        self,
        root: Path,
        rate: int,
        size: int,
        timers: dict[str, int],
        heap_mb: int,
        quick_jvm: bool = False,
    ):
        super().__init__(root, rate, size, timers)
        self.heap_mb = heap_mb
        self.jvm = (*JVM_FLAGS, "-Dkraftwire.log.level=INFO") if quick_jvm else KAFKA_JVM
        self.classpath = classpath()
        self.ports = dict(zip(self.ids, free_ports(3)))
        # TestRaftServer needs a replica directory id; Kafka rejects the all-zero one.
        self.directory_ids = {n: _random_directory_id() for n in self.ids}
        root.mkdir(parents=True, exist_ok=True)
        voters = ",".join(f"{n}@{HOST}:{p}" for n, p in self.ports.items())
        for node, port in self.ports.items():
            settings = {
                "node.id": node,
                "process.roles": "controller",
                "listeners": f"CONTROLLER://{HOST}:{port}",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.voters": voters,
                "log.dirs": self.log_dir(node),
                **timers,
            }
            text = "".join(f"{k}={v}\n" for k, v in settings.items())
            (root / f"node{node}.properties").write_text(text)

    def log_dir(self, node: int) -> Path:
        return self.root / f"node{node}"

    def partition_dir(self, node: int) -> Path:
        return self.log_dir(node) / "__raft_performance_test-0"

    def command(self, node: int) -> list[str]:
        heap = f"-Xmx{self.heap_mb}m", f"-Xms{self.heap_mb}m"
        return ["java", *heap, *self.jvm, "-cp", self.classpath, TEST_RAFT_SERVER]\
            + ["--config", str(self.root / f"node{node}.properties")]\
            + ["--throughput", str(self.rate), "--record-size", str(self.size)]\
            + ["--replica-directory-id", self.directory_ids[node]]  # fmt: skip

    def marks(self, node: int) -> list[tuple[str, int, float]]:
        found = []
        for line in self.outputs[node].lines():
            match = _KAFKA_COMMIT.match(line)
            if match:
                stamp = datetime.datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f")
                role = "LEADER" if match[4] == "Leader" else "FOLLOWER"
                found.append((role, int(match[3]), stamp.timestamp()))
        return found

    def throughput_lines(self, node: int) -> list[str]:
        return [l for l in self.outputs[node].lines() if l.startswith("Throughput (bytes/second)")]


class KraftwireQuorum(_Quorum):
    kind = "kraftwire"

    def __init__(
        self, root: Path, rate: int, size: int, timers: dict[str, int], warmup: float, window: float
    ):
        super().__init__(root, rate, size, timers)
        self.warmup, self.window = warmup, window
        self.cluster = LocalCluster(str(root), 3, settings=dict(timers))
        self.cluster.format()

    def partition_dir(self, node: int) -> Path:
        return Path(self.cluster.partition_dir(node))

    def command(self, node: int) -> list[str]:
        return [sys.executable, str(SERVER), "--config", self.cluster.config_path(node)]\
            + ["--throughput", str(self.rate), "--record-size", str(self.size)]\
            + ["--warmup", str(self.warmup), "--window", str(self.window)]  # fmt: skip

    def marks(self, node: int) -> list[tuple[str, int, float]]:
        found = []
        for line in self.outputs[node].lines():
            match = _KRAFTWIRE_MARK.match(line)
            if match:
                found.append((match[1], int(match[2]), float(match[3])))
        return found


def _random_directory_id() -> str:
    """A random replica directory id in Kafka's text form (URL-safe base64, no padding)."""
    while True:
        raw = uuid.uuid4().bytes
        if raw != bytes(16):
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")
