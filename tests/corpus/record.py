"""Record the capture corpus of real Kafka clients on loopback: ``make corpus``.

Starts Apache Kafka 4.4.0 on 127.0.0.1 (one controller and one broker, the harness of
tests/interop), captures each client's traffic to the broker with tcpdump into a pcap of its own,
and the broker's traffic to the controller (registration, heartbeats, the metadata log's Raft
Fetch, forwarded CreateTopics) into ``kraft.pcap``, and stops every process by its pid. Then three
Kafka controllers elect a leader and, once it is stopped, another (``kraft-quorum.pcap``).

It writes into ``tests/corpus/data/``: the captures, the broker's log segments of the produced
topics (``segments/TOPIC-PARTITION/00000000000000000000.log``, for the DumpLogSegments check) and
``manifest.json`` (ports, clients, and what each client said it did).

Needs Java, ``make kafka`` (the 4.4.0 class path), tcpdump with the right to capture, and the
corpus extra's kafka-python and confluent-kafka. The output replaces only the files it names.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "interop"))

from kafka_cluster import BROKER_ID, KafkaCluster  # noqa: E402
from kafka_jars import KAFKA, java_command, missing  # noqa: E402
from quorum import MixedQuorum  # noqa: E402
from traffic import LoopbackCapture  # noqa: E402

DATA = HERE / "data"
CLIENTS_SOURCE = HERE / "CorpusClients.java"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CLIENT_TIMEOUT_S = 180.0
# The broker's traffic to the controller is captured from its start to the end of this client's run:
# registration, the metadata log's first records, the topics made so far (the transaction state
# topic among them); after that it is heartbeats and empty long polls, which only grow the file.
KRAFT_UNTIL = "java-transactional"

# The broker of tests/interop plus what the corpus needs: topics made on first use with two
# partitions, and quick heartbeats for the consumer-protocol group (its rebalances take seconds).
CORPUS_BROKER = {
    "num.partitions": 2,
    "auto.create.topics.enable": "true",
    "group.consumer.heartbeat.interval.ms": 1000,
    "group.consumer.min.heartbeat.interval.ms": 1000,
}


class CorpusCluster(KafkaCluster):
    def broker_settings(self) -> dict[str, object]:
        return {**super().broker_settings(), **CORPUS_BROKER}


def scenarios() -> list[tuple[str, list[str], list[str]]]:
    """(capture name, command after the bootstrap server, topics it produces to) of each client run;
    "java" commands run CorpusClients.java, "python" ones python_clients.py."""
    runs = [
        (f"java-produce-{codec}", ["java", "produce", f"corpus-{codec}", codec, "plain"])
        for codec in CODECS
    ]
    runs += [
        ("java-idempotent", ["java", "produce", "corpus-idempotent", "zstd", "idempotent"]),
        ("java-transactional", ["java", "produce", "corpus-txn", "none", "transactional"]),
        ("java-group-classic", ["java", "group", "corpus-group-classic", "classic"]),
        ("java-group-consumer", ["java", "group", "corpus-group-consumer", "consumer"]),
        ("java-admin", ["java", "admin", "corpus-admin"]),
        ("kafka-python", ["python", "kafka-python", "corpus-kafka-python"]),
        ("kafka-python-2.5", ["python", "kafka-python-2.5", "corpus-kafka-python-25"]),
        ("confluent-kafka", ["python", "confluent-kafka", "corpus-librdkafka"]),
    ]
    # The admin run deletes its topic: no segment of it is left to compare.
    return [(name, command, [] if "admin" in command else [command[2]]) for name, command in runs]


def client_command(command: list[str], bootstrap: str) -> list[str]:
    kind, mode, *rest = command
    if kind == "java":
        return java_command(str(CLIENTS_SOURCE), mode, bootstrap, *rest, heap_mb=256)
    return [sys.executable, str(HERE / "python_clients.py"), mode, bootstrap, *rest]


def run_client(command: list[str]) -> dict:
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(
            f"{' '.join(command[-4:])} exited {result.returncode}:\n{result.stderr[-3000:]}"
        )
    return json.loads(lines[-1])


def settle(capture: LoopbackCapture, quiet_s: float = 1.0, timeout_s: float = 15.0) -> None:
    """Stop ``capture`` once its file has stopped growing: tcpdump drops what the kernel still
    holds for it when it is stopped, and on a busy machine it runs behind the clients."""
    stop = time.monotonic() + timeout_s
    size, since = -1, time.monotonic()
    while time.monotonic() < stop:
        now = capture.path.stat().st_size if capture.path.exists() else 0
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        time.sleep(0.1)
    capture.stop()


def record_quorum(root: Path, out: Path) -> dict:
    """Three Kafka controllers elect a leader (Vote, BeginQuorumEpoch, Fetch); the leader is
    stopped with SIGTERM, resigns (EndQuorumEpoch) and the other two elect another. The capture's
    manifest entry: ``kraft-quorum.pcap`` with the controllers' ports and the two leaders."""
    quorum = MixedQuorum(root / "quorum", {1: "kafka", 2: "kafka", 3: "kafka"})
    ports = [member.port for member in quorum.members.values()]
    capture = LoopbackCapture(out / "kraft-quorum.pcap", ports)
    try:
        quorum.format()
        capture.start()
        quorum.start_all()
        first, first_epoch, _ = quorum.wait_for_leader(timeout_s=120)
        time.sleep(2)  # a few rounds of Fetch from both followers
        quorum.kill(first, signal.SIGTERM)
        second, second_epoch, _ = quorum.wait_for_leader(timeout_s=120, not_in=(first,))
        time.sleep(2)
    finally:
        quorum.stop_all()
        settle(capture)
    truth = {
        "leader": first,
        "epoch": first_epoch,
        "next_leader": second,
        "next_epoch": second_epoch,
    }
    print(f"kraft-quorum: {truth}", flush=True)
    return {"file": "kraft-quorum.pcap", "ports": ports, "truth": truth}


