"""Worker processes that leave Ctrl-C to the command that started them.

Ctrl-C sends SIGINT to every process of the terminal's group, workers included. The parent stops
its pool and exits 130; a worker's own KeyboardInterrupt traceback would only be noise. A pool's
initializer that ignores SIGINT leaves a window, though: a worker forked a moment before the
Ctrl-C gets it while Python is still setting the child up, before the initializer runs, and prints
"Exception ignored in: <function _after_fork ...> KeyboardInterrupt". So SIGINT is blocked in the
starting thread while workers are made (a fork or a spawn inherits the block, and keeps the signal
pending), and each worker ignores it before taking the block off, which discards a pending one.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def workers_start_without_interrupts() -> Iterator[None]:
    """Block SIGINT in this thread for the block's duration; a Ctrl-C meanwhile reaches this
    process as soon as the block ends."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def leave_interrupts_to_parent() -> None:
    """A worker pool's initializer: ignore SIGINT, then unblock it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
