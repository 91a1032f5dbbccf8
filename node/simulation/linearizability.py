"""Linearizability of the counter's history: writes (committed records) and linearizable reads (#13).

The history holds one operation per committed counter value (a write: invoked when the leader appended
that very record, its (epoch, offset), and complete once any node delivered it, when a client of the
cluster would have had its acknowledgement) and one per read that returned (invoked at
``read_index``, complete at ``ReadReady``, returning the node's counter value then). Appends that never
committed are left out: a write that never took effect may be dropped from a linearization. Reads that
failed or died with their node are left out the same way.

The model is the counter register: a write of ``v`` needs the value ``v - 1`` and leaves ``v``; a read
of ``r`` needs the value ``r``. Operations that touch in time (a return and a call at the same instant)
count as concurrent.

:func:`search` is Wing and Gong's search with Lowe's memoization, as Porcupine runs it: walk the calls in
time order, linearize any pending call the model allows, backtrack at the first return not yet
linearized, and skip ``(linearized set, counter value)`` pairs already explored. It is exponential in
the worst case (a violating history with many overlapping reads makes it explore every order), so it
serves small histories and the tests. :func:`check`, which the simulator runs on whole histories, is
exact for this model in linear time: the writes must be linearized in value order at points
``p_1 <= p_2 <= ...``, each ``p_v`` inside its write's interval, no later than the return of any read
of ``v`` and no earlier than the call of any read of ``v - 1`` (that read sits between ``p_{v-1}`` and
``p_v``). Such points exist exactly when the greedy choice ``p_v = max(lower bound, p_{v-1})`` stays
within every upper bound; tests/simulation/test_linearizability.py checks that both agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Operation:
    kind: str  # "write" or "read"
    value: int
    call_ms: int
    return_ms: int
    node: int


class History:
    """What the simulated nodes reported; :meth:`operations` turns it into a checkable history."""

    def __init__(self) -> None:
        self.appended: dict[tuple[int, int], int] = (
            {}
        )  # (epoch, offset) -> time the leader appended it
        self.writes: dict[int, Operation] = {}  # committed value -> its write
        self.reads_open: dict[tuple[int, int], int] = {}  # (node, read id) -> call time
        self.reads: list[Operation] = []
        self.failed_reads = 0

    def append_called(self, epoch: int, offset: int, now: int) -> None:
        self.appended[(epoch, offset)] = now

    def committed(self, node: int, epoch: int, offset: int, value: int, now: int) -> None:
        if value not in self.writes:
            call = self.appended.get((epoch, offset), 0)
            self.writes[value] = Operation("write", value, call, now, node)

    def read_called(self, node: int, read_id: int, now: int) -> None:
        self.reads_open[(node, read_id)] = now

    def read_returned(self, node: int, read_id: int, value: int, now: int) -> None:
        call = self.reads_open.pop((node, read_id), None)
        if call is not None:
            self.reads.append(Operation("read", value, call, now, node))

    def read_failed(self, node: int, read_id: int) -> None:
        if self.reads_open.pop((node, read_id), None) is not None:
            self.failed_reads += 1

    def node_stopped(self, node: int) -> None:
        for key in [k for k in self.reads_open if k[0] == node]:
            del self.reads_open[key]

    def operations(self) -> list[Operation]:
        return sorted(
            [*self.writes.values(), *self.reads], key=lambda op: (op.call_ms, op.return_ms)
        )


class _Entry:
    __slots__ = ("op", "index", "is_call", "match", "prev", "next")

    def __init__(self, op: Operation | None, index: int, is_call: bool) -> None:
        self.op, self.index, self.is_call = op, index, is_call
        self.match: _Entry | None = None
        self.prev: _Entry | None = None
        self.next: _Entry | None = None


def _linked(ops: list[Operation]) -> _Entry:
    """A list of call and return entries in time order (a call before a return at the same instant, so
    operations that touch are concurrent); returns its head sentinel."""
    events = []
    for i, op in enumerate(ops):
        call, ret = _Entry(op, i, True), _Entry(op, i, False)
        call.match = ret
        events += [(op.call_ms, 0, i, call), (op.return_ms, 1, i, ret)]
    events.sort(key=lambda e: e[:3])
    head = prev = _Entry(None, -1, False)
    for *_, entry in events:
        prev.next, entry.prev, prev = entry, prev, entry
    return head


def _lift(entry: _Entry) -> None:
    for e in (entry, entry.match):
        assert e is not None and e.prev is not None
        e.prev.next = e.next
        if e.next is not None:
            e.next.prev = e.prev


def _unlift(entry: _Entry) -> None:
    for e in (entry.match, entry):
        assert e is not None and e.prev is not None
        e.prev.next = e
        if e.next is not None:
            e.next.prev = e


def _step(value: int, op: Operation) -> int | None:
    if op.kind == "write":
        return op.value if value == op.value - 1 else None
    return value if value == op.value else None


def check(ops: list[Operation]) -> str | None:
    """``None`` if the history (counter starting at 0) is linearizable, else why not: the two
    operations whose order no linearization can respect."""
    writes = {op.value: op for op in ops if op.kind == "write"}
    top = max(writes, default=0)
    if sorted(writes) != list(range(1, top + 1)):
        missing = next(v for v in range(1, top + 1) if v not in writes)
        raise ValueError(f"the history has no write of {missing}")
    lower = {v: (op.call_ms, op) for v, op in writes.items()}  # bounds on p_v, with their cause
    upper = {v: (op.return_ms, op) for v, op in writes.items()}
    for op in ops:
        if op.kind != "read":
            continue
        if op.value > top or op.value < 0:
            return f"{describe(op)} returns a value never written"
        if op.value + 1 in lower and op.call_ms > lower[op.value + 1][0]:
            lower[op.value + 1] = (op.call_ms, op)
        if op.value > 0 and op.return_ms < upper[op.value][0]:
            upper[op.value] = (op.return_ms, op)
    point, cause = -1, None
    for v in range(1, top + 1):
        if lower[v][0] > point:
            point, cause = lower[v]
        bound, op = upper[v]
        if point > bound:
            assert cause is not None
            return f"{describe(cause)} must precede {describe(op)}, yet began after it ended"
    return None


def describe(op: Operation) -> str:
    return f"the {op.kind} of {op.value} on node {op.node} [{op.call_ms}, {op.return_ms}] ms"


def search(ops: list[Operation], initial: int = 0, max_steps: int = 1_000_000) -> Operation | None:
    """``None`` if the history is linearizable, else an operation no linearization can place (the
    return at which the deepest search got stuck). Raises ``RuntimeError`` past ``max_steps``."""
    head = _linked(ops)
    value, linearized = initial, 0
    stack: list[tuple[_Entry, int]] = []
    seen: set[tuple[int, int]] = set()
    entry, stuck, steps = head.next, None, 0
    while head.next is not None:
        steps += 1
        if steps > max_steps:
            raise RuntimeError(f"linearizability search gave up after {max_steps} steps")
        assert entry is not None
        if entry.is_call:
            assert entry.op is not None
            after = _step(value, entry.op)
            if after is not None:
                key = (linearized | (1 << entry.index), after)
                if key not in seen:
                    seen.add(key)
                    stack.append((entry, value))
                    value, linearized = after, key[0]
                    _lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            stuck = stuck or entry.op
            if not stack:
                return stuck
            top, value = stack.pop()
            linearized &= ~(1 << top.index)
            _unlift(top)
            entry = top.next
    return None
