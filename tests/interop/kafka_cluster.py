"""A real Kafka cluster on 127.0.0.1 with kraftwire inside it: Kafka controllers and kraftwire nodes in
one metadata quorum (:class:`quorum.MixedQuorum`), plus one Kafka broker (``process.roles=broker``)
with its own PLAINTEXT listener that finds the controllers through
``controller.quorum.bootstrap.servers``.

Kafka's own clients move the data: ``TopicCommand``, ``ConsoleProducer`` and ``ConsoleConsumer`` from
the release's jars. Every kraftwire node writes a capture of its own
traffic (``kraftwire node start --capture``); the broker's output and config stay in the run's
directory beside the controllers'. Every process is stopped by its pid in :meth:`KafkaCluster.stop_all`.
"""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
import time
from pathlib import Path

from kafka_jars import KAFKA, SERVER, STORAGE_TOOL, java_command, run_tool
from quorum import HOST, LISTENER, MixedQuorum, kraftwire_cli, wait_until
from kraftwire.node.runtime.local_cluster import free_ports

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"

BROKER_ID = 100

# A one-broker cluster: internal topics with one replica, and no waiting for group members.
BROKER_ONLY = {
    "offsets.topic.replication.factor": 1,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "group.initial.rebalance.delay.ms": 0,
    "num.network.threads": 1,
    "num.io.threads": 2,
    "log.flush.interval.messages": 1,
}


