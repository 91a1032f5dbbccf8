"""What a user reads from ``kraftwire simulate``: a bad run count is a one-line usage error, a trace
opens with a legend explaining its units, names and counters, messages are named by API everywhere,
and ``--trace-filter`` selects lines by node, API or kind."""

from __future__ import annotations

import re

import pytest

from kraftwire.cli import main
from kraftwire.generated.vote_request import VoteRequest
from kraftwire.generated import errors
from kraftwire.node.simulation.runner import COUNTED_OBSERVATIONS, Summary
from kraftwire.node.simulation.trace import KINDS, LEGEND, Trace, TraceFilter

TIMED_LINE = re.compile(r"^ +-?\d+ ")


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", "--runs", "1", "--voters", "3", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def trace_lines(out: str) -> list[str]:
    """The event lines of a ``--trace`` output (no legend, headers or summary)."""
    return [line for line in out.splitlines() if TIMED_LINE.match(line)]


@pytest.mark.parametrize("runs", ["0", "-3"])
def test_no_runs_is_a_usage_error(capsys: pytest.CaptureFixture[str], runs: str) -> None:
    code = main(["simulate", "--scenario", "steady", "--runs", runs])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.strip().splitlines() == [
        f"kraftwire simulate: --runs must be at least 1, not {runs}"
    ]


def test_a_trace_opens_with_the_legend(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = simulate(capsys, "--scenario", "steady", "--trace")
    assert code == 0 and out.startswith(LEGEND + "\nTRACE scenario=steady")
    assert out.count("# How to read a trace") == 1
    for explained in ("virtual milliseconds", "n-2", "admin", "refused", "epoch_bumped"):
        assert explained in LEGEND, explained


def test_the_legend_explains_every_counter_and_kind() -> None:
    counters = re.findall(
        r"(\w+)=", Summary("s", 3, observations=dict.fromkeys(COUNTED_OBSERVATIONS, 1)).line()
    )
    assert {"runs", "events", "violations", "virtual_time", "wall", *COUNTED_OBSERVATIONS} <= set(
        counters
    )
    for word in [*counters, *KINDS]:
        assert re.search(rf"\b{re.escape(word)}\b", LEGEND), word


def test_failures_and_drops_name_the_api() -> None:
    trace = Trace(None)
    trace.add((7, "fail", 1, -3, 1, errors.BROKER_NOT_AVAILABLE))
    trace.add((8, "drop", 2, 100, 55, False, "lost"))
    trace.add((9, "drop", 3, 1, 52, True, "partitioned"))
    assert trace.lines() == [
        "       7 n1: request Fetch to n-3 failed: BROKER_NOT_AVAILABLE",
        "       8 drop n2 -> admin DescribeQuorumResponse: lost",
        "       9 drop n3 -> n1 VoteRequest: partitioned",
    ]


def test_no_api_number_left_in_a_trace(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = simulate(capsys, "--scenario", "message_loss", "--trace")
    lines = trace_lines(out)
    assert any(" failed: " in line for line in lines) and any(" drop " in line for line in lines)
    assert not [line for line in lines if re.search(r"api=\d|n100|nadmin", line)]


def test_filter_by_node(capsys: pytest.CaptureFixture[str]) -> None:
    _, everything, _ = simulate(capsys, "--scenario", "leader_isolation", "--trace")
    _, out, _ = simulate(
        capsys, "--scenario", "leader_isolation", "--trace", "--trace-filter", "n2"
    )
    assert out == ""  # a malformed term is refused (checked below), nothing runs
    _, out, _ = simulate(
        capsys, "--scenario", "leader_isolation", "--trace", "--trace-filter", "node=2"
    )
    kept = trace_lines(out)
    about_2 = [line for line in trace_lines(everything) if re.search(r"\bn2\b", line)]
    assert kept and kept == about_2


def test_filter_by_api_and_kind_combine(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--scenario", "leader_isolation", "--trace")
    _, out, _ = simulate(capsys, *args, "--trace-filter", "api=Vote", "--trace-filter", "kind=recv")
    kept = trace_lines(out)
    assert kept and all(re.search(r" <- \S+ Vote(Request|Response) ", line) for line in kept)
    _, out, _ = simulate(
        capsys, *args, "--trace-filter", "kind=state", "--trace-filter", "kind=fault"
    )
    kept = trace_lines(out)
    assert any("FAULT" in line for line in kept) and any(") -> " in line for line in kept)
    assert all(
        "FAULT" in line or re.search(r"n\d+ \w+\(e\d+.*\) -> \w+\(e\d+", line) for line in kept
    )


@pytest.mark.parametrize(
    "term, complaint",
    [
        ("n2", "is not node=N, api=NAME or kind=KIND"),
        ("api=Fetchh", "unknown API"),
        ("kind=message", "unknown kind"),
        ("node=two", "a node is a number"),
        ("epoch=3", "filter on node, api or kind"),
    ],
)
def test_bad_filter_terms(capsys: pytest.CaptureFixture[str], term: str, complaint: str) -> None:
    code, out, err = simulate(capsys, "--scenario", "steady", "--trace-filter", term)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and complaint in err and repr(term) in err


def test_filter_terms_on_entries() -> None:
    vote = (5, "recv", 2, 1, 2, VoteRequest())
    fetch_failed = (6, "fail", 3, 1, 1, errors.BROKER_NOT_AVAILABLE)
    fault = (7, "fault", "FAULT", "kill", "n3", "")
    violation = (8, "violation", "VIOLATION", "SingleLeader")
    entries = [vote, fetch_failed, fault, violation]

    def kept(*terms: str) -> list[tuple]:
        keep = TraceFilter(terms)
        return [e for e in entries if keep(e)]

    assert kept() == entries
    assert kept("node=3") == [fetch_failed, fault, violation]
    assert kept("node=1", "node=2") == [vote, fetch_failed, violation]
    assert kept("api=vote") == [vote, violation]
    assert kept("node=3", "kind=fault") == [fault, violation]
    assert kept("api=Fetch", "kind=recv") == [violation]


def test_help_documents_the_filter(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["simulate", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for part in (
        "--trace-filter TERM",
        "node=N",
        "api=NAME",
        "kind=KIND",
        "Repeatable",
        "leader-change",
    ):
        assert part in text, part
