"""Where Apache Kafka's released jars are on this machine, and how to run a class from them.

``make kafka`` resolves them with Maven (``interop/pom.xml``) and writes one class path per pinned release
to ``interop/target/kafka-VERSION.classpath``; nothing here downloads anything. Every Java process a test
starts is a :class:`subprocess.Popen` whose pid the caller stops.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTEROP = ROOT / "interop"
TARGET = INTEROP / "target"

# The release the interop tests pin, and the older line the controller checks also run against.
KAFKA = "4.4.0"
KAFKA_OLD = "4.0.2"
RELEASES = (KAFKA, KAFKA_OLD)

# Small heaps and the client compiler only: the tests start several JVMs on a 2-core machine and none
# of them runs long enough for the optimising compiler to pay for itself.
JVM_FLAGS = (
    "-Xms32m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
    f"-Dlog4j2.configurationFile={INTEROP / 'log4j2.yaml'}",
)


def classpath_file(version: str = KAFKA) -> Path:
    return TARGET / f"kafka-{version}.classpath"


def missing(version: str = KAFKA) -> str | None:
    """None when Java and the release's jars are here, else the one line that says what is missing."""
    if shutil.which("java") is None:
        return "Java is not installed (Java 17 runs Apache Kafka for the interop tests)"
    if not classpath_file(version).is_file():
        return f"Apache Kafka {version}'s jars are not resolved: run `make kafka` (needs Maven)"
    return None


def classpath(version: str = KAFKA) -> str:
    text = classpath_file(version).read_text().strip()
    absent = [jar for jar in text.split(os.pathsep) if not os.path.isfile(jar)]
    if absent:
        raise FileNotFoundError(f"{absent[0]} (from {classpath_file(version)}): run `make kafka`")
    return text


def java_command(
    main_class: str, *args: str, version: str = KAFKA, heap_mb: int = 256, log_level: str = "WARN"
) -> list[str]:
    """The command line that runs ``main_class`` from the release's jars."""
    return [
        "java",
        f"-Xmx{heap_mb}m",
        *JVM_FLAGS,
        f"-Dkraftwire.log.level={log_level}",
        "-cp",
        classpath(version),
        main_class,
        *args,
    ]


def run_tool(
    main_class: str, *args: str, version: str = KAFKA, timeout_s: float = 90.0, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line tools to completion; its output as text."""
    result = subprocess.run(
        java_command(main_class, *args, version=version, heap_mb=192),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"{main_class} {' '.join(args)} exited {result.returncode}:\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result


# Kafka's tools, by the class each of Kafka's shell scripts runs.
STORAGE_TOOL = "kafka.tools.StorageTool"
SERVER = "kafka.Kafka"
METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"
TEST_RAFT_SERVER = "kafka.tools.TestRaftServer"
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"