class KafkaCluster(MixedQuorum):
    """The metadata quorum of :class:`MixedQuorum` plus one Kafka broker; kraftwire members capture
    their traffic to ``<root>/nodeN.pcapng`` and may get their own settings (``kraftwire_extra``).
    """

    def __init__(
        self,
        root: Path,
        kinds: dict[int, str],
        observers: dict[int, str] | None = None,
        version: str = KAFKA,
        kraftwire_extra: dict[str, object] | None = None,
        kafka_extra: dict[str, object] | None = None,
    ) -> None:
        super().__init__(root, kinds, dynamic=True, observers=observers, version=version)
        self.kraftwire_extra = dict(kraftwire_extra or {})
        self.kafka_extra = dict(kafka_extra or {})
        self.broker_port = free_ports(1)[0]
        self.broker: subprocess.Popen[bytes] | None = None
        self.loopback = None  # a traffic.LoopbackCapture of the Kafka processes' ports, if any

    # -- paths ---------------------------------------------------------------------------------

    def capture(self, node: int) -> Path:
        return self.root / f"node{node}.pcapng"

    def broker_dir(self) -> Path:
        return self.root / f"broker{BROKER_ID}"

    def broker_config(self) -> Path:
        return self.root / f"broker{BROKER_ID}.properties"

    def broker_output(self) -> Path:
        return self.root / f"broker{BROKER_ID}.log"

    def kafka_ports(self) -> list[int]:
        """The listening ports of the Kafka processes: the controllers' and the broker's."""
        return [m.port for m in self.members.values() if m.kind == "kafka"] + [self.broker_port]

    def bootstrap_server(self) -> str:
        return f"{HOST}:{self.broker_port}"

    # -- set-up --------------------------------------------------------------------------------

    def settings(self, node: int) -> dict[str, object]:
        base = super().settings(node)
        if self.kind(node) == "kraftwire":
            return {**base, **self.kraftwire_extra}
        return {**base, **self.kafka_extra}

    def broker_settings(self) -> dict[str, object]:
        return {
            "node.id": BROKER_ID,
            "process.roles": "broker",
            "listeners": f"PLAINTEXT://{self.bootstrap_server()}",
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap_server()}",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": LISTENER,
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{LISTENER}:PLAINTEXT",
            "controller.quorum.bootstrap.servers": self.bootstrap(),
            "log.dirs": str(self.broker_dir()),
            **BROKER_ONLY,
        }

    def format(self, node: int | None = None) -> None:
        """Every member and the broker at once (each format is a JVM start, seconds on a busy machine)."""
        if node is not None:
            super().format(node)
            return
        self.root.mkdir(parents=True, exist_ok=True)
        format_one = super().format  # zero-argument super() does not reach into a comprehension
        with concurrent.futures.ThreadPoolExecutor(len(self.members) + 1) as pool:
            done = [pool.submit(format_one, n) for n in self.members]
            done.append(pool.submit(self.format_broker))
            for future in done:
                future.result()

    def format_broker(self) -> None:
        text = "".join(f"{k}={v}\n" for k, v in self.broker_settings().items())
        self.broker_config().write_text(text)
        run_tool(
            STORAGE_TOOL,
            "format",
            "-t",
            self.cluster_id,
            "-c",
            str(self.broker_config()),
            version=self.version,
        )

    # -- processes -----------------------------------------------------------------------------

    def start(self, node: int) -> None:
        if self.kind(node) == "kafka":
            super().start(node)
            return
        command = [
            sys.executable,
            "-m",
            "kraftwire",
            "node",
            "start",
            "--config",
            str(self.config_path(node)),
            "--capture",
            str(self.capture(node)),
        ]
        with open(self.output(node), "ab") as out:
            self.processes[node] = subprocess.Popen(
                command, stdout=out, stderr=out, stdin=subprocess.DEVNULL
            )

    def start_broker(self) -> None:
        command = java_command(
            SERVER, str(self.broker_config()), version=self.version, heap_mb=384, log_level="INFO"
        )
        with open(self.broker_output(), "ab") as out:
            self.broker = subprocess.Popen(
                command, stdout=out, stderr=out, stdin=subprocess.DEVNULL
            )

    def wait_for_broker(self, timeout_s: float = 120.0) -> None:
        """Until the broker says it started (registered with the active controller and serving)."""
        started = f"[BrokerServer id={BROKER_ID}] Transition from STARTING to STARTED"
        wait_for(
            lambda: started in self.broker_output().read_text(errors="replace"),
            timeout_s,
            "the broker started",
            self,
        )

    def stop_all(self, graceful_s: float = 10.0) -> None:
        """The broker first (it deregisters through the active controller), then the quorum."""
        broker = self.broker
        if broker is not None and broker.poll() is None:
            broker.terminate()
            try:
                broker.wait(timeout=graceful_s)
            except subprocess.TimeoutExpired:
                broker.kill()
                broker.wait(timeout=30)
        super().stop_all(graceful_s)

    def tails(self, lines: int = 15) -> str:
        text = super().tails(lines)
        if self.broker_output().exists():
            tail = self.broker_output().read_text(errors="replace").splitlines()[-lines:]
            text += f"\n--- broker {BROKER_ID} ---\n" + "\n".join(tail)
        return text

    # -- Kafka's clients -----------------------------------------------------------------------

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Create ``topic`` through the broker, retrying while the broker is still registering."""

        def attempt() -> bool:
            result = run_tool(
                TOPIC_COMMAND,
                "--bootstrap-server",
                self.bootstrap_server(),
                "--create",
                "--if-not-exists",
                "--topic",
                topic,
                "--partitions",
                str(partitions),
                "--replication-factor",
                "1",
                "--command-config",
                str(self.client_config()),
                version=self.version,
                timeout_s=60,
                check=False,
            )
            return result.returncode == 0

        wait_until(attempt, 90, f"topic {topic} created")

    def client_config(self) -> Path:
        """Short client timeouts, so a tool that cannot reach the broker ends within the test's bounds."""
        path = self.root / "client.properties"
        if not path.exists():
            path.write_text("request.timeout.ms=10000\ndefault.api.timeout.ms=20000\n")
        return path

    def produce(self, topic: str, lines: list[str]) -> None:
        run_client(
            CONSOLE_PRODUCER,
            "--bootstrap-server",
            self.bootstrap_server(),
            "--topic",
            topic,
            "--command-property",
            "acks=all",
            version=self.version,
            stdin_text="".join(f"{line}\n" for line in lines),
        )

    def consume(self, topic: str, count: int) -> list[str]:
        """The first ``count`` values of partition 0 of ``topic``, read by a consumer that joins no
        group (so no offsets topic is created for it)."""
        result = run_tool(
            CONSOLE_CONSUMER,
            "--bootstrap-server",
            self.bootstrap_server(),
            "--topic",
            topic,
            "--partition",
            "0",
            "--offset",
            "earliest",
            "--max-messages",
            str(count),
            "--timeout-ms",
            "30000",
            "--command-config",
            str(self.client_config()),
            version=self.version,
            timeout_s=90,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(f"{CONSOLE_CONSUMER} exited {result.returncode}: {result.stderr}")
        return result.stdout.splitlines()

    # -- the metadata log ----------------------------------------------------------------------

    def segments(self, node: int) -> list[Path]:
        return sorted(self.partition_dir(node).glob("*.log"))


def run_client(
    main_class: str, *args: str, version: str, stdin_text: str, timeout_s: float = 90.0
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's clients with ``stdin_text`` as its input (the console producer's records)."""
    result = subprocess.run(
        java_command(main_class, *args, version=version, heap_mb=192),
        input=stdin_text,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    # The console producer logs a failed send and still exits 0.
    if result.returncode != 0 or "Error when sending message" in result.stderr:
        raise AssertionError(f"{main_class} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return result


def wait_for(condition, timeout_s: float, what: str, cluster: KafkaCluster):
    try:
        return wait_until(condition, timeout_s, what)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}\n{cluster.tails()}") from None


def kraftwire_dump(path: Path, *flags: str) -> str:
    return kraftwire_cli("dump-log", *flags, str(path)).stdout


def elapsed(start: float) -> float:
    return round(time.monotonic() - start, 1)
