"""``pipeline.CollectorPaused``: the collector off inside, and what the block made kept out of the
young generations after it, without touching a program's own frozen objects or losing a cycle."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from kraftwire.spark_decoders.decode.pipeline import CollectorPaused


class _Row:
    """Stands for a row: a tracked object whose identity the generations' lists can be asked for."""


def _young_ids() -> set[int]:
    return {id(obj) for generation in (0, 1) for obj in gc.get_objects(generation)}


@pytest.fixture
def collector_on() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


def test_objects_made_in_the_block_leave_the_young_generations(collector_on: None) -> None:
    with CollectorPaused():
        assert not gc.isenabled()
        rows = [_Row() for _ in range(5000)]
        assert gc.get_count()[0] >= 5000  # nothing collected them meanwhile
    assert gc.isenabled()
    young = _young_ids()
    assert not any(id(row) in young for row in rows)
    # The next allocations count from zero: no pass over the rows is due.
    assert gc.get_count()[0] < 100
    assert any(row is rows[0] for row in gc.get_objects(2))


def test_a_collector_found_off_is_left_off_and_its_generations_alone() -> None:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with CollectorPaused():
            rows = [_Row() for _ in range(100)]
        assert not gc.isenabled()
        assert id(rows[-1]) in _young_ids()
    finally:
        if was_enabled:
            gc.enable()


def test_the_programs_own_frozen_objects_stay_frozen(collector_on: None) -> None:
    mine = [_Row() for _ in range(10)]
    gc.freeze()
    try:
        assert gc.get_freeze_count() >= len(mine)
        with CollectorPaused():
            rows = [_Row() for _ in range(100)]
        assert gc.isenabled()
        # Still in the permanent generation, which gc.get_objects() does not list. (Not the freeze
        # count: it drops whenever any frozen object is freed, as other threads' can be meanwhile.)
        tracked = {id(obj) for obj in gc.get_objects()}
        assert not any(id(row) in tracked for row in mine)
        assert rows  # made and kept: only the collector's bookkeeping differs
    finally:
        gc.unfreeze()


def test_a_cycle_made_in_the_block_is_still_collected(collector_on: None) -> None:
    with CollectorPaused():
        cycle = _Row()
        cycle.itself = cycle  # type: ignore[attr-defined]
        alive = weakref.ref(cycle)
        del cycle
    assert alive() is not None  # reference counting alone cannot free a cycle
    gc.collect()
    assert alive() is None
