"""``kraftwire report``: one self-contained HTML page (no network, no library) whose latency axis is
logarithmic, whose exchange table filters by API, client id, connection and problem, whose
timeline shows the leader of each epoch, and whose size stays bounded; checked against captures of
known content, and in headless Chromium (skipped where it is not installed, except in CI, whose
.ci/run installs it)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import urllib.parse
from collections import Counter

import pytest

from captures import T0, conversation, pcap_of, write
from election_story import CANDIDATES, LEADERS, RESIGNED, story_packets
from kraftwire.cli import main
from kraftwire.generated import encode_request, encode_response, lookup
from kraftwire.spark_decoders.report import render
from kraftwire.spark_decoders.output.report_data import ROW_LIMIT, sample_indices
from kraftwire.synthetic_capture import Conversation
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(300)
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
# CI installs Chromium (.ci/run), so there a missing browser fails the tests instead of skipping.
needs_browser = pytest.mark.skipif(
    BROWSER is None and not os.environ.get("CI"), reason="Chromium is not installed"
)
API_NAMES = {1: "Fetch", 18: "ApiVersions", 52: "Vote", 53: "BeginQuorumEpoch"}
API_NAMES.update({54: "EndQuorumEpoch", 55: "DescribeQuorum", 59: "FetchSnapshot"})


def attributes(tag: str) -> dict[str, str]:
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def table_rows(dom: str, body_id: str) -> list[dict[str, str]]:
    """The attributes of each row of the table body ``body_id`` in a DOM dump."""
    body = re.search(rf'<tbody id="{body_id}">(.*?)</tbody>', dom, re.S)
    assert body, f"no #{body_id} in the page"
    return [attributes(tag) for tag in re.findall(r"<tr( [^>]*)?>", body.group(1))]


def browser_dom(page_path, fragment: str = "") -> str:
    """The DOM once Chromium has loaded the page from its file:// URL and run its script."""
    assert BROWSER is not None, "CI must install Chromium (.ci/run)"
    url = page_path.as_uri() + (("#" + urllib.parse.urlencode(fragment)) if fragment else "")
    done = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "<tbody" in done.stdout, done.stderr[-2000:]
    return done.stdout


def with_script(page_path, script: str):
    """A copy of the page that runs ``script`` after the page's own."""
    copy = page_path.with_name("scripted-" + page_path.name)
    copy.write_text(page_path.read_text().replace("</body>", f"<script>{script}</script></body>"))
    return copy


def two_connections(tmp_path):
    """60 KRaft exchanges: the first 25 on one connection, the other 35 on another."""
    exchanges = kraft_exchanges(60, seed=3)
    first = conversation(exchanges[:25], client=("10.0.0.1", 40001))
    second = conversation(exchanges[25:], client=("10.0.0.3", 40003), t0=T0 + 500_000)
    packets = sorted(first.packets + second.packets, key=lambda p: p[0])
    capture = write(tmp_path, "kraft.pcap", pcap_of(packets))
    out = tmp_path / "report.html"
    assert main(["report", capture, "--out", str(out)]) == 0
    return exchanges, out


def fetch_error(exchange) -> int:
    return exchange.response_body.responses[0].partitions[0].error_code


def test_page_is_self_contained_and_never_overwritten(tmp_path):
    exchanges, out = two_connections(tmp_path)
    page = out.read_text()
    # Nothing to fetch: no script or style from elsewhere, no image, no address but SVG's name.
    assert not re.search(r"<(script|img|link|iframe)[^>]*\b(src|href)=", page)
    assert set(re.findall(r"https?://[^\s\"']+", page)) == {"http://www.w3.org/2000/svg"}
    names = re.findall(r'<g class="api-row" data-api="([^"]+)"', page)
    assert Counter(names) == Counter(set(API_NAMES[e.api_key] for e in exchanges))
    assert "All 60 exchanges" in page
    assert main(["report", str(tmp_path / "kraft.pcap"), "--out", str(out)]) == 2


