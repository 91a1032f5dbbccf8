"""bench/raft.py's CPU per 10,000 records is the CPU each node spent over the measured window: read as
the window closes, not when the figures are gathered later (kraftwire's window figures arrive 5 s
or more after the window, and its CPU was once read then, then divided by the window's commits)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import raft  # noqa: E402
from _raft_procs import cpu_seconds  # noqa: E402


class _ThisProcess:
    def pids(self) -> dict[int, int]:
        return {1: os.getpid()}


def _burn(seconds: float) -> None:
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def test_cpu_after_the_window_is_not_counted() -> None:
    quorum = _ThisProcess()
    before = {1: cpu_seconds(os.getpid())}
    _burn(0.3)  # the window
    spent = raft.cpu_spent(quorum, before)
    _burn(0.6)  # after it: waiting for the window's figures
    figures = raft.usage(quorum, 1, spent, committed=10_000)
    assert 0.25 <= figures["cpu_per_10k"][1] <= 0.6, figures
