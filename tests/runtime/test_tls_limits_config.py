"""The TLS and listener-limit settings as Kafka names and defaults them: PEM inline or in files,
ssl.client.auth, hostname verification, the limits' defaults, and one-line refusals."""

from __future__ import annotations

import socket
import subprocess
import ssl
import threading

import pytest

from kraftwire.node.runtime.config import ConfigError, config_from_properties, load_config
from kraftwire.node.runtime.tls import client_context, server_context, tls_settings
from kraftwire.node.runtime.tls_certs import make_ca, make_keystore, make_pki

BASE = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "CONTROLLER://127.0.0.1:19093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.bootstrap.servers": "127.0.0.1:19093",
    "metadata.log.dir": "/tmp/x",
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(str(tmp_path_factory.mktemp("pki")), ["node", "other"])


def ssl_props(pki, **extra):
    return {
        **BASE,
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki["node"],
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki["ca"],
        **extra,
    }


def test_limits_default_to_kafkas():
    config = config_from_properties(BASE)
    assert config.connections_max_idle_ms == 600_000
    assert config.max_connections == config.max_connections_per_ip == 2**31 - 1
    assert config.max_connections_per_ip_overrides == {}
    assert config.queued_max_request_bytes == -1
    assert config.partial_request_bytes == config.max_frame_bytes == 100 * 1024 * 1024
    assert config.tls is None and config.ssl_listeners == frozenset()
    bounded = config_from_properties({**BASE, "queued.max.request.bytes": "5000000"})
    assert bounded.partial_request_bytes == 5_000_000
    overrides = config_from_properties(
        {**BASE, "max.connections.per.ip.overrides": "localhost:7,[::1]:3,127.0.0.2:0"}
    )
    assert overrides.max_connections_per_ip_overrides == {"127.0.0.1": 7, "::1": 3, "127.0.0.2": 0}


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("max.connections", "-1", "invalid max.connections='-1'"),
        ("max.connections.per.ip.overrides", "127.0.0.1", "is not HOST:COUNT"),
        ("queued.max.request.bytes", "0", "neither -1 nor at least 1"),
        ("connections.max.idle.ms", "0", "neither -1 nor at least 1"),
    ],
)
def test_bad_limits_are_named(key, value, message):
    with pytest.raises(ConfigError, match=message):
        config_from_properties({**BASE, key: value})


def test_ssl_listener_from_files(pki):
    config = config_from_properties(ssl_props(pki, **{"ssl.client.auth": "required"}))
    assert config.ssl_listeners == frozenset({"CONTROLLER"}) and config.peer_tls
    assert server_context(config.tls).verify_mode == ssl.CERT_REQUIRED
    assert client_context(config.tls).check_hostname  # Kafka's default "https"
    requested = config_from_properties(ssl_props(pki, **{"ssl.client.auth": "requested"}))
    assert server_context(requested.tls).verify_mode == ssl.CERT_OPTIONAL
    assert server_context(config_from_properties(ssl_props(pki)).tls).verify_mode == ssl.CERT_NONE


def test_a_listener_named_ssl_is_ssl_without_a_map(pki):
    props = ssl_props(
        pki, listeners="SSL://127.0.0.1:19093", **{"controller.listener.names": "SSL"}
    )
    del props["listener.security.protocol.map"]
    assert config_from_properties(props).ssl_listeners == frozenset({"SSL"})


def test_inline_pem_on_continued_lines(pki, tmp_path):
    """ssl.keystore.certificate.chain / ssl.keystore.key / ssl.truststore.certificates as PEM text,
    written over several lines joined by backslashes, as Kafka's documentation writes them."""
    with open(pki["node"]) as f:
        keystore = f.read()
    key, cert = keystore.split("-----BEGIN CERTIFICATE-----")
    cert = "-----BEGIN CERTIFICATE-----" + cert
    with open(pki["ca"]) as f:
        ca = f.read()

    def continued(pem: str) -> str:
        return " \\\n    ".join(pem.strip().splitlines())

    lines = {
        k: v
        for k, v in ssl_props(pki).items()
        if k not in ("ssl.keystore.location", "ssl.truststore.location")
    }
    lines["ssl.keystore.certificate.chain"] = continued(cert)
    lines["ssl.keystore.key"] = continued(key)
    lines["ssl.truststore.certificates"] = continued(ca)
    path = tmp_path / "inline.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    config = load_config(str(path))
    assert config.tls is not None and config.tls.key_chain_pem is not None
    server_context(config.tls)


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"ssl.keystore.type": "JKS"}, "kraftwire reads PEM only"),
        (
            {"ssl.keystore.key": "x", "ssl.keystore.certificate.chain": "x"},
            "Both SSL key store location and separate private key",
        ),
        ({"ssl.keystore.key": "x"}, "private key is specified, but certificate chain is not"),
        ({"ssl.keystore.certificate.chain": "x"}, "certificate chain is specified, but private"),
        ({"ssl.client.auth": "sometimes"}, "invalid ssl.client.auth"),
        ({"ssl.endpoint.identification.algorithm": "ldaps"}, "https or empty"),
        ({"ssl.truststore.location": "/nonexistent/ca.pem"}, "no such file /nonexistent/ca.pem"),
    ],
)
def test_bad_tls_settings_are_one_line(pki, extra, message):
    with pytest.raises(ConfigError, match=message) as caught:
        config_from_properties(ssl_props(pki, **extra))
    assert "\n" not in str(caught.value)