KINDS = {"Fetch": (1, 17, 500_000), "Vote": (52, 2, 300)}  # name: key, version, latency (µs)


def poll_and_vote(tmp_path):
    """A report of 20 Fetch long polls answered in 500 ms and 20 Votes answered in 300 µs."""
    conv = Conversation(("10.0.0.1", 40001), ("10.0.0.2", 9093))
    conv.handshake(T0)
    for i in range(40):
        name = "Fetch" if i % 2 else "Vote"
        _, version, latency_us = KINDS[name]
        request = encode_request(lookup(name + "Request")(), version, i, "c")
        conv.send(True, request, T0 + i * 1_000_000_000)
        response = encode_response(lookup(name + "Response")(), version, i)
        conv.send(False, response, T0 + i * 1_000_000_000 + latency_us * 1000)
    capture, out = write(tmp_path, "c.pcap", pcap_of(conv.packets)), tmp_path / "report.html"
    assert main(["report", capture, "--out", str(out)]) == 0
    return out


def test_latency_axis_is_logarithmic(tmp_path):
    """Fetch's long poll (500 ms) and Vote (300 µs) both sit where a log axis puts them: 3.2
    decades apart, not Vote squashed against zero as on a linear axis."""
    page = poll_and_vote(tmp_path).read_text()
    # The decade grid lines are evenly spaced: 10 µs, 100 µs, ..., 100 s.
    grid = [float(x) for x in re.findall(r'<line x1="([\d.]+)"[^>]*class="grid"', page)]
    gaps = [right - left for left, right in zip(grid, grid[1:])]
    assert len(grid) == 8 and max(gaps) - min(gaps) < 0.2
    decade = grid[1] - grid[0]
    medians = {
        api: float(
            re.search(rf'data-api="{api}".*?<line x1="([\d.]+)"[^>]*class="p50"', page, re.S)[1]
        )
        for api in KINDS
    }
    for api, (_, _, latency_us) in KINDS.items():
        assert medians[api] == pytest.approx(grid[0] + decade * (math.log10(latency_us) - 1), abs=1)
    assert medians["Fetch"] - medians["Vote"] == pytest.approx(
        decade * math.log10(500_000 / 300), abs=1
    )


def test_sample_keeps_every_problem_and_bounds_the_rest():
    expected = [3, 9, 100, 112, 125, 137, 150, 162, 175, 187]  # every 12.5th of the others
    assert sample_indices([[3, 9]], [list(range(100, 200))], 10) == expected
    # Problems take at most four fifths of the limit while there are others...
    chosen = sample_indices([list(range(0, 50))], [list(range(50, 100))], 10)
    assert len(chosen) == 10 and sum(i < 50 for i in chosen) == 8
    # ...and all of it when there are none.
    assert sample_indices([list(range(50))], [], 10) == list(range(0, 50, 5))
    assert sample_indices([[1]], [[2]], 10) == [1, 2]
    assert sample_indices([], [], 10) == []


def test_sample_gives_each_api_an_equal_share():
    """Two Votes among a thousand Fetches are both kept; a problem API's share is the same."""
    fetches, votes = list(range(1000)), [5000, 5001]
    assert sample_indices([], [fetches, votes], 10) == list(range(0, 1000, 125)) + votes
    chosen = sample_indices([list(range(10_000, 10_100)), [20_000]], [fetches], 10)
    assert 20_000 in chosen and len(chosen) == 10
    assert sum(10_000 <= i < 10_100 for i in chosen) == 7  # 8 for problems, one of them Vote's
    # Shares of 3, 3 and 4: the groups that are shorter than their share leave the rest over.
    assert len(sample_indices([], [[1], [2, 3], list(range(100, 200))], 10)) == 10


