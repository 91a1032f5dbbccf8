"""``kraftwire quorum`` against a running 3-voter quorum with an observer: the layout of Kafka's
``kafka-metadata-quorum.sh`` (pinned line by line) and values consistent with each other, with the nodes'
own directories and with the clock; Kafka's argument order (connection options before the action) gives
the same output; the dry runs and refusals print Kafka's messages and change nothing."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.storage.layout import read_meta_properties, uuid_to_str
from runtime_settings import TEST_SETTINGS

pytestmark = pytest.mark.timeout(240)

STATUS_LABELS = [
    "ClusterId",
    "LeaderId",
    "LeaderEpoch",
    "HighWatermark",
    "MaxFollowerLag",
    "MaxFollowerLagTimeMs",
    "CurrentVoters",
    "CurrentObservers",
]
TABLE_HEADER = [
    "NodeId",
    "DirectoryId",
    "LogEndOffset",
    "Lag",
    "LastFetchTimestamp",
    "LastCaughtUpTimestamp",
    "Status",
]


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    """Voters 1-3 and node 4 formatted with no initial voters, fetching as an observer."""
    cluster = LocalCluster(str(tmp_path_factory.mktemp("q") / "c"), 3, settings=TEST_SETTINGS)
    cluster.format()
    try:
        cluster.start_all()
        cluster.wait_for_leader()
        observer = cluster.add_node()
        cluster.start(observer)
        _wait_for_observer(cluster, observer)
        yield cluster
    finally:
        cluster.stop_all(graceful_s=5)


def _wait_for_observer(cluster: LocalCluster, node_id: int, timeout_s: float = 60) -> None:
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop:
        described = cluster.describe()
        if described and any(
            o.replica_id == node_id for o in described[1].topics[0].partitions[0].observers
        ):
            return
        time.sleep(0.2)
    raise AssertionError(f"node {node_id} never showed as an observer")


def quorum_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kraftwire", "quorum", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.endpoints[i].port}" for i in (1, 2, 3))


def directory_id(cluster: LocalCluster, node_id: int) -> str:
    return uuid_to_str(read_meta_properties(cluster.log_dir(node_id)).directory_id)


def parse_status(text: str) -> dict[str, str]:
    lines = text.rstrip("\n").split("\n")
    assert [line.split(":", 1)[0] for line in lines] == STATUS_LABELS
    for line in lines:  # every value starts at column 24, after the label, colon and spaces
        assert re.fullmatch(r"[A-Za-z]+: +\S.*", line) and line[23] == " " and line[24] != " "
    return {line.split(":", 1)[0]: line[24:] for line in lines}


def test_status_is_kafkas_layout_with_consistent_values(quorum):
    result = quorum_cli("describe", "--bootstrap-controller", bootstrap(quorum), "--status")
    assert result.returncode == 0, result.stderr
    status = parse_status(result.stdout)
    assert status["ClusterId"] == quorum.cluster_id
    leader, epoch = int(status["LeaderId"]), int(status["LeaderEpoch"])
    assert leader in (1, 2, 3) and epoch >= 1
    assert int(status["HighWatermark"]) >= 1 and int(status["MaxFollowerLag"]) >= 0
    lag_time = int(status["MaxFollowerLagTimeMs"])
    assert lag_time >= -1
    # the lists are Kafka's JSON-like text: valid JSON, voters with endpoints, the observer without
    voters = json.loads(status["CurrentVoters"])
    assert voters == [
        {
            "id": i,
            "directoryId": directory_id(quorum, i),
            "endpoints": [f"CONTROLLER://127.0.0.1:{quorum.endpoints[i].port}"],
        }
        for i in (1, 2, 3)
    ]
    assert json.loads(status["CurrentObservers"]) == [
        {"id": 4, "directoryId": directory_id(quorum, 4)}
    ]
    assert status["CurrentVoters"].startswith('[{"id": 1, "directoryId": "')


def test_kafkas_argument_order_gives_the_same_layout(quorum):
    ours = quorum_cli("describe", "--bootstrap-controller", bootstrap(quorum), "--status")
    kafkas = quorum_cli("--bootstrap-controller", bootstrap(quorum), "describe", "--status")
    assert kafkas.returncode == 0, kafkas.stderr
    mine, theirs = parse_status(ours.stdout), parse_status(kafkas.stdout)
    for label in ("ClusterId", "CurrentVoters", "CurrentObservers"):
        assert mine[label] == theirs[label]


def parse_table(text: str) -> list[dict[str, str]]:
    lines = text.rstrip("\n").split("\n")
    cells = [line.split("\t") for line in lines]
    for row in cells:  # each cell is followed by a tab, the last one too
        assert len(row) == len(TABLE_HEADER) + 1 and row[-1] == ""
    for column in range(len(TABLE_HEADER)):  # cells padded to the widest of their column
        widths = {len(row[column]) for row in cells}
        assert len(widths) == 1
        assert max(len(row[column].rstrip()) for row in cells) == widths.pop()
    assert [c.rstrip() for c in cells[0][:-1]] == TABLE_HEADER
    return [dict(zip(TABLE_HEADER, (c.rstrip() for c in row))) for row in cells[1:]]


def test_replication_is_kafkas_table_with_consistent_values(quorum):
    before_ms = int(time.time() * 1000)
    result = quorum_cli("describe", "--bootstrap-controller", bootstrap(quorum), "--replication")
    after_ms = int(time.time() * 1000)
    assert result.returncode == 0, result.stderr
    rows = parse_table(result.stdout)
    assert [r["Status"] for r in rows] == ["Leader", "Follower", "Follower", "Observer"]
    leader = rows[0]
    assert sorted(int(r["NodeId"]) for r in rows[:3]) == [1, 2, 3] and rows[3]["NodeId"] == "4"
    for row in rows:
        assert row["DirectoryId"] == directory_id(quorum, int(row["NodeId"]))
        assert int(row["Lag"]) == int(leader["LogEndOffset"]) - int(row["LogEndOffset"])
        fetched, caught_up = int(row["LastFetchTimestamp"]), int(row["LastCaughtUpTimestamp"])
        # the leader stamps itself with the time it answers; the others' are a recent past
        assert fetched == -1 or quorum_start_ms(quorum) <= fetched <= after_ms
        assert caught_up == -1 or quorum_start_ms(quorum) <= caught_up <= fetched
    assert before_ms <= int(leader["LastFetchTimestamp"]) <= after_ms
    assert leader["Lag"] == "0"


def quorum_start_ms(cluster: LocalCluster) -> int:
    """A little before the quorum was formatted (its first config file written)."""
    return int(os.stat(cluster.config_path(1)).st_mtime * 1000) - 1000


def test_human_readable_and_json(quorum):
    human = quorum_cli(
        "--bootstrap-controller",
        bootstrap(quorum),
        "describe",
        "--replication",
        "--human-readable",
    )
    assert human.returncode == 0, human.stderr
    for row in parse_table(human.stdout):
        for column in ("LastFetchTimestamp", "LastCaughtUpTimestamp"):
            assert row[column] == "-1" or re.fullmatch(r"\d+ ms ago", row[column])
    as_json = quorum_cli(
        "describe", "--bootstrap-controller", bootstrap(quorum), "--replication", "--json"
    )
    rows = json.loads(as_json.stdout)
    assert [r["Status"] for r in rows] == ["Leader", "Follower", "Follower", "Observer"]
    assert list(rows[0]) == TABLE_HEADER
    refused = quorum_cli(
        "describe", "--bootstrap-controller", bootstrap(quorum), "--status", "--human-readable"
    )
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "kraftwire quorum describe: The option --human-readable is only supported along with --replication"
    )


def test_dry_runs_print_kafkas_messages_and_change_nothing(quorum):
    voter = 2
    removed = quorum_cli(
        "--bootstrap-controller",
        bootstrap(quorum),
        "remove-controller",
        "--controller-id",
        str(voter),
        "--controller-directory-id",
        directory_id(quorum, voter),
        "--dry-run",
    )
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == (
        f"DRY RUN of removing  KRaft controller {voter} with directory id"
        f" {directory_id(quorum, voter)}\n"
    )
    added = quorum_cli(
        "--bootstrap-controller",
        bootstrap(quorum),
        "--command-config",
        quorum.config_path(4),
        "add-controller",
        "--dry-run",
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout == (
        f"DRY RUN of adding controller 4 with directory id {directory_id(quorum, 4)} and"
        f" endpoints: CONTROLLER://127.0.0.1:{quorum.endpoints[4].port}\n"
    )
    partition = quorum.describe()[1].topics[0].partitions[0]
    assert sorted(v.replica_id for v in partition.current_voters) == [1, 2, 3]
    assert [o.replica_id for o in partition.observers] == [4]


def test_a_refused_change_names_the_error_in_one_line(quorum):
    result = quorum_cli(
        "remove-controller",
        "--bootstrap-controller",
        bootstrap(quorum),
        "--controller-id",
        "4",
        "--controller-directory-id",
        directory_id(quorum, 4),
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        "kraftwire quorum remove-controller: the leader refused with VOTER_NOT_FOUND (127)"
    )
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["describe", "--status"], "--bootstrap-controller HOST:PORT is required"),
        (
            ["--bootstrap-controller", "127.0.0.1:1", "add-controller"],
            "add-controller needs the new controller's properties file (--config FILE)",
        ),
        (
            [
                "--bootstrap-controller",
                "127.0.0.1:1",
                "--command-config",
                "x",
                "describe",
                "--status",
            ],
            "cannot read x: No such file or directory",
        ),
        (["--bootstrap-controller", "nowhere", "describe", "--status"], "--bootstrap-controller: "),
    ],
)
def test_usage_errors_are_one_line_exit_2(args, message):
    result = quorum_cli(*args)
    assert result.returncode == 2
    action = next(a for a in ("describe", "add-controller", "remove-controller") if a in args)
    assert result.stderr.startswith(f"kraftwire quorum {action}: {message}")
    assert result.stderr.count("\n") == 1


class CountingRelay:
    """A loopback TCP relay to one node that counts the connections made through it: the test's
    evidence that the tool asked, failed and asked again."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.connections = 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.server.accept()
            except socket.timeout:
                continue
            self.connections += 1
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.server.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        sink.close()


