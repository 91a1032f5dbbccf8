"""A CPU-time limit around one body decode, so hostile bytes cannot hang a whole job.

Uses the process's virtual interval timer (SIGVTALRM, CPU time), which counts only while Python runs
(a decode that loops burns it) and leaves SIGALRM to others (pytest-timeout). Signals reach only the
main thread, so in any other thread the call runs unguarded.
"""

from __future__ import annotations

import signal
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
DEFAULT_LIMIT_S = 5.0


class DecodeTimeout(Exception):
    """The decode used more CPU time than its limit."""


def _raise_timeout(signum, frame) -> None:
    raise DecodeTimeout("decoding took longer than its CPU-time limit")


_installed = False


def guarded(call: Callable[[], T], limit_s: float = DEFAULT_LIMIT_S) -> T:
    """``call()`` with a CPU-time limit; DecodeTimeout when it runs out."""
    global _installed
    if threading.current_thread() is not threading.main_thread():
        return call()
    if not _installed:
        signal.signal(signal.SIGVTALRM, _raise_timeout)
        _installed = True
    signal.setitimer(signal.ITIMER_VIRTUAL, limit_s)
    try:
        return call()
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
