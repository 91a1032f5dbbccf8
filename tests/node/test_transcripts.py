"""Runs every transcript in testdata/ (see kraft_datadriven.py for the format; ``pytest --rewrite``
rewrites the expected output), then checks that together they exercise every edge of the transition
table in node/core/states.py (legal state changes are one table, so each edge can be checked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_datadriven import parse_command, run_file
from kraft_harness import Env
from kraftwire.node.core.states import TRANSITIONS

TESTDATA = Path(__file__).parent / "testdata"
FILES = sorted(TESTDATA.glob("*.txt"))
EDGES_SEEN: set = set()
FILES_RUN: set[Path] = set()  # the transcripts this process has run (EDGES_SEEN holds their edges)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_transcript(path: Path, pytestconfig: pytest.Config) -> None:
    env = Env()
    try:
        run_file(path, env.handle, rewrite=pytestconfig.getoption("rewrite"))
    finally:
        for node in env.nodes.values():
            if node.core is not None:
                EDGES_SEEN.update(node.core.edges_seen)
        FILES_RUN.add(path)


def test_every_transition_edge_is_exercised() -> None:
    # Under pytest-xdist this process may have run only some transcripts: run the others here.
    for path in [p for p in FILES if p not in FILES_RUN]:
        env = Env()
        run_file(path, env.handle)
        EDGES_SEEN.update(e for n in env.nodes.values() if n.core for e in n.core.edges_seen)
        FILES_RUN.add(path)
    missing = sorted(f"{a.value} -> {b.value}" for a, b in set(TRANSITIONS) - EDGES_SEEN)
    assert not missing, f"transition-table edges no transcript reaches: {missing}"


def test_every_transcript_opens_with_a_paragraph() -> None:
    for path in FILES:
        assert path.read_text().startswith("# "), path.name


# Every error a handler of docs/kraft.md §4 and §7 can answer, per response: each must appear in some
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


def test_bootstrap_leaves_the_cluster_where_the_spelled_out_election_does() -> None:
    """``bootstrap 3`` stands for election.txt's opening (add-nodes 3, campaign 1, stabilize)."""
    spelled, short = Env(), Env()
    for line in ("add-nodes 3", "campaign 1", "stabilize"):
        spelled.handle(parse_command(line))
    short.handle(parse_command("bootstrap 3"))
    for line in ("state", "log 1", "log 2", "log 3", "deadline"):
        assert short.handle(parse_command(line)) == spelled.handle(parse_command(line)), line
    assert not short.net and not spelled.net
    assert "leader epoch=1" in short.handle(parse_command("state 1"))