def test_describe_asks_again_until_a_leader_is_back(cluster):
    """Without a majority there is no leader; describe keeps asking (as Kafka's tool does) and answers
    once the killed nodes are back and have elected one."""
    cluster.start_all()
    leader, epoch = cluster.wait_for_leader()
    survivor = next(i for i in cluster.ids if i != leader)
    killed = [i for i in cluster.ids if i != survivor]
    for i in killed:
        cluster.kill(i)
    relay = CountingRelay(cluster.endpoints[survivor].port)
    tool = subprocess.Popen(
        [sys.executable, "-m", "kraftwire", "quorum", "describe", "--status"]
        + ["--bootstrap-controller", f"127.0.0.1:{relay.port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stop = time.monotonic() + 60
        while relay.connections < 2 and tool.poll() is None and time.monotonic() < stop:
            time.sleep(0.05)
        assert relay.connections >= 2, "the tool did not ask a second time"
        for i in killed:
            cluster.start(i)
        out, err = tool.communicate(timeout=90)
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait(timeout=30)
        relay.close()
    assert tool.returncode == 0, err
    status = parse_status(out)
    assert int(status["LeaderId"]) in cluster.ids and int(status["LeaderEpoch"]) > epoch


def test_describe_without_a_majority_gives_up_after_its_timeout(cluster):
    cluster.start_all()
    leader, _ = cluster.wait_for_leader()
    survivor = next(i for i in cluster.ids if i != leader)
    for i in cluster.ids:
        if i != survivor:
            cluster.kill(i)
    result = quorum_cli(
        "describe",
        "--bootstrap-controller",
        f"127.0.0.1:{cluster.endpoints[survivor].port}",
        "--status",
        "--timeout-ms",
        "1500",
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("kraftwire quorum describe: ")
    assert result.stderr.rstrip().endswith("(still so after 1500 ms)")
    assert result.stderr.count("\n") == 1
