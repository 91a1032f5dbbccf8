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


# Every error a handler of kraft-node.md §4 and §7 can answer, per response: each must appear in some
# transcript's expected output ("<src>-><dst> <Response> <ERROR>" for a partition-level error,
# "... <Response> error=<ERROR>" for a top-level one).
_LEADER_ONLY = ("FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "NOT_LEADER_OR_FOLLOWER", "BROKER_NOT_AVAILABLE")
_CHANGE_COMMON = ("INCONSISTENT_CLUSTER_ID", "NOT_LEADER_OR_FOLLOWER", "BROKER_NOT_AVAILABLE", "INVALID_REQUEST")
DOCUMENTED_ERRORS = {
    "VoteResponse": ("INCONSISTENT_CLUSTER_ID", "INVALID_REQUEST", "FENCED_LEADER_EPOCH", "INVALID_VOTER_KEY"),
    "BeginQuorumEpochResponse": (
        "INCONSISTENT_CLUSTER_ID",
        "INVALID_REQUEST",
        "FENCED_LEADER_EPOCH",
        "INVALID_VOTER_KEY",
    ),
    "EndQuorumEpochResponse": ("INCONSISTENT_CLUSTER_ID", "INVALID_REQUEST", "FENCED_LEADER_EPOCH"),
    "FetchResponse": ("INCONSISTENT_CLUSTER_ID", "INVALID_REQUEST", *_LEADER_ONLY, "UNKNOWN_SERVER_ERROR"),
    "FetchSnapshotResponse": (
        "INCONSISTENT_CLUSTER_ID",
        "INVALID_REQUEST",
        "UNKNOWN_TOPIC_OR_PARTITION",
        *_LEADER_ONLY,
        "SNAPSHOT_NOT_FOUND",
        "POSITION_OUT_OF_RANGE",
    ),
    "DescribeQuorumResponse": ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER"),
    "AddRaftVoterResponse": (*_CHANGE_COMMON, "REQUEST_TIMED_OUT", "UNSUPPORTED_VERSION", "DUPLICATE_VOTER"),
    "RemoveRaftVoterResponse": (*_CHANGE_COMMON, "REQUEST_TIMED_OUT", "UNSUPPORTED_VERSION", "VOTER_NOT_FOUND"),
    "UpdateRaftVoterResponse": (
        "INCONSISTENT_CLUSTER_ID",
        *_LEADER_ONLY,
        "INVALID_REQUEST",
        "REQUEST_TIMED_OUT",
        "VOTER_NOT_FOUND",
    ),
}


def test_every_documented_error_is_answered_in_some_transcript() -> None:
    text = "\n".join(path.read_text() for path in FILES)
    missing = [
        f"{response} {error}"
        for response, codes in DOCUMENTED_ERRORS.items()
        for error in codes
        if f" {response} {error}" not in text and f" {response} error={error}" not in text
    ]
    assert not missing, f"documented error answers no transcript shows: {missing}"
