"""The event trace: a bounded ring of compact entries, formatted into readable lines only on demand.

Recording must be cheap (it happens for every delivery), so entries keep references to the decoded
messages and are turned into text only when a failure is reported or a full trace is asked for. The text
contains nothing process-specific (no object ids, no wall times), so the same seed gives a byte-identical
trace in any process.

Every entry is ``(time, kind, ...)``. Three kinds are messages with a fixed layout (``recv``, ``fail``,
``drop``); every other kind is a note, ``(time, kind, subject, *words)``, printed as its words. The
kinds, the names of the parties and the summary counters are explained by :data:`LEGEND`, which
``kraftwire simulate`` prints above a trace; a :class:`TraceFilter` keeps only the entries asked for.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any, Callable, Iterable

from kraftwire.generated import APIS
from kraftwire.generated.errors import name as error_name

from .network import ADMIN_ID

Entry = tuple[Any, ...]
"""``(time, kind, ...)``: see the module docstring."""

MESSAGE_KINDS = ("recv", "fail", "drop")
NOTE_KINDS = (
    "setup",
    "start",
    "state",
    "persist",
    "truncate",
    "snapshots",
    "leader-change",
    "shutdown",
    "crash",
    "refused",
    "fault",
    "admin",
    "violation",
)
KINDS = MESSAGE_KINDS + NOTE_KINDS

LEGEND = """\
# How to read a trace
# time (first column)  virtual milliseconds since the run started; no wall clock is ever read
# nN                    node N
# admin                 the operator's client (DescribeQuorum, AddRaftVoter, RemoveRaftVoter)
# n-2, n-3, ...         a bootstrap server (controller.quorum.bootstrap.servers) as a node addresses
#                       it before it knows whose it is: -2 is the first address (node 1's here), -3
#                       the second, and so on; its answers are shown as coming from that id
# role(eE LN)           a core's role, epoch E and the leader N it knows
# Kinds of line (what --trace-filter kind= selects):
#   recv           nA <- nB Message fields (vV): A received Message from B at version V
#   fail           nA: request Api to nB failed: ERROR: the network, not B, failed the request
#                  (connection refused or reset, or no version both sides speak)
#   drop           drop nA -> nB Message: why: lost at random, partitioned, or partitioned in flight
#   state          nN before -> after: a role, epoch or leader change
#   persist        the quorum-state file written (epoch, leader, vote)
#   truncate       the log cut back to an offset (a diverging suffix)
#   snapshots      snapshots written (kind(end offset,epoch))
#   leader-change  the application told of a new leader
#   start, shutdown, crash   a process starts, exits cleanly, or crashes
#   refused        a peer's message the node refused (one line each; the node keeps running)
#   fault          what the scenario injects; admin: a voter change finished; setup; violation
# Summary line: the scenario; voters = quorum size; runs; events = core inputs handled (steps,
#   appends, advances); violations = runs that broke an invariant; virtual_time = simulated seconds;
#   wall = real seconds; when nonzero, refused = peer messages refused (e.g. a node whose disk was
#   wiped named leader of an epoch it led before, or a hostile peer's lies) and epoch_bumped = runs in
#   which a healed voter raised the epoch (expected without pre-vote)\
"""

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


def party(party_id: int) -> str:
    """How a trace names a party: ``n3``, ``n-2`` (a bootstrap server) or ``admin``."""
    return "admin" if party_id == ADMIN_ID else f"n{party_id}"


def api_name(api_key: int) -> str:
    """``Fetch`` for api key 1: the name of the API as the spec files call it."""
    info = APIS.get(api_key)
    return f"api{api_key}" if info is None else info.request.removesuffix("Request")


def _message_name(api_key: int, is_request: bool) -> str:
    return api_name(api_key) + ("Request" if is_request else "Response")


def _format(entry: Entry) -> str:
    t, kind = entry[0], entry[1]
    if kind == "recv":
        _, _, dst, src, version, msg = entry
        text = f"{party(dst)} <- {party(src)} {summarize(msg)} (v{version})"
    elif kind == "fail":
        _, _, node, dest, api, err = entry
        text = f"{party(node)}: request {api_name(api)} to {party(dest)} failed: {error_name(err)}"
    elif kind == "drop":
        _, _, src, dst, api, is_request, why = entry
        text = f"drop {party(src)} -> {party(dst)} {_message_name(api, is_request)}: {why}"
    else:
        text = " ".join(str(x) for x in entry[2:])
    return f"{t:>8} {text}"


_PARTY = re.compile(r"n(-?\d+)|admin")


def _parties(entry: Entry) -> set[int]:
    if entry[1] in MESSAGE_KINDS:
        return {entry[2], entry[3]}
    found = set()
    for word in entry[2:]:
        for token in str(word).split():
            m = _PARTY.fullmatch(token.rstrip(":,"))
            if m is not None:
                found.add(ADMIN_ID if m.group(1) is None else int(m.group(1)))
    return found


def _api_of(entry: Entry) -> int | None:
    kind = entry[1]
    if kind == "recv":
        return int(entry[5].API_KEY)
    if kind in ("fail", "drop"):
        return int(entry[4])
    return None


class TraceFilter:
    """Which entries to keep, from ``--trace-filter`` terms: ``node=N`` (``3``, ``n3``, ``n-2`` or
    ``admin``: messages from or to it, its own events, faults and admin results naming it as ``nN``;
    a partition line lists bare ids and is not selected), ``api=NAME``
    (``Fetch``, ``Vote``, ...: its requests, responses, failures and drops) and ``kind=KIND`` (see
    :data:`KINDS`). Terms on one key are alternatives; terms on different keys must all hold. A
    violation is always kept. A bad term raises ``ValueError`` naming it."""

    __slots__ = ("nodes", "apis", "kinds")

    def __init__(self, terms: Iterable[str]) -> None:
        self.nodes: set[int] = set()
        self.apis: set[int] = set()
        self.kinds: set[str] = set()
        api_keys = {api_name(k).lower(): k for k in APIS}
        for term in terms:
            key, sep, value = term.partition("=")
            value = value.strip()
            if not sep or not value:
                raise ValueError(f"{term!r} is not node=N, api=NAME or kind=KIND")
            if key == "node":
                self.nodes.add(_parse_party(term, value))
            elif key == "api":
                if value.lower() not in api_keys:
                    raise ValueError(
                        f"{term!r}: unknown API; one of {', '.join(sorted(map(api_name, APIS)))}"
                    )
                self.apis.add(api_keys[value.lower()])
            elif key == "kind":
                if value.lower() not in KINDS:
                    raise ValueError(f"{term!r}: unknown kind; one of {', '.join(KINDS)}")
                self.kinds.add(value.lower())
            else:
                raise ValueError(f"{term!r}: filter on node, api or kind, not {key!r}")

    def __call__(self, entry: Entry) -> bool:
        kind = entry[1]
        if kind == "violation":
            return True
        if self.kinds and kind not in self.kinds:
            return False
        if self.apis and _api_of(entry) not in self.apis:
            return False
        return not self.nodes or not self.nodes.isdisjoint(_parties(entry))


def _parse_party(term: str, value: str) -> int:
    if value == "admin":
        return ADMIN_ID
    try:
        return int(value[1:] if value.startswith("n") else value)
    except ValueError:
        raise ValueError(f"{term!r}: a node is a number (3, n3, n-2) or admin") from None


class Trace:
    """A ring of the last ``limit`` entries (``None``: keep everything) that ``keep`` accepts."""

    __slots__ = ("_entries", "_keep")

    def __init__(
        self, limit: int | None = 400, keep: Callable[[Entry], bool] | None = None
    ) -> None:
        self._entries: deque[Entry] = deque(maxlen=limit)
        self._keep = keep

    def add(self, entry: Entry) -> None:
        if self._keep is None or self._keep(entry):
            self._entries.append(entry)

    def note(self, t: int, kind: str, subject: str, *words: Any) -> None:
        """A free-form line of one of the :data:`NOTE_KINDS` about ``subject`` (``n3``, ``FAULT``, ...)."""
        self.add((t, kind, subject, *words))

    def lines(self) -> list[str]:
        return [_format(e) for e in self._entries]

    def text(self) -> str:
        return "\n".join(self.lines())
