"""A mixed controller quorum over mutual TLS: kraftwire nodes and Kafka controllers, every listener
CONTROLLER:SSL with Kafka's PEM settings and ssl.client.auth=required, one CA made for the test. Each
kind dials the other as a client with its own certificate; the quorum elects, fails over after kill -9
of its leader, and every node ends with one log."""

from __future__ import annotations

import pytest

from kraftwire.node.runtime.client import use_tls
from kraftwire.node.runtime.command_config import client_tls
from kraftwire.node.runtime.tls_certs import make_ca, make_keystore
from quorum import MixedQuorum
from test_mixed import finish, kill_leader_and_recover

pytestmark = pytest.mark.timeout(300)


def tls_settings(directory, nodes) -> dict[int, dict[str, object]]:
    """Each node's ssl.* settings; also ``client.properties`` for the test's own describe calls."""
    directory.mkdir(parents=True)
    ca = make_ca(str(directory))
    client = make_keystore(str(directory), "client", ca)
    (directory / "client.properties").write_text(
        "security.protocol=SSL\nssl.keystore.type=PEM\n"
        f"ssl.keystore.location={client}\nssl.truststore.type=PEM\nssl.truststore.location={ca[0]}\n"
    )
    settings = {}
    for node in nodes:
        keystore = make_keystore(str(directory), f"node{node}", ca)
        settings[node] = {
            "listener.security.protocol.map": "CONTROLLER:SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": keystore,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": ca[0],
            "ssl.client.auth": "required",
        }
    return settings


def test_mixed_quorum_over_mutual_tls(tmp_path):
    kinds = {1: "kraftwire", 2: "kafka", 3: "kafka"}
    settings = tls_settings(tmp_path / "tls", kinds)
    quorum = MixedQuorum(tmp_path / "q", kinds, dynamic=True, node_extra=settings)
    quorum.format()
    previous = use_tls(client_tls(str(tmp_path / "tls" / "client.properties")))
    try:
        quorum.start_all()
        leader = quorum.wait_for_leader(timeout_s=90)[0]
        kill_leader_and_recover(quorum, quorum.kind(leader))
        assert finish(quorum) > 0
    finally:
        quorum.stop_all()
        use_tls(previous)