def serve_once(context: ssl.SSLContext) -> int:
    """A TLS server on 127.0.0.1 that accepts one connection, handshakes and closes; its port."""
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        with listener:
            listener.settimeout(10)
            conn, _ = listener.accept()
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                pass

    threading.Thread(target=run, daemon=True).start()
    return listener.getsockname()[1]


def test_hostname_verification_follows_endpoint_identification(pki, tmp_path):
    ca = (pki["ca"], pki["ca"].replace("ca.pem", "ca.key"))
    elsewhere = make_keystore(str(tmp_path), "elsewhere", ca, names="DNS:elsewhere.example")
    server = server_context(
        tls_settings({"ssl.keystore.type": "PEM", "ssl.keystore.location": elsewhere}, "s")
    )
    trust = {"ssl.truststore.type": "PEM", "ssl.truststore.location": pki["ca"]}
    for algorithm, accepted in (("https", False), ("", True)):
        client = client_context(
            tls_settings({**trust, "ssl.endpoint.identification.algorithm": algorithm}, "c")
        )
        port = serve_once(server)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            if accepted:
                client.wrap_socket(raw, server_hostname="127.0.0.1").close()
            else:
                with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
                    client.wrap_socket(raw, server_hostname="127.0.0.1")


def test_a_certificate_from_another_ca_is_not_trusted(pki, tmp_path):
    stranger = make_keystore(str(tmp_path), "stranger", make_ca(str(tmp_path)))
    server = server_context(
        tls_settings({"ssl.keystore.type": "PEM", "ssl.keystore.location": stranger}, "s")
    )
    client = client_context(
        tls_settings({"ssl.truststore.type": "PEM", "ssl.truststore.location": pki["ca"]}, "c")
    )
    port = serve_once(server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            client.wrap_socket(raw, server_hostname="127.0.0.1")


def test_an_encrypted_key_needs_ssl_key_password(pki, tmp_path):
    """An encrypted PKCS#8 key (ENCRYPTED PRIVATE KEY) in the PEM keystore opens with ssl.key.password;
    a wrong or missing password is one line naming it."""
    with open(pki["node"]) as f:
        key, cert = f.read().split("-----BEGIN CERTIFICATE-----")
    plain, encrypted = tmp_path / "plain.key", tmp_path / "encrypted.key"
    plain.write_text(key)
    subprocess.run(
        ["openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", str(plain)]
        + ["-out", str(encrypted), "-passout", "pass:s3cret"],
        check=True,
        capture_output=True,
    )
    keystore = tmp_path / "encrypted.pem"
    keystore.write_text(encrypted.read_text() + "-----BEGIN CERTIFICATE-----" + cert)
    assert "ENCRYPTED PRIVATE KEY" in keystore.read_text()
    props = ssl_props(pki, **{"ssl.keystore.location": str(keystore)})
    config = config_from_properties({**props, "ssl.key.password": "s3cret"})
    assert config.tls is not None and config.tls.key_password == "s3cret"
    for password in ("wrong", None):
        attempt = dict(props) if password is None else {**props, "ssl.key.password": password}
        with pytest.raises(ConfigError, match="ssl.key.password"):
            config_from_properties(attempt)


def test_the_private_key_and_its_password_stay_out_of_repr(pki):
    with open(pki["node"]) as f:
        key, cert = f.read().split("-----BEGIN CERTIFICATE-----")
    settings = tls_settings(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": key,
            "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----" + cert,
            "ssl.key.password": "s3cret",
        },
        "t",
    )
    assert settings.key_chain_pem is not None
    shown = repr(settings)
    assert "PRIVATE KEY" not in shown and "s3cret" not in shown
