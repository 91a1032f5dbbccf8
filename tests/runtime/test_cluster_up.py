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
