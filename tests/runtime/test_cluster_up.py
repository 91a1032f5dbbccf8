"""`kraftwire cluster up`: a local quorum that prints its state and stops cleanly on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.timeout(180)


def test_cluster_up_then_ctrl_c(tmp_path):
    directory = tmp_path / "up"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kraftwire",
            "cluster",
            "up",
            "--controllers",
            "3",
            "--dir",
            str(directory),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        stop = time.monotonic() + 90
        while time.monotonic() < stop:
            line = process.stdout.readline()
            lines.append(line)
            if line.startswith("LeaderId:") and line.split()[1] != "-1":
                break
        assert any(line.startswith("LeaderId:") for line in lines), "".join(lines)
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == 0
    assert "all nodes stopped" in rest
    # every node process is gone: its directory lock can be taken again
    from kraftwire.node.storage import open_directory

    for i in (1, 2, 3):
        open_directory(os.path.join(directory, f"node{i}")).close()


def test_cluster_up_tls_makes_certificates_and_a_client_config(tmp_path):
    """--tls: mutual TLS on every listener with a throwaway CA; the quorum elects over it, and the
    printed client.properties lets a tool in, where a plaintext one is refused."""
    directory = tmp_path / "up"
    process = subprocess.run(
        [sys.executable, "-m", "kraftwire", "cluster", "up", "--controllers", "3"]
        + ["--dir", str(directory), "--tls", "--duration", "8"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 0, process.stderr
    client = directory / "client.properties"
    assert f"mutual TLS; tools connect with --command-config {client}" in process.stdout
    leaders = [line for line in process.stdout.splitlines() if line.startswith("LeaderId:")]
    assert leaders and leaders[-1].split()[1] != "-1", process.stdout
    assert "security.protocol=SSL" in client.read_text()
    with open(directory / "node1.properties") as f:
        node = f.read()
    assert "listener.security.protocol.map=CONTROLLER:SSL" in node
    assert "ssl.client.auth=required" in node
    assert sorted(os.listdir(directory / "tls")) == [
        "ca.key", "ca.pem", "client.pem", "node1.pem", "node2.pem", "node3.pem",
    ]  # fmt: skip
