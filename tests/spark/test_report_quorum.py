"""``kraftwire report`` on the captures of a real kraftwire quorum (three node processes on
loopback): its leaders-and-epochs timeline names the leader that the nodes themselves reported
(DescribeQuorum) for each epoch, before and after the first leader was killed."""

from __future__ import annotations

import re

import pytest

from kraftwire.cli import main
from kraftwire.node.runtime.local_cluster import LocalCluster

pytestmark = pytest.mark.timeout(240)
# Timers a shared 2-core machine can keep (as the runtime tests' settings).
SETTINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "controller.quorum.request.timeout.ms": 1000,
}


def test_report_timeline_names_the_quorums_own_leaders(tmp_path):
    cluster = LocalCluster(str(tmp_path / "cluster"), 3, settings=SETTINGS)
    cluster.format()
    captures = [str(tmp_path / f"node{node}.pcapng") for node in cluster.ids]
    try:
        for node, capture in zip(cluster.ids, captures):
            cluster.start(node, "--capture", capture)
        first_leader, first_epoch = cluster.wait_for_leader()
        cluster.kill(first_leader)
        second_leader, second_epoch = cluster.wait_for_leader(not_in=(first_leader,))
    finally:
        cluster.stop_all(graceful_s=5)
    out = tmp_path / "report.html"
    assert main(["report", *captures, "--out", str(out)]) == 0
    page = out.read_text()
    epochs = dict(re.findall(r"<tr data-epoch='(\d+)' data-leaders='([\d,]*)'>", page))
    assert epochs[str(first_epoch)] == str(first_leader)
    assert epochs[str(second_epoch)] == str(second_leader)
    assert all("," not in leaders for leaders in epochs.values()), f"two leaders: {epochs}"
    bars = re.findall(r'<g class="lead" data-epoch="(\d+)" data-leader="(\d+)">', page)
    assert (str(first_epoch), str(first_leader)) in bars
    assert (str(second_epoch), str(second_leader)) in bars
