"""The event trace: a bounded ring of compact entries, formatted into readable lines only on demand.

Recording must be cheap (it happens for every delivery), so entries keep references to the decoded
messages and are turned into text only when a failure is reported or a full trace is asked for. The text
contains nothing process-specific (no object ids, no wall times), so the same seed gives a byte-identical
trace in any process.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from kraftwire.node.core.errors import name as error_name

# Fields worth showing, in this order, when present on a message or its single partition.
_FIELDS = (
    "error_code",
    "leader_id",
    "leader_epoch",
    "current_leader_epoch",
    "replica_epoch",
    "replica_id",
    "candidate_id",
    "voter_id",
    "last_offset_epoch",
    "last_offset",
    "pre_vote",
    "vote_granted",
    "fetch_offset",
    "last_fetched_epoch",
    "high_watermark",
    "log_start_offset",
    "position",
    "size",
)


def _partition(msg: Any) -> Any:
    for attr in ("topics", "responses"):
        topics = getattr(msg, attr, None)
        if topics:
            parts = getattr(topics[0], "partitions", None)
            if parts:
                return parts[0]
    return None


def _fields(obj: Any, out: list[str]) -> None:
    slots = getattr(type(obj), "__slots__", ())
    for f in _FIELDS:
        if f in slots:
            v = getattr(obj, f)
            if f == "error_code":
                if v:
                    out.append(error_name(v))
            elif f == "replica_id" and v < 0 and "replica_state" in slots:
                out.append(f"replica_id={obj.replica_state.replica_id}")
            elif f == "high_watermark" and v == (1 << 63) - 1:
                continue
            else:
                out.append(f"{f}={v}")
    for f in ("diverging_epoch", "snapshot_id"):
        v = getattr(obj, f, None) if f in slots else None
        if v is not None and getattr(v, "end_offset", -1) >= 0:
            out.append(f"{f}=({v.end_offset},{v.epoch})")
    for f in ("records", "unaligned_records"):
        v = getattr(obj, f, None) if f in slots else None
        if v:
            out.append(f"{f}={len(v)}B")


def summarize(msg: Any) -> str:
    """``VoteRequest pre_vote=True replica_epoch=3 ...``: the message name and its telling fields."""
    out = [type(msg).__name__]
    _fields(msg, out)
    p = _partition(msg)
    if p is not None:
        _fields(p, out)
    return " ".join(out)


def _format(entry: tuple) -> str:
    t, kind = entry[0], entry[1]
    if kind == "recv":
        _, _, dst, src, version, msg = entry
        text = f"n{dst} <- n{src} {summarize(msg)} (v{version})"
    elif kind == "fail":
        _, _, node, dest, api, err = entry
        text = f"n{node}: request api={api} to n{dest} failed: {error_name(err)}"
    elif kind == "drop":
        _, _, src, dst, api, why = entry
        text = f"drop n{src} -> n{dst} api={api}: {why}"
    else:
        text = " ".join(str(x) for x in entry[2:])
    return f"{t:>8} {text}"


class Trace:
    """A ring of the last ``limit`` entries (``None``: keep everything)."""

    __slots__ = ("_entries",)

    def __init__(self, limit: int | None = 400) -> None:
        self._entries: deque[tuple] = deque(maxlen=limit)

    def add(self, entry: tuple) -> None:
        self._entries.append(entry)

    def note(self, t: int, *words: Any) -> None:
        """A free-form line (faults, state changes, persists)."""
        self._entries.append((t, "note", *words))

    def lines(self) -> list[str]:
        return [_format(e) for e in self._entries]

    def text(self) -> str:
        return "\n".join(self.lines())
