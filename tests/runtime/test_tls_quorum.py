"""A quorum of real processes over mutual TLS (issue 26, item 1): it elects, replicates and fails over
with every connection, peers' and tools', through TLS; a client without a trusted certificate is
refused at the handshake with one log line and the quorum does not notice; the tools connect with
--command-config."""

from __future__ import annotations

import glob
import os
import socket
import subprocess
import sys

import pytest

from dumps import data_records
from runtime_settings import TEST_SETTINGS
from kraftwire.node.runtime.admin import describe_cluster_request
from kraftwire.node.runtime.client import ClientError, KafkaConnection, use_tls
from kraftwire.node.runtime.command_config import client_tls
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.runtime.tls import client_context, tls_settings
from kraftwire.node.runtime.tls_certs import make_pki

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def tls_cluster(tmp_path):
    local = LocalCluster(str(tmp_path / "cluster"), 3, settings=TEST_SETTINGS, tls=True)
    local.format()
    previous = use_tls(client_tls(local.client_properties))  # this process's own calls
    try:
        yield local
    finally:
        use_tls(previous)
        local.stop_all(graceful_s=5)


def tool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kraftwire", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def node_logs(cluster) -> str:
    text = ""
    for path in sorted(glob.glob(os.path.join(cluster.directory, "node*.log"))):
        with open(path) as f:
            text += f.read()
    return text


