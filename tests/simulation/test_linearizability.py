"""The linearizability checker of the read workload (issue #13): hand-made histories, the fast check
against the Wing-Gong search on random small histories, and the read scenarios end to end."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.node.simulation import run_one
from kraftwire.node.simulation.linearizability import Operation, check, search


def write(value: int, call: int, ret: int) -> Operation:
    return Operation("write", value, call, ret, 1)


def read(value: int, call: int, ret: int, node: int = 2) -> Operation:
    return Operation("read", value, call, ret, node)


def test_a_read_after_a_write_sees_it():
    assert check([write(1, 0, 10), write(2, 11, 20), read(2, 21, 30)]) is None


def test_a_stale_read_is_caught():
    problem = check([write(1, 0, 10), write(2, 11, 20), read(1, 21, 30)])
    assert problem == (
        "the read of 1 on node 2 [21, 30] ms must precede the write of 2 on node 1 [11, 20] ms, "
        "yet began after it ended"
    )


def test_a_read_concurrent_with_a_write_may_see_either_value():
    assert check([write(1, 0, 10), write(2, 5, 20), read(1, 12, 30), read(2, 13, 14)]) is None


def test_reads_may_not_go_back_in_time():
    assert check([write(1, 0, 10), write(2, 5, 20), read(2, 12, 13), read(1, 14, 15)]) is not None


def test_a_read_of_a_future_or_unknown_value_is_caught():
    assert check([write(1, 10, 20), read(1, 0, 5)]) is not None
    assert check([write(1, 10, 20), read(7, 30, 40)]) is not None


def test_touching_operations_are_concurrent():
    assert check([write(1, 0, 10), read(0, 10, 12)]) is None
    assert search([write(1, 0, 10), read(0, 10, 12)]) is None


@st.composite
def histories(draw: st.DrawFn) -> list[Operation]:
    """A few writes in value order and reads of nearby values, all at small overlapping times: some
    linearizable, many not."""
    ops: list[Operation] = []
    t = 0
    for value in range(1, draw(st.integers(0, 4)) + 1):
        t += draw(st.integers(0, 4))
        ops.append(write(value, t, t + draw(st.integers(0, 8))))
    top = len(ops)
    for _ in range(draw(st.integers(0, 5))):
        call = draw(st.integers(0, t + 8))
        value = draw(st.integers(0, top))
        ops.append(read(value, call, call + draw(st.integers(0, 6))))
    return ops


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(histories())
def test_fast_check_agrees_with_the_wing_gong_search(ops: list[Operation]) -> None:
    assert (check(ops) is None) == (search(ops) is None)


READ_SCENARIOS = [
    "read_steady",
    "read_leader_isolation",
    "read_partition",
    "read_message_loss",
    "read_restarts",
]


@pytest.mark.parametrize("scenario", READ_SCENARIOS)
def test_read_scenarios_are_linearizable(scenario: str) -> None:
    result = run_one(scenario, 3, 0)
    assert result.ok, result.violation
    assert result.observations["reads"] > 50  # the workload really read
