"""What bench/raft.py reads about the processes it runs: CPU seconds and resident memory from /proc,
the log end offset of a partition directory from its segment's batch headers, and the lines a process
printed to its output file. Linux only for /proc (elsewhere 0, and the figures say nothing)."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import time
from pathlib import Path

_HEADER = struct.Struct(">qi")  # a record batch's base offset and length
_LAST_DELTA = struct.Struct(">i")  # its last offset delta, 23 bytes into the batch


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (0.0 where /proc is missing)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory (VmRSS) of a process in MiB (0.0 where /proc is missing)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def log_end_offset(partition_dir: Path) -> int:
    """The offset after the last whole batch of the newest segment (0 when there is none yet)."""
    segments = sorted(partition_dir.glob("*.log"))
    if not segments:
        return 0
    end = int(segments[-1].stem)
    with open(segments[-1], "rb") as segment:
        size = os.fstat(segment.fileno()).st_size
        position = 0
        while position + 27 <= size:
            segment.seek(position)
            header = segment.read(27)
            if len(header) < 27:  # the node truncated its log since the fstat (a divergence)
                break
            base, length = _HEADER.unpack_from(header)
            if length <= 0 or position + 12 + length > size:
                break
            end = base + _LAST_DELTA.unpack_from(header, 23)[0] + 1
            position += 12 + length
    return end


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


class Output:
    """A process's output file, read from where it stood when the process (re)started."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.start = path.stat().st_size if path.exists() else 0

    def lines(self) -> list[str]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as out:
            out.seek(self.start)
            return out.read().decode(errors="replace").splitlines()


def stop(processes: list[subprocess.Popen[bytes]], graceful_s: float = 10.0) -> None:
    """SIGTERM each running process, wait up to ``graceful_s`` in all, then SIGKILL what is left."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + graceful_s
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=60)