def record(root: Path) -> dict:
    """Run the cluster and every client; the captures and segments go to ``root``'s out/."""
    out = root / "out"
    (out / "segments").mkdir(parents=True)
    cluster = CorpusCluster(root / "cluster", {1: "kafka"})
    controller_port = cluster.members[1].port
    manifest: dict = {
        "kafka": KAFKA,
        "broker_port": cluster.broker_port,
        "controller_port": controller_port,
        "captures": [],
        "segments": {},
    }
    kraft = LoopbackCapture(out / "kraft.pcap", [controller_port])
    try:
        cluster.format()
        cluster.start_all()
        cluster.wait_for_leader(timeout_s=120)
        kraft.start()
        cluster.start_broker()
        cluster.wait_for_broker()
        produced: list[str] = []
        for name, command, topics in scenarios():
            started = time.monotonic()
            capture = LoopbackCapture(out / f"{name}.pcap", [cluster.broker_port])
            capture.start()
            try:
                truth = run_client(client_command(command, cluster.bootstrap_server()))
            finally:
                settle(capture)
            produced += topics
            manifest["captures"].append(
                {"file": f"{name}.pcap", "ports": [cluster.broker_port], "truth": truth}
            )
            print(f"{name}: {truth} ({time.monotonic() - started:.1f} s)", flush=True)
            if name == KRAFT_UNTIL:
                settle(kraft)
        manifest["captures"].append(
            {"file": "kraft.pcap", "ports": [controller_port], "truth": {"broker": BROKER_ID}}
        )
    finally:
        kraft.stop()
        cluster.stop_all()
    manifest["captures"].append(record_quorum(root, out))
    for directory in sorted(cluster.broker_dir().iterdir()):
        if directory.name.rpartition("-")[0] not in produced:  # TOPIC-PARTITION
            continue
        for log in sorted(directory.glob("*.log")):
            # Kafka's layout (DumpLogSegments reads the base offset from the file's name)
            name = f"segments/{log.parent.name}/{log.name}"
            (out / name).parent.mkdir(exist_ok=True)
            shutil.copy(log, out / name)
            manifest["segments"].setdefault(log.parent.name, []).append(name)
    return manifest


def install(out: Path, manifest: dict) -> None:
    """Replace the corpus's files in DATA with the new ones (others there are left alone)."""
    names = [entry["file"] for entry in manifest["captures"]]
    names += [name for logs in manifest["segments"].values() for name in logs]
    for name in names:
        (DATA / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(out / name, DATA / name)
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    (DATA / "manifest.json").write_text(text)


def main(argv: list[str] | None = None) -> int:
    # No options: an argument given by mistake stops here rather than starting a recording that
    # replaces the committed corpus.
    argparse.ArgumentParser(
        prog="record.py", description=__doc__.partition("\n\n")[0].replace("``", "")
    ).parse_args(argv)
    reason = missing(KAFKA)
    if reason is not None:
        print(f"record: {reason}", file=sys.stderr)
        return 1
    if shutil.which("tcpdump") is None:
        print("record: tcpdump is not installed", file=sys.stderr)
        return 1
    root = Path(tempfile.mkdtemp(prefix="kraftwire-corpus-"))
    try:
        manifest = record(root)
        install(root / "out", manifest)
    except KeyboardInterrupt:
        print("record: interrupted", file=sys.stderr)
        return 130
    except (OSError, RuntimeError, AssertionError, subprocess.SubprocessError) as exc:
        print(f"record: {exc} (the run's files are in {root})", file=sys.stderr)
        return 1
    shutil.rmtree(root)
    total = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    print(f"record: {len(manifest['captures'])} captures, {total} bytes in {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
