"""A capture of TLS traffic to a Kafka port: the connection is reported as TLS in one row (status
``tls``), not as frames read out of ciphertext; a plaintext connection beside it decodes as before.
"""

from __future__ import annotations

import ssl
import subprocess
import sys

import pytest

from captures import T0, assert_rows_match, conversation, decode, pcap_of, write
from kraftwire.node.runtime.tls import client_context, server_context, tls_settings
from kraftwire.node.runtime.tls_certs import make_pki
from kraftwire.spark_decoders.kafka.framing import opens_tls
from kraftwire.synthetic_capture import Conversation
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(120)

# An ApiVersions v0 request: what a client would have sent inside the TLS connection.
API_VERSIONS = b"\x00\x00\x00\x0c\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff\x00\x00"


def tls_conversation(directory: str) -> Conversation:
    """A real TLS 1.3 handshake and one encrypted request, between two in-memory TLS endpoints."""
    pki = make_pki(directory, ["node"])
    settings = tls_settings(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": pki["node"],
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": pki["ca"],
        },
        "test",
    )
    to_client, to_server = ssl.MemoryBIO(), ssl.MemoryBIO()
    from_client, from_server = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context(settings).wrap_bio(to_client, from_client, server_hostname="127.0.0.1")
    server = server_context(settings).wrap_bio(to_server, from_server, server_side=True)
    conv = Conversation(("127.0.0.1", 40000), ("127.0.0.1", 9093))
    conv.handshake(T0)
    ts = T0 + 1_000_000

    def carry() -> None:
        nonlocal ts
        for bytes_out, bytes_in, from_client_side in (
            (from_client, to_server, True),
            (from_server, to_client, False),
        ):
            data = bytes_out.read()
            if data:
                conv.send(from_client_side, data, ts)
                bytes_in.write(data)
                ts += 10_000

    for _ in range(6):
        for end in (client, server):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
        carry()
    client.write(API_VERSIONS)
    carry()
    assert server.read(len(API_VERSIONS)) == API_VERSIONS  # the bytes really crossed
    conv.close(ts + 1_000_000)
    return conv


def test_a_tls_connection_is_one_tls_row(tmp_path):
    tls = tls_conversation(str(tmp_path / "pki"))
    exchanges = kraft_exchanges(3)
    plain = conversation(exchanges, client=("10.0.0.1", 40001))
    packets = sorted(tls.packets + plain.packets)
    path = write(tmp_path, "tls.pcap", pcap_of(packets))
    rows, _ = decode(path)
    tls_rows = [r for r in rows if r["client_port"] == 40000]
    assert [r["status"] for r in tls_rows] == ["tls"]
    client_hello = tls.packets[3]  # after the SYN, SYN-ACK and ACK
    assert tls_rows[0]["request_frame"] == packets.index(client_hello) + 1
    assert_rows_match([r for r in rows if r["client_port"] == 40001], exchanges)
    shown = subprocess.run(
        [sys.executable, "-m", "kraftwire", "decode", "--format", "jsonl", path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert sum('"status":"tls"' in line for line in shown.stdout.splitlines()) == 1


@pytest.mark.parametrize(
    "data, tls",
    [
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc", True),  # ClientHello in a TLS 1.0-labelled record
        (b"\x16\x03\x03\x00\x7a\x02\x00\x00\x76", True),  # ServerHello
        (b"\x17\x03\x03\x00\x20\x01", False),  # application data: not a stream's first record
        (b"\x16\x03\x01\xff\xff\x01", False),  # longer than any record
        (b"\x16\x03\x05\x00\x10\x01", False),  # no such version
        (API_VERSIONS, False),  # a Kafka frame
        (b"\x16\x03", False),  # too short to tell
    ],
)
def test_what_counts_as_a_tls_stream_start(data, tls):
    assert opens_tls(data) is tls
