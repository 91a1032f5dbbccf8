"""The same rows from a Spark standalone cluster: a master and two workers on 127.0.0.1, started
from the pyspark package's own launcher and stopped by the test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from captures import conversation, pcap_of, write
from corpus.corpus_data import spark_agrees_with_local
from kraftwire.spark_decoders import decode_local, read_exchanges
from kraftwire.spark_decoders.spark.reading import spark_rows_as_dicts
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.timeout(600)
SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


@pytest.fixture()
def cluster(tmp_path):
    env = dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        SPARK_HOME=str(SPARK_CLASS.parent.parent),
        SPARK_WORKER_DIR=str(tmp_path / "work"),
    )
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    logs = [open(tmp_path / f"{name}.log", "w") for name in ("master", "worker1", "worker2")]
    processes = [
        subprocess.Popen(
            [
                str(SPARK_CLASS),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(_free_port()),
            ],
            env=env,
            stdout=logs[0],
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        _wait_for_port(port, time.monotonic() + 120)
        for log in logs[1:]:
            processes.append(
                subprocess.Popen(
                    [
                        str(SPARK_CLASS),
                        "org.apache.spark.deploy.worker.Worker",
                        master_url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "1",
                        "--memory",
                        "1g",
                        "--webui-port",
                        str(_free_port()),
                    ],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        yield master_url
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        for log in logs:
            log.close()


def test_standalone_cluster_gives_the_same_rows(cluster, tmp_path):
    from pyspark.sql import SparkSession

    convs = [
        conversation(
            kraft_exchanges(14, seed=i, first_correlation_id=100 * i + 1),
            client=(f"10.0.0.{i + 1}", 40000 + i),
        )
        for i in range(3)
    ]
    capture = write(tmp_path, "cluster.pcap", pcap_of(sorted(p for c in convs for p in c.packets)))
    local = decode_local([capture])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()  # the local[2] session of the other tests; a new one points at the cluster
    spark = (
        SparkSession.builder.master(cluster)
        .appName("kraftwire-standalone")
        .config("spark.ui.enabled", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.executor.memory", "512m")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    try:
        assert spark_rows_as_dicts(read_exchanges(spark, [capture], shards=2)) == local
        third = Path(capture).stat().st_size // 3 + 1  # three splits, connections crossing them
        assert spark_rows_as_dicts(read_exchanges(spark, [capture], split_bytes=third)) == local
        assert spark_agrees_with_local(spark, shards=2) > 0  # the real clients' corpus
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
        assert executors >= 2  # the driver plus at least one worker's executor took part
    finally:
        spark.stop()