def test_mtls_quorum_elects_replicates_and_fails_over(tls_cluster):
    cluster = tls_cluster
    config = ["--command-config", cluster.client_properties]
    cluster.start_all()
    first, epoch = cluster.wait_for_leader()
    bootstrap = f"127.0.0.1:{cluster.endpoints[first].port}"
    before = [f"before-{i}" for i in range(20)]
    produced = tool(
        "produce", "--bootstrap-controller", bootstrap, *config, stdin="\n".join(before) + "\n"
    )
    assert produced.returncode == 0, produced.stderr

    cluster.kill(first)  # SIGKILL
    second, new_epoch = cluster.wait_for_leader(not_in=(first,))
    assert new_epoch > epoch
    bootstrap = f"127.0.0.1:{cluster.endpoints[second].port}"
    after = [f"after-{i}" for i in range(20)]
    produced = tool(
        "produce", "--bootstrap-controller", bootstrap, *config, stdin="\n".join(after) + "\n"
    )
    assert produced.returncode == 0, produced.stderr
    consumed = tool(
        "consume", "--bootstrap-controller", bootstrap, *config, "--from-beginning",
        "--max-records", "40",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == before + after
    status = tool("quorum", "describe", "--status", "--bootstrap-controller", bootstrap, *config)
    assert status.returncode == 0, status.stderr
    assert f"LeaderId:               {second}" in status.stdout

    plain = tool("quorum", "describe", "--status", "--bootstrap-controller", bootstrap)
    assert plain.returncode == 1 and plain.stderr.count("\n") == 1, plain.stderr

    cluster.stop_all()
    for node in cluster.ids:  # the killed leader holds what it acknowledged before it died
        values = [v.decode() for _, _, v in data_records(cluster.partition_dir(node))]
        assert values[: len(before)] == before, f"node {node}"
        if node != first:
            assert values == before + after, f"node {node}"
    assert "Traceback" not in node_logs(cluster)


def test_a_client_without_a_trusted_certificate_is_refused_and_the_quorum_does_not_notice(
    tls_cluster, tmp_path
):
    cluster = tls_cluster
    cluster.start_all()
    leader, epoch = cluster.wait_for_leader()
    endpoint = cluster.endpoints[leader]
    ca = os.path.join(cluster.directory, "tls", "ca.pem")
    stranger = make_pki(str(tmp_path / "stranger"), ["intruder"])  # another CA signed it
    attempts = {
        "untrusted certificate": {"ssl.keystore.location": stranger["intruder"]},
        "no certificate": {},
    }
    for name, keystore in attempts.items():
        props = {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": ca,
            "ssl.keystore.type": "PEM",
        }
        previous = use_tls(client_context(tls_settings({**props, **keystore}, name)))
        try:
            with pytest.raises(ClientError):
                with KafkaConnection(endpoint.host, endpoint.port, timeout_s=10) as connection:
                    connection.call(describe_cluster_request())
        finally:
            use_tls(previous)
    assert plaintext_answer(endpoint) == b""  # a plaintext ApiVersions: closed, not answered
    assert cluster.leader() == (leader, epoch)
    with open(os.path.join(cluster.directory, f"node{leader}.log")) as f:
        refused = [line for line in f if "TLS handshake failed" in line]
    assert len(refused) == 3, refused
    assert "Traceback" not in node_logs(cluster)


def plaintext_answer(endpoint) -> bytes:
    """What the node sends back to an ApiVersions v0 request sent without TLS, until it closes."""
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as sock:
        sock.sendall(b"\x00\x00\x00\x0c\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff\x00\x00")
        received = b""
        while True:
            try:
                chunk = sock.recv(4096)
            except ConnectionResetError:
                return received
            if not chunk:
                return received
            received += chunk


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"ssl.keystore.location": "/nonexistent/node.pem"}, "no such file /nonexistent/node.pem"),
        ({"ssl.keystore.location": "MISMATCHED"}, "the private key does not match the certificate"),
        ({"listener.security.protocol.map": "CONTROLLER:SASL_SSL"}, "kraftwire supports PLAINTEXT"),
        ({"ssl.keystore.password": "secret"}, "SSL key store password cannot be specified"),
    ],
)
def test_a_bad_tls_setting_is_one_line_at_start(tmp_path, settings, message):
    pki = make_pki(str(tmp_path / "pki"), ["a", "b"])
    with open(pki["a"]) as a, open(pki["b"]) as b:
        key_a, cert_b = a.read().split("-----BEGIN CERTIFICATE-----")[0], b.read()
    mismatched = tmp_path / "mismatched.pem"
    mismatched.write_text(key_a + cert_b[cert_b.index("-----BEGIN CERTIFICATE-----") :])
    lines = {
        "node.id": "1",
        "process.roles": "controller",
        "listeners": "CONTROLLER://127.0.0.1:9",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": "1@127.0.0.1:9",
        "metadata.log.dir": str(tmp_path / "log"),
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki["a"],
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki["ca"],
        "ssl.client.auth": "required",
    }
    lines.update({k: str(mismatched) if v == "MISMATCHED" else v for k, v in settings.items()})
    path = tmp_path / "node.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    result = tool("node", "start", "--config", str(path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "log").exists()


def test_a_node_whose_certificate_no_peer_trusts_takes_no_part(tls_cluster, tmp_path):
    """Node 3 holds a certificate from another CA: nodes 1 and 2 refuse it both ways (each says so
    once), elect and commit between themselves, and node 3 receives nothing."""
    cluster = tls_cluster
    stranger = make_pki(str(tmp_path / "stranger"), ["node3"])
    os.replace(stranger["node3"], os.path.join(cluster.directory, "tls", "node3.pem"))
    cluster.start_all()
    leader, _ = cluster.wait_for_leader()
    assert leader in (1, 2)
    produced = tool(
        "produce",
        "--bootstrap-controller",
        f"127.0.0.1:{cluster.endpoints[leader].port}",
        "--command-config",
        cluster.client_properties,
        stdin="committed without node 3\n",
    )
    assert produced.returncode == 0, produced.stderr
    cluster.stop_all()
    assert data_records(cluster.partition_dir(3)) == []
    for node in (1, 2):
        assert [v for _, _, v in data_records(cluster.partition_dir(node))] == [
            b"committed without node 3"
        ]
        with open(os.path.join(cluster.directory, f"node{node}.log")) as f:
            warned = [line for line in f if "TLS to node 3 at" in line]
        assert 1 <= len(warned) <= 2, warned  # once per outbound channel, not once per retry
