"""bench/raft.py's sweep finds each side's ceiling: it steps the rate up until one is not sustained,
then halves the gap between the highest sustained and the lowest unsustained rate ``--refine``
times; the rate not sustained comes last (the verdict says from it that the ceiling was found)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import raft  # noqa: E402

ROW = {"leader": 1, "cpu_per_10k": {1: 0.1}, "rss_mb": {1: 40.0}}
ROW.update(p50=1.0, p75=1.0, p99=1.0, p999=1.0)


def _sweep(capacity: int, refine: int, max_rate: int = 700_000) -> list[tuple[int, float]]:
    """A side that commits what it is offered up to ``capacity`` records/s."""

    def step(root: Path, rate: int, args: argparse.Namespace, trials: int) -> dict:
        return {**ROW, "records_per_s": float(min(rate, capacity))}

    args = argparse.Namespace(rates=[20_000, 40_000], step=1.5, max_rate=max_rate, refine=refine)
    args.trials = 0
    rows = raft.sweep("kraftwire", step, Path("/nonexistent"), args)
    return [(rate, row["records_per_s"]) for rate, row in rows]


def test_the_gap_is_halved_refine_times_and_the_failed_rate_comes_last() -> None:
    rows = _sweep(capacity=150_000, refine=2)
    rates = [rate for rate, _ in rows]
    # 20k, 40k, 60k, 90k, 135k sustained; 202k not; then 168k (not), 152k (sustained).
    assert rates == [20_000, 40_000, 60_000, 90_000, 135_000, 152_000, 202_000, 168_000]
    rate, top = raft.ceiling("kraftwire", [(r, {**ROW, "records_per_s": c}) for r, c in rows])
    assert (rate, top["records_per_s"]) == (152_000, 150_000.0)


def test_no_refinement_without_an_unsustained_rate() -> None:
    rows = _sweep(capacity=10**9, refine=2, max_rate=100_000)
    assert [rate for rate, _ in rows] == [20_000, 40_000, 60_000, 90_000]


def test_refine_zero_stops_at_the_first_unsustained_rate() -> None:
    rows = _sweep(capacity=150_000, refine=0)
    assert [rate for rate, _ in rows][-2:] == [135_000, 202_000]
