"""The one exception the simulator raises on purpose: a broken invariant or liveness bound.

It sits at the bottom of the package so that every module (the checker, the counter, the nodes, the
scripts) can raise it without importing anything above itself.
"""

from __future__ import annotations


class Violation(Exception):
    """A broken invariant (or liveness bound); the message names it."""
