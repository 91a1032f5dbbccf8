"""Outbound request bookkeeping (Kafka's RequestManager, docs/kraft.md §3).

At most one request is in flight per destination. A response is accepted only if its correlation id is
the one in flight to that destination; anything else is stale and dropped. After an error response the
destination backs off for ``retry_backoff_ms``; an unanswered request frees its destination after
``request_timeout_ms`` and is remembered as timed out until the next send to it (Kafka's
``hasRequestTimedOut``, used to fall back to a bootstrap server). :meth:`reset` forgets everything: it
runs on every state transition, so responses to requests sent in an earlier state are ignored.

:meth:`next_wakeup` is the earliest time something here changes by itself: an in-flight request times
out or a backoff ends. Backoffs that already ended are dropped there, so they never pin the core's next
deadline to "now" (that made an idle driver poll every millisecond, cf. KAFKA-17751).
"""

from __future__ import annotations

from dataclasses import dataclass


_STALE: int = -(1 << 62)  # sentinel: the cached wakeup must be recomputed


@dataclass(slots=True)
class InFlight:
    correlation_id: int
    api_key: int
    sent_ms: int
    timeout_ms: int


class RequestManager:
    __slots__ = (
        "_in_flight",
        "_backoff_until",
        "_timed_out",
        "_next_correlation",
        "_wakeup",
        "request_timeout_ms",
        "retry_backoff_ms",
    )

    def __init__(self, request_timeout_ms: int, retry_backoff_ms: int) -> None:
        self._in_flight: dict[int, InFlight] = {}
        self._backoff_until: dict[int, int] = {}
        self._timed_out: set[int] = set()
        self._next_correlation = 1
        self._wakeup: int | None = _STALE  # cached next_wakeup answer; _STALE after any change
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms

    def next_correlation_id(self) -> int:
        cid = self._next_correlation
        self._next_correlation += 1
        return cid

    def has_expired(self, now: int) -> bool:
        """Whether :meth:`expire` would drop anything (cheap; asked on every poll)."""
        for f in self._in_flight.values():
            if now >= f.sent_ms + f.timeout_ms:
                return True
        return False

    def expire(self, now: int) -> list[tuple[int, InFlight]]:
        """Drop requests that timed out; returns them so the caller can react."""
        expired = [(d, f) for d, f in self._in_flight.items() if now >= f.sent_ms + f.timeout_ms]
        for dest, _ in expired:
            del self._in_flight[dest]
            self._timed_out.add(dest)
        if expired:
            self._wakeup = _STALE
        return expired

    def is_ready(self, dest: int, now: int) -> bool:
        """Nothing in flight to ``dest`` and not backing off."""
        return dest not in self._in_flight and self._backoff_until.get(dest, 0) <= now

    def backoff_end(self, dest: int) -> int:
        """When the retry backoff of ``dest`` ends (0: none)."""
        return self._backoff_until.get(dest, 0)

    def is_backing_off(self, dest: int, now: int) -> bool:
        return self._backoff_until.get(dest, 0) > now

    def has_timed_out(self, dest: int) -> bool:
        """The last request to ``dest`` went unanswered until its timeout."""
        return dest in self._timed_out

    def forget_timeout(self, dest: int) -> None:
        self._timed_out.discard(dest)

    def has_any_in_flight(self) -> bool:
        return bool(self._in_flight)

    def in_flight_to(self, dest: int) -> InFlight | None:
        return self._in_flight.get(dest)

    def on_send(self, dest: int, correlation_id: int, api_key: int, now: int, timeout_ms: int | None = None) -> None:
        self._in_flight[dest] = InFlight(correlation_id, api_key, now, timeout_ms or self.request_timeout_ms)
        self._timed_out.discard(dest)
        self._wakeup = _STALE

    def accept(self, dest: int, correlation_id: int) -> InFlight | None:
        """If ``correlation_id`` is the request in flight to ``dest``, free the slot and return it."""
        f = self._in_flight.get(dest)
        if f is None or f.correlation_id != correlation_id:
            return None
        del self._in_flight[dest]
        self._wakeup = _STALE
        return f

    def on_failure(self, dest: int, now: int) -> None:
        self._backoff_until[dest] = now + self.retry_backoff_ms
        self._wakeup = _STALE

    def on_success(self, dest: int) -> None:
        if self._backoff_until.pop(dest, None) is not None:
            self._wakeup = _STALE

    def next_wakeup(self, now: int) -> int | None:
        """The earliest future time a request times out or a backoff ends; ``None`` if there is none."""
        cached = self._wakeup
        if cached != _STALE and (cached is None or cached > now):
            return cached
        earliest = None
        backoffs = self._backoff_until
        if backoffs:
            for dest in [d for d, t in backoffs.items() if t <= now]:
                del backoffs[dest]
            if backoffs:
                earliest = min(backoffs.values())
        for f in self._in_flight.values():
            t = f.sent_ms + f.timeout_ms
            if earliest is None or t < earliest:
                earliest = t
        self._wakeup = earliest
        return earliest

    def reset(self) -> None:
        self._in_flight.clear()
        self._backoff_until.clear()
        self._timed_out.clear()
        self._wakeup = _STALE
