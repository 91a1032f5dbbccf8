"""A CPU-time limit around each body decode, so hostile bytes cannot hang a whole job.

A periodic virtual interval timer (SIGVTALRM, counting this process's CPU time; SIGALRM stays free
for others such as pytest-timeout) ticks every ``limit_s`` CPU seconds. A decode found running at two
consecutive ticks has used at least ``limit_s`` and is interrupted with DecodeTimeout. Marking a
decode costs two assignments, so the guard is cheap enough for every frame. Signals reach only the
main thread; in any other thread the call runs unguarded.
"""

from __future__ import annotations

import atexit
import signal
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
DEFAULT_LIMIT_S = 5.0


class DecodeTimeout(Exception):
    """The decode used more CPU time than its limit."""


class _Watch:
    decode = 0  # number of the decode in progress (0: none)
    started = 0  # decodes started so far
    seen_at_last_tick = -1
    period: float | None = None


def _tick(signum, frame) -> None:
    current = _Watch.decode
    if current and current == _Watch.seen_at_last_tick:
        _Watch.decode = 0
        raise DecodeTimeout("decoding took longer than its CPU-time limit")
    _Watch.seen_at_last_tick = current


def _disarm() -> None:
    """Stop the timer before the interpreter shuts down: finalisation puts SIGVTALRM's default
    action (terminate) back, and a tick during a long teardown would kill a finished process."""
    signal.setitimer(signal.ITIMER_VIRTUAL, 0, 0)


def guarded(call: Callable[[], T], limit_s: float = DEFAULT_LIMIT_S) -> T:
    """``call()`` under the CPU-time limit; DecodeTimeout when it runs out."""
    if threading.current_thread() is not threading.main_thread():
        return call()
    if _Watch.period != limit_s:
        if _Watch.period is None:
            atexit.register(_disarm)
        signal.signal(signal.SIGVTALRM, _tick)
        signal.setitimer(signal.ITIMER_VIRTUAL, limit_s, limit_s)
        _Watch.period = limit_s
    _Watch.started += 1
    _Watch.decode = _Watch.started
    try:
        return call()
    finally:
        _Watch.decode = 0
