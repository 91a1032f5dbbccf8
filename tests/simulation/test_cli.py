"""``kraftwire simulate``: one summary line per scenario and voter count, exit 1 on any violation, and a
failure report that names the seed, the replay command and the trace."""

from __future__ import annotations

import pytest

from kraftwire.cli import main
from kraftwire.node.core import states


def test_summary_line_and_success(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", "steady", "--runs", "2", "--voters", "3"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    line = out[0]
    for part in ("steady", "voters=3", "runs=2", "events=", "violations=0", "virtual_time="):
        assert part in line, line


def test_violation_exits_non_zero_with_seed_and_trace(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(states.EpochElection, "majority", lambda self: 1)  # a broken core
    code = main(
        ["simulate", "--scenario", "split_brain", "--runs", "1", "--seed", "4", "--voters", "3"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "VIOLATION scenario=split_brain voters=3 seed=4" in out
    assert "replay: kraftwire simulate --scenario split_brain --voters 3 --seed 4 --runs 1" in out
    assert "  | " in out and "violations=1" in out


def test_list_and_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--list"]) == 0
    assert "prevote_rejoin" in capsys.readouterr().out
    assert main(["simulate", "--scenario", "nope"]) == 2
