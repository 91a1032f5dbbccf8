"""A CPU-time limit around each body decode, so hostile bytes cannot hang a whole job.

A periodic virtual interval timer (SIGVTALRM, counting this process's CPU time; SIGALRM stays free
for others such as pytest-timeout) ticks every ``limit_s`` CPU seconds. A decode found running at two
consecutive ticks has used at least ``limit_s`` and is interrupted with DecodeTimeout. Marking a
decode costs two assignments, so the guard is cheap enough for every frame. Signals reach only the
main thread; in any other thread the call runs unguarded.

``begin()``/``end()`` mark one decode. A caller that marks many (``bodies``) asks ``arm()`` for the
mark list once it finds ``ARMED`` no longer says the timer ticks at its limit for this thread, and
marks each decode in ``MARK`` itself, as ``begin`` and ``end`` do: no call per decode.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from types import FrameType
from typing import Callable, Final, TypeVar

T = TypeVar("T")
DEFAULT_LIMIT_S = 5.0


class DecodeTimeout(Exception):
    """The decode used more CPU time than its limit."""


class _Watch:
    seen_at_last_tick = -1
    period: float | None = None  # the timer's interval, None while it is not armed
    exit_hook = False


# [number of the decode in progress (0: none), decodes started so far]; a list, not class
# attributes, because storing into a class on every decode costs its attribute caches.
MARK: Final = [0, 0]
# [(the timer's interval, the main thread's ident)] once armed: a caller on that thread whose limit
# is that interval may mark decodes in MARK without calling ``arm`` again.
ARMED: Final[list[tuple[float, int]]] = [(0.0, 0)]
_get_ident = threading.get_ident
_main_thread = threading.main_thread


def _tick(signum: int, frame: FrameType | None) -> None:
    current = MARK[0]
    if current and current == _Watch.seen_at_last_tick:
        MARK[0] = 0
        raise DecodeTimeout("decoding took longer than its CPU-time limit")
    _Watch.seen_at_last_tick = current


def _disarm() -> None:
    """Stop the timer before the interpreter shuts down: finalisation puts SIGVTALRM's default
    action (terminate) back, and a tick during a long teardown would kill a finished process."""
    signal.setitimer(signal.ITIMER_VIRTUAL, 0, 0)


def _forget_timer() -> None:
    """In a child made by fork: the parent's interval timer is not inherited, so the next ``arm``
    must start one (and the main thread may be another)."""
    _Watch.period = None
    ARMED[0] = (0.0, 0)


os.register_at_fork(after_in_child=_forget_timer)


def arm(limit_s: float = DEFAULT_LIMIT_S) -> list[int] | None:
    """Make the timer tick every ``limit_s`` CPU seconds and return ``MARK``; None, arming
    nothing, off the main thread, where no signal can reach a decode."""
    ident = _get_ident()
    if ident != _main_thread().ident:
        return None
    if _Watch.period != limit_s:
        if not _Watch.exit_hook:
            atexit.register(_disarm)
            _Watch.exit_hook = True
        signal.signal(signal.SIGVTALRM, _tick)
        signal.setitimer(signal.ITIMER_VIRTUAL, limit_s, limit_s)
        _Watch.period = limit_s
    ARMED[0] = (limit_s, ident)
    return MARK


def begin(limit_s: float = DEFAULT_LIMIT_S) -> bool:
    """Mark a decode as running under the CPU-time limit (DecodeTimeout once it is used up) until
    ``end()``; False, marking nothing, off the main thread, where no signal can reach it."""
    if arm(limit_s) is None:
        return False
    started = MARK[1] + 1
    MARK[1] = started
    MARK[0] = started
    return True


def end() -> None:
    """The decode marked by ``begin()`` is over (call only when it returned True)."""
    MARK[0] = 0


def guarded(call: Callable[[], T], limit_s: float = DEFAULT_LIMIT_S) -> T:
    """``call()`` under the CPU-time limit; DecodeTimeout when it runs out."""
    if not begin(limit_s):
        return call()
    try:
        return call()
    finally:
        end()
