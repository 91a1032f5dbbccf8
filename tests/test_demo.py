"""``make demo`` end to end: real node processes, a kill -9 of the leader, a restart that catches up and
the captures decoded. The assertions read the demo's own output, as a person would."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from process_group import run_in_group

pytestmark = pytest.mark.timeout(300)
DEMO_TIMEOUT_S = 240


def run_demo(*args: str) -> subprocess.CompletedProcess:
    """``python -m kraftwire.demo`` in its own process group, so a hung run takes its nodes with it."""
    return run_in_group([sys.executable, "-m", "kraftwire.demo", *args], timeout=DEMO_TIMEOUT_S)


def api_table(out: str) -> dict[str, tuple[int, int]]:
    """API name -> (exchanges, answered) from the per-API table."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["API", "exchanges"])
    table = {}
    for line in lines[start + 1 :]:
        cells = line.split()
        if len(cells) != 4 or not cells[1].isdigit():
            break
        table[cells[0]] = (int(cells[1]), int(cells[2]))
    return table


def replication_row(block: str, node: int) -> list[str]:
    return next(line.split() for line in block.splitlines() if line.split()[:1] == [str(node)])


def test_demo_tells_the_whole_story():
    result = run_demo()
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "Traceback" not in out + result.stderr
    assert "identical to generated/" in out

    elections = re.findall(r"node (\d+) elected leader at epoch (\d+)", out)
    assert len(elections) == 2, out
    (first, first_epoch), (second, second_epoch) = elections
    assert first != second and int(second_epoch) > int(first_epoch)
    assert f"kill -9 of the leader, node {first}" in out

    caught_up = re.search(r"caught up: node (\d+)'s log end offset (\d+) is the leader's\n", out)
    assert caught_up is not None, out
    restarted, offset = int(caught_up[1]), caught_up[2]
    assert restarted == int(first)
    after = out[caught_up.end() :].split("\n==")[0]
    leader_row = replication_row(after, int(second))
    restarted_row = replication_row(after, restarted)
    assert leader_row[2] == restarted_row[2] == offset and leader_row[-1] == "Leader"
    assert int(offset) >= 40  # the 40 acknowledged records at least

    assert out.count("the acknowledged ones, in order, once each") == 3
    table = api_table(out)
    for api in ("Vote", "Fetch", "Produce", "BeginQuorumEpoch", "DescribeQuorum"):
        assert table.get(api, (0, 0))[1] > 0, f"{api} missing from the table:\n{out}"
    assert table["Produce"][0] >= 40
    directory = re.search(r"captures in (\S+)\n", out)[1]
    assert f"removed {directory}" in out and not os.path.exists(directory)


def test_demo_removes_only_the_directory_it_created(tmp_path):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "mine.txt").write_text("not the demo's")
    result = run_demo("--dir", str(occupied))
    assert result.returncode == 2
    assert (
        result.stderr.strip().count("\n") == 0 and "not a new or empty directory" in result.stderr
    )
    assert (occupied / "mine.txt").read_text() == "not the demo's"


class _DescribedCluster:
    def describe(self):
        return ("cluster", None)


@pytest.mark.parametrize("high_watermark, explained", [(-1, True), (40, False)])
def test_status_explains_an_unknown_high_watermark(monkeypatch, capsys, high_watermark, explained):
    from kraftwire import demo
    from kraftwire.node.runtime import cli_quorum

    fields = {"ClusterId": "c", "LeaderId": 2, "LeaderEpoch": 3, "HighWatermark": high_watermark}
    monkeypatch.setattr(cli_quorum, "status_fields", lambda *_: dict(fields, CurrentVoters=[]))
    demo.show_status(_DescribedCluster())
    out = capsys.readouterr().out
    assert f"HighWatermark:          {high_watermark}\n" in out
    assert ("knows its high watermark only once an entry of its own" in out) is explained