def synthetic_rows(count: int, connections: int) -> list[dict]:
    """Rows as the decoder makes them (no capture to decode): Fetch with its current leader, Vote,
    ApiVersions; every 50th a NOT_LEADER_OR_FOLLOWER."""
    import datetime as dt

    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for i in range(count):
        api = ("Fetch", "Fetch", "Fetch", "Vote", "ApiVersions")[i % 5]
        error = 6 if i % 50 == 0 else 0
        ts = start + dt.timedelta(microseconds=i * 1000)
        rows.append(
            {
                "capture_file": "big.pcap",
                "conn_id": f"c{i % connections}",
                "client_ip": "10.0.0.1",
                "client_port": 10000 + i % connections,
                "server_ip": "10.0.0.2",
                "server_port": 9093,
                "request_ts": ts,
                "response_ts": ts + dt.timedelta(microseconds=500),
                "latency_us": 500.0 + i % 997,
                "api_key": {"Fetch": 1, "Vote": 52, "ApiVersions": 18}[api],
                "api_name": api,
                "api_version": 17,
                "correlation_id": i,
                "client_id": f"raft-client-{i % 3}",
                "request_size": 120,
                "response_size": 300,
                "error_codes": [0, error],
                "status": "ok",
                "request_json": '{"replicaState":{"replicaId":2},"currentLeaderEpoch":4}',
                "response_json": '{"currentLeader":{"leaderId":1,"leaderEpoch":4}}',
            }
        )
    return rows


def test_page_size_stays_bounded():
    """The rows of a 200k-packet capture (100,000 exchanges on 2,000 connections): the page embeds
    ROW_LIMIT of them, every problem among them, and stays under 2 MB."""
    rows = synthetic_rows(100_000, 2_000)
    page = render(rows, ["big.pcap"])
    assert len(page.encode()) < 2_000_000
    assert (
        f"Showing {ROW_LIMIT:,} of 100,000 exchanges: all 2,000 with a problem included, and "
        f"{ROW_LIMIT - 2000:,} of the 98,000 others (each API an equal share" in page
    )
    data = json.loads(re.search(r"json'>(.*?)</script>", page, re.S)[1])
    assert Counter(data["tables"]["api"][row[3]] for row in data["rows"]) == {
        "Fetch": 2000 + 1000,  # the problems are all Fetches, the others shared by three APIs
        "Vote": 1000,
        "ApiVersions": 1000,
    }
    assert "100,000 exchanges in big.pcap" in page and "2,000 connections" in page


@needs_browser
def test_table_filters_by_api_client_and_problem_in_chromium(tmp_path):
    exchanges, out = two_connections(tmp_path)
    everything = table_rows(browser_dom(out), "rows-body")
    assert len(everything) == 60
    fetches = table_rows(browser_dom(out, {"api": "Fetch"}), "rows-body")
    assert len(fetches) == sum(e.api_key == 1 for e in exchanges) and fetches
    assert {row["data-api"] for row in fetches} == {"Fetch"}
    label = "NOT_LEADER_OR_FOLLOWER (6)"
    failed = table_rows(browser_dom(out, {"problem": label}), "rows-body")
    truth = [e for e in exchanges if e.api_key == 1 and fetch_error(e) == 6]
    assert len(failed) == len(truth) and truth
    assert all(row["data-problems"] == label for row in failed)
    client = table_rows(browser_dom(out, {"client": "raft-client-2", "api": "Vote"}), "rows-body")
    truth = [e for e in exchanges if e.client_id == "raft-client-2" and e.api_key == 52]
    assert len(client) == len(truth) and truth


@needs_browser
def test_clicking_a_column_heading_sorts_the_table_in_chromium(tmp_path):
    """The first click on the latency heading puts the slowest first, the second the fastest."""
    out = poll_and_vote(tmp_path)
    once = "document.querySelector('#rows th[data-sort=\"latency_us\"]').click();"
    slowest = table_rows(browser_dom(with_script(out, once)), "rows-body")
    fastest = table_rows(browser_dom(with_script(out, once * 2)), "rows-body")
    assert [row["data-api"] for row in slowest] == ["Fetch"] * 20 + ["Vote"] * 20
    assert [row["data-api"] for row in fastest] == ["Vote"] * 20 + ["Fetch"] * 20


