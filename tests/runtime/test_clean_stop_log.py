"""A node stopped with SIGTERM or SIGINT says so in its log: one INFO line with its id, its log end
offset and the signal, so that a clean stop is never read as a crash."""

from __future__ import annotations

import os
import re
import signal

import pytest

from kraftwire.node.runtime.producer import MetadataClient
from runtime_settings import formatted_cluster


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_clean_stop_logs_one_info_line(tmp_path, sig):
    with formatted_cluster(tmp_path / "cluster", controllers=1) as cluster:
        cluster.start(1)
        cluster.wait_for_leader(timeout_s=60)
        client = MetadataClient(cluster.endpoints[1], deadline_s=30)
        try:
            last = max(client.produce([b"record-%d" % i], acks=-1) for i in range(3))
        finally:
            client.close()
        cluster.kill(1, sig)
        assert cluster.processes[1].returncode == 0
        text = open(os.path.join(cluster.directory, "node1.log"), encoding="utf-8").read()
    stops = re.findall(r" INFO node 1: shut down cleanly \((\w+)\): log end offset (\d+)\n", text)
    assert stops == [(sig.name, str(last + 1))], text
