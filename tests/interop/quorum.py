"""A controller quorum of real processes on 127.0.0.1 that mixes Apache Kafka's controllers
(``kafka.Kafka`` with ``process.roles=controller``) and kraftwire nodes (``kraftwire node start``).

Each member gets ``<root>/nodeN.properties``, ``<root>/nodeN/`` (its log directory, formatted by its
own kind's tool: Kafka's StorageTool or ``kraftwire storage format``) and ``<root>/nodeN.log`` (what
the process printed), kept for the failure report. Every process is stopped by its pid in
:meth:`MixedQuorum.stop_all`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_jars import KAFKA, SERVER, STORAGE_TOOL, java_command, run_tool
from kraftwire.node.runtime.admin import describe_quorum
from kraftwire.node.runtime.client import ClientError
from kraftwire.node.runtime.local_cluster import NodeProcesses, free_ports
from kraftwire.node.storage import random_uuid, uuid_to_str

LISTENER = "CONTROLLER"
HOST = "127.0.0.1"

# The timers of tests/runtime (fast enough for tests, slow enough for a shared 2-core machine), the
# same for both kinds so that neither wins elections by configuration.
TIMERS = {
    "controller.quorum.election.timeout.ms": 1000,
    "controller.quorum.fetch.timeout.ms": 2000,
    "controller.quorum.request.timeout.ms": 2000,
}

# Kafka-only settings: quick start, no waiting for brokers that will never come.
KAFKA_ONLY = {
    "log.dirs": None,  # filled per node
}


@dataclass
class Member:
    node_id: int
    kind: str  # "kafka" or "kraftwire"
    port: int
    directory_id: str
    voter: bool = True


class MixedQuorum(NodeProcesses):
    def __init__(
        self,
        root: Path,
        kinds: dict[int, str],
        dynamic: bool = True,
        observers: dict[int, str] | None = None,
        version: str = KAFKA,
        extra: dict[str, object] | None = None,
        kafka_extra: dict[str, object] | None = None,
        kraftwire_extra: dict[str, object] | None = None,
        node_extra: dict[int, dict[str, object]] | None = None,
    ) -> None:
        """``kinds``: node id -> "kafka" or "kraftwire" for the voters; ``observers`` the same for nodes
        formatted without initial controllers (dynamic quorums only); ``extra`` settings for every
        member (Kafka's names, so both kinds read them), ``kafka_extra`` and ``kraftwire_extra`` for one kind's only.
        """
        self.root = Path(root)
        self.dynamic = dynamic
        self.version = version
        self.extra = dict(extra or {})
        self.kafka_extra = dict(kafka_extra or {})
        self.kraftwire_extra = dict(kraftwire_extra or {})
        self.node_extra = dict(node_extra or {})
        every = {**kinds, **(observers or {})}
        ports = free_ports(len(every))
        self.members = {
            node: Member(node, kind, port, uuid_to_str(random_uuid()), node in kinds)
            for (node, kind), port in zip(sorted(every.items()), ports)
        }
        self.cluster_id = uuid_to_str(random_uuid())
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    # -- paths -------------------------------------------------------------------------------

    def config_path(self, node: int) -> Path:
        return self.root / f"node{node}.properties"

    def log_dir(self, node: int) -> Path:
        return self.root / f"node{node}"

    def partition_dir(self, node: int) -> Path:
        return self.log_dir(node) / "__cluster_metadata-0"

    def output(self, node: int) -> Path:
        return self.root / f"node{node}.log"

    def endpoint(self, node: int) -> str:
        return f"{HOST}:{self.members[node].port}"

    def bootstrap(self) -> str:
        return ",".join(self.endpoint(n) for n, m in self.members.items() if m.voter)

    def ids(self, kind: str | None = None) -> list[int]:
        return [n for n, m in self.members.items() if kind is None or m.kind == kind]

    # -- set-up ------------------------------------------------------------------------------

    def settings(self, node: int) -> dict[str, object]:
        member = self.members[node]
        common: dict[str, object] = {
            "node.id": node,
            "process.roles": "controller",
            "listeners": f"{LISTENER}://{self.endpoint(node)}",
            "controller.listener.names": LISTENER,
            **TIMERS,
        }
        if self.dynamic:
            common["controller.quorum.bootstrap.servers"] = self.bootstrap()
        else:
            voters = ",".join(f"{n}@{self.endpoint(n)}" for n, m in self.members.items() if m.voter)
            common["controller.quorum.voters"] = voters
        if member.kind == "kafka":
            kafka = {**KAFKA_ONLY, "log.dirs": str(self.log_dir(node))}
            return {
                **common,
                **kafka,
                **self.extra,
                **self.kafka_extra,
                **self.node_extra.get(node, {}),
            }
        own = {"metadata.log.dir": str(self.log_dir(node))}
        return {
            **common,
            **own,
            **self.extra,
            **self.kraftwire_extra,
            **self.node_extra.get(node, {}),
        }

    def write_config(self, node: int) -> None:
        text = "".join(f"{key}={value}\n" for key, value in self.settings(node).items())
        self.config_path(node).write_text(text)

    def initial_controllers(self) -> str:
        return ",".join(
            f"{n}@{self.endpoint(n)}:{m.directory_id}" for n, m in self.members.items() if m.voter
        )

    def format(self, node: int | None = None) -> None:
        """Format one member (or all) with its own kind's tool; dynamic quorums name the initial
        voters with their directory ids, so each voter's directory gets its listed id."""
        self.root.mkdir(parents=True, exist_ok=True)
        for n in [node] if node is not None else list(self.members):
            self.write_config(n)
            member = self.members[n]
            flags: list[str] = []
            if self.dynamic:
                if member.voter:
                    flags = ["--initial-controllers", self.initial_controllers()]
                else:
                    flags = ["--no-initial-controllers"]
            config = str(self.config_path(n))
            if member.kind == "kafka":
                run_tool(
                    STORAGE_TOOL,
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    config,
                    *flags,
                    version=self.version,
                )
            else:
                kraftwire_cli(
                    "storage", "format", "--config", config, "--cluster-id", self.cluster_id, *flags
                )
            written = read_meta(self.log_dir(n))["directory.id"]
            if member.voter and self.dynamic:
                assert written == member.directory_id, f"node {n} formatted as {written}"
            member.directory_id = written  # an observer's (or static voter's) is the tool's choice

    def hand_over(self, node: int, kind: str) -> None:
        """Let the other kind run a member whose directory its own kind formatted."""
        self.members[node].kind = kind
        self.write_config(node)

    # -- processes ---------------------------------------------------------------------------

    def start(self, node: int, *kraftwire_args: str) -> None:
        """Start a member's process; ``kraftwire_args`` go after a kraftwire node's ``--config``."""
        config = str(self.config_path(node))
        if self.members[node].kind == "kafka":
            command = java_command(
                SERVER, config, version=self.version, heap_mb=320, log_level="INFO"
            )
        else:
            command = [sys.executable, "-m", "kraftwire", "node", "start", "--config", config]
            command += kraftwire_args
        with open(self.output(node), "ab") as out:
            self.processes[node] = subprocess.Popen(
                command, stdout=out, stderr=out, stdin=subprocess.DEVNULL
            )

    def start_all(self) -> None:
        for node in self.members:
            self.start(node)

    # -- observing ---------------------------------------------------------------------------

    def describe(self, nodes: list[int] | None = None):
        """The DescribeQuorum answer of the first running member that gives one, else None."""
        for node in nodes or self.running():
            if node not in self.running():
                continue
            try:
                return describe_quorum(HOST, self.members[node].port)[1]
            except (ClientError, OSError):
                continue
        return None

    def leader(self) -> tuple[int, int, int] | None:
        """(leader id, epoch, high watermark) when a running member leads with a known HW."""
        answer = self.describe()
        if answer is None:
            return None
        partition = answer.topics[0].partitions[0]
        if partition.leader_id in self.running() and partition.high_watermark >= 0:
            return partition.leader_id, partition.leader_epoch, partition.high_watermark
        return None

    def wait_for_leader(
        self, timeout_s: float = 60.0, not_in: tuple[int, ...] = (), kind: str | None = None
    ) -> tuple[int, int, int]:
        stop = time.monotonic() + timeout_s
        while time.monotonic() < stop:
            found = self.leader()
            if found and found[0] not in not_in and (kind is None or self.kind(found[0]) == kind):
                return found
            time.sleep(0.2)
        raise TimeoutError(
            f"no leader (not in {not_in}, kind {kind}) in {timeout_s} s\n{self.tails()}"
        )

    def kind(self, node: int) -> str:
        return self.members[node].kind

    def tails(self, lines: int = 15) -> str:
        """The last lines each member printed, for a failing test's report."""
        parts = []
        for node in self.members:
            path = self.output(node)
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- node {node} ({self.kind(node)}) ---\n" + "\n".join(tail))
        return "\n".join(parts)


def read_meta(log_dir: Path) -> dict[str, str]:
    """A log directory's meta.properties as a dict."""
    lines = (log_dir / "meta.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def kraftwire_cli(*args: str, timeout_s: float = 60.0, check: bool = True):
    result = subprocess.run(
        [sys.executable, "-m", "kraftwire", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"kraftwire {' '.join(args)} exited {result.returncode}: {result.stderr}"
        )
    return result


def wait_until(condition, timeout_s: float = 60.0, what: str = "condition"):
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"{what} not met in {timeout_s} s")
