"""Runs every transcript in testdata/ (see kraft_datadriven.py for the format; KRAFTWIRE_REWRITE=1
rewrites the expected output), then checks that together they exercise every edge of the transition
table in node/core/states.py (style.md example 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_datadriven import run_file
from kraft_harness import Env
from kraftwire.node.core.states import TRANSITIONS

TESTDATA = Path(__file__).parent / "testdata"
FILES = sorted(TESTDATA.glob("*.txt"))
EDGES_SEEN: set = set()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_transcript(path: Path) -> None:
    env = Env()
    try:
        run_file(path, env.handle)
    finally:
        for node in env.nodes.values():
            if node.core is not None:
                EDGES_SEEN.update(node.core.edges_seen)


def test_every_transition_edge_is_exercised() -> None:
    if not EDGES_SEEN:
        for path in FILES:
            test_transcript(path)
    missing = sorted(f"{a.value} -> {b.value}" for a, b in set(TRANSITIONS) - EDGES_SEEN)
    assert not missing, f"transition-table edges no transcript reaches: {missing}"


def test_every_transcript_opens_with_a_paragraph() -> None:
    for path in FILES:
        assert path.read_text().startswith("# "), path.name
