"""Run a command that starts processes of its own (a bench's nodes, the demo's quorum) so that none of
them outlives the test: the command runs in a process group of its own, a run over its time limit is
stopped with the whole group, and a run that ends leaving any of its processes behind fails."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

import pytest

LEFTOVER_GRACE_S = 10.0  # a child's own shutdown may finish just after its parent's exit


def run_in_group(args: list[str], timeout: float, **popen: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(args, capture_output=True, text=True, timeout=timeout)``, but in a new
    session whose every process is stopped by its group id (the command's pid) if the time runs
    out; fails the test if the command's processes are still there ``LEFTOVER_GRACE_S`` after it
    ended."""
    process = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal_group(process.pid, signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)
            out, err = process.communicate()
        pytest.fail(f"{args[:3]} did not end within {timeout} s:\n{out}\n{err}")
    if not _group_ends(process.pid, LEFTOVER_GRACE_S):
        _signal_group(process.pid, signal.SIGKILL)
        pytest.fail(f"{args[:3]} ended but left processes running (now killed):\n{out}\n{err}")
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _group_ends(group: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _signal_group(group, 0):
            return True
        time.sleep(0.1)
    return not _signal_group(group, 0)


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to the group; False when no process of it is left."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    return True


def ctrl_c_as_in_a_terminal() -> None:
    """``preexec_fn`` for a command a test will send Ctrl-C: SIGINT's default action, as a
    terminal's job has it. A test run started in the background of a script inherits SIGINT
    ignored, and an ignored signal stays ignored across exec, so the command would never see it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
