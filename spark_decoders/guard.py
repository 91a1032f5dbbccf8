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
    seen_at_last_tick = -1
    period: float | None = None


# [number of the decode in progress (0: none), decodes started so far]; a list, not class
# attributes, because storing into a class on every decode costs its attribute caches.
_MARK = [0, 0]
_get_ident = threading.get_ident
_main_thread = threading.main_thread


def _tick(signum, frame) -> None:
    current = _MARK[0]
    if current and current == _Watch.seen_at_last_tick:
        _MARK[0] = 0
        raise DecodeTimeout("decoding took longer than its CPU-time limit")
    _Watch.seen_at_last_tick = current


def _disarm() -> None:
    """Stop the timer before the interpreter shuts down: finalisation puts SIGVTALRM's default
    action (terminate) back, and a tick during a long teardown would kill a finished process."""
    signal.setitimer(signal.ITIMER_VIRTUAL, 0, 0)


def begin(limit_s: float = DEFAULT_LIMIT_S) -> bool:
    """Mark a decode as running under the CPU-time limit (DecodeTimeout once it is used up) until
    ``end()``; False, marking nothing, off the main thread, where no signal can reach it."""
    if _get_ident() != _main_thread().ident:
        return False
    if _Watch.period != limit_s:
        if _Watch.period is None:
            atexit.register(_disarm)
        signal.signal(signal.SIGVTALRM, _tick)
        signal.setitimer(signal.ITIMER_VIRTUAL, limit_s, limit_s)
        _Watch.period = limit_s
    started = _MARK[1] + 1
    _MARK[1] = started
    _MARK[0] = started
    return True


def end() -> None:
    """The decode marked by ``begin()`` is over (call only when it returned True)."""
    _MARK[0] = 0


def guarded(call: Callable[[], T], limit_s: float = DEFAULT_LIMIT_S) -> T:
    """``call()`` under the CPU-time limit; DecodeTimeout when it runs out."""
    if not begin(limit_s):
        return call()
    try:
        return call()
    finally:
        end()
