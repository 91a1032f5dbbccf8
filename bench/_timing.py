"""Tiny timing helper shared by the bench scripts: calibrated loops, best of interleaved rounds."""

from __future__ import annotations

import time
from collections.abc import Callable


def calibrate(fn: Callable[[], object], target: float) -> int:
    """A loop count for which ``n`` calls of ``fn`` take about ``target`` seconds."""
    n = 1
    while True:
        elapsed = time_loop(fn, n)
        if elapsed >= target / 10 or n >= 1 << 24:
            return max(1, round(n * target / max(elapsed, 1e-9)))
        n *= 4 if elapsed < target / 100 else 2


def time_loop(fn: Callable[[], object], n: int) -> float:
    """Seconds for ``n`` back-to-back calls of ``fn`` (time.perf_counter)."""
    loop = range(n)
    start = time.perf_counter()
    for _ in loop:
        fn()
    return time.perf_counter() - start


def best_rates(
    fns: dict[str, Callable[[], object]], target: float, rounds: int
) -> dict[str, tuple[float, float]]:
    """ops/s of each function as (best, median) over ``rounds`` interleaved calibrated loops."""
    loops = {name: calibrate(fn, target) for name, fn in fns.items()}
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(loops[name] / time_loop(fn, loops[name]))
    result = {}
    for name, rates in samples.items():
        rates.sort()
        mid = len(rates) // 2
        median = rates[mid] if len(rates) % 2 else (rates[mid - 1] + rates[mid]) / 2
        result[name] = (rates[-1], median)
    return result