@needs_browser
def test_clicking_a_connection_filters_the_table_in_chromium(tmp_path):
    """The connection list counts each connection's exchanges; a click on the smaller one lists
    only its 25 exchanges and puts it in the URL fragment."""
    exchanges, out = two_connections(tmp_path)
    click = (
        "document.querySelector('#conn-body tr[data-conn=\"1\"]').click();"
        "document.body.dataset.fragment = location.hash;"
    )
    dom = browser_dom(with_script(out, click))
    connections = table_rows(dom, "conn-body")
    assert [c["data-conn"] for c in connections] == ["0", "1"]
    cells = re.findall(r'<tr class="[^"]*" data-conn="(\d)">(.*?)</tr>', dom, re.S)
    counts = {conn: re.findall(r"<td[^>]*>([^<]*)</td>", row)[4] for conn, row in cells}
    assert counts == {"0": "35", "1": "25"}
    listed = table_rows(dom, "rows-body")
    assert len(listed) == 25 and {row["data-conn"] for row in listed} == {"1"}
    assert 'data-fragment="#conn=1"' in dom


@needs_browser
def test_timeline_shows_each_epochs_leader_in_chromium(tmp_path):
    capture = write(tmp_path, "election.pcap", pcap_of(story_packets()))
    out = tmp_path / "report.html"
    assert main(["report", capture, "--out", str(out)]) == 0
    measure = (
        "document.body.dataset.bars = [...document.querySelectorAll('#timeline .lead')].map("
        "g => [g.dataset.epoch, g.dataset.leader, Math.round(g.getBBox().x),"
        " Math.round(g.getBBox().width)].join(':')).join(' ');"
    )
    dom = browser_dom(with_script(out, measure))
    bars = [bar.split(":") for bar in re.search(r'data-bars="([^"]*)"', dom)[1].split()]
    assert {int(epoch): int(leader) for epoch, leader, _, _ in bars} == LEADERS
    assert all(int(width) > 0 for _, _, _, width in bars)
    assert int(bars[0][2]) < int(bars[1][2])  # epoch 1 drawn before epoch 2
    epochs = table_rows(dom, "epochs-body")
    assert {int(e["data-epoch"]): int(e["data-leaders"]) for e in epochs} == LEADERS
    for epoch, candidates in CANDIDATES.items():
        row = re.search(rf"<tr data-epoch=\"{epoch}\".*?</tr>", dom, re.S)[0]
        expected = ", ".join(f"node {c} ({votes})" for c, votes in candidates.items())
        assert f"<td>{expected}</td>" in row
        assert (re.findall(r"<td>([^<]*)</td>", row)[3] != "") == (epoch in RESIGNED)
    # The table's quorum column says what each exchange said.
    vote_dom = browser_dom(out, {"api": "Vote"})
    assert len(table_rows(vote_dom, "rows-body")) == 4
    assert (
        "pre-vote for 3, epoch 1 granted" in vote_dom and "vote for 1, epoch 1 granted" in vote_dom
    )
    assert vote_dom.count('<td class="num">300 µs</td>') == 4  # the story answers in 300 µs


def test_text_from_the_capture_cannot_break_out_of_the_page():
    """A client id is the peer's text: it stays data (in the JSON block, escaped), never markup."""
    hostile = "</script><script>document.title='owned'</script><b>"
    rows = synthetic_rows(3, 1)
    for row in rows:
        row["client_id"] = hostile
    page = render(rows, ["<b>capture</b>.pcap"])
    assert "<script>document.title" not in page and "<b>" not in page
    block = re.search(
        r"<script id='report-data' type='application/json'>(.*?)</script>", page, re.S
    )
    assert json.loads(block[1])["tables"]["client"] == [hostile]
    # Its length is the peer's choice too (up to 32,767): the page keeps its first 99 characters.
    rows[1]["client_id"], rows[2]["client_id"] = "x" * 32767, None
    tables = json.loads(re.search(r"json'>(.*?)</script>", render(rows, ["c"]), re.S)[1])
    assert sorted(tables["tables"]["client"]) == sorted([hostile, "x" * 99 + "…", "(none)"])
