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


@pytest.mark.parametrize("content", ["a file", "a folder"])
def test_cluster_up_refuses_a_folder_that_is_not_empty(tmp_path, content):
    """As ``make demo DEMO_DIR=`` does: a --dir that exists must be empty (``--dir /etc`` left node
    folders, logs and properties there); one line, nothing written."""
    directory = tmp_path / "mine"
    directory.mkdir()
    (directory / "notes.txt").write_text("keep me\n")
    target = directory if content == "a folder" else directory / "notes.txt"
    done = subprocess.run(
        # --duration: a cluster wrongly started there stops by itself
        [
            sys.executable,
            "-m",
            "kraftwire",
            "cluster",
            "up",
            "--dir",
            str(target),
            "--duration",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"kraftwire cluster up: --dir {target} is not a new or empty directory\n"
    assert sorted(p.name for p in directory.iterdir()) == ["notes.txt"]
    assert (directory / "notes.txt").read_text() == "keep me\n"


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def test_a_node_that_dies_is_reported_once(tmp_path):
    """It printed ``node N exited; see ...`` every 0.5 s until Ctrl-C."""
    process = subprocess.Popen(
        [sys.executable, "-m", "kraftwire", "cluster", "up", "--controllers", "1"]
        + ["--dir", str(tmp_path / "up")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        stop = time.monotonic() + 90
        while time.monotonic() < stop:
            line = process.stdout.readline()
            if line.startswith("LeaderId:") and line.split()[1] != "-1":
                break
        (node,) = _children(process.pid)
        os.kill(node, signal.SIGKILL)
        time.sleep(3)  # six turns of its watch loop
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    exits = [line for line in rest.splitlines() if line.startswith("node 1 exited")]
    assert exits == [f"node 1 exited with status -9; see {tmp_path / 'up' / 'node1.log'}"], rest
    assert process.returncode == 0 and "all nodes stopped" in rest
