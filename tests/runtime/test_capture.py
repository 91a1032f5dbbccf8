"""``node start --capture``: a pcapng of every frame, with real ports and consistent TCP sequence numbers,
that reassembles into whole Kafka frames (and that tshark reads, when it is installed)."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
from collections import defaultdict
from ipaddress import IPv6Address

import pytest

from kraftwire.generated import decode_request
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.runtime.producer import MetadataClient
from runtime_settings import TEST_SETTINGS

pytestmark = pytest.mark.timeout(180)


def read_pcapng(path: str) -> list[tuple[tuple, int, int, bytes]]:
    """[((src, sport, dst, dport), seq, flags, payload)] of every packet, checking the block framing."""
    data = open(path, "rb").read()
    packets, pos = [], 0
    assert (
        struct.unpack_from("<I", data, 0)[0] == 0x0A0D0D0A
        and struct.unpack_from("<I", data, 8)[0] == 0x1A2B3C4D
    )
    while pos < len(data):
        block_type, length = struct.unpack_from("<II", data, pos)
        assert length % 4 == 0 and struct.unpack_from("<I", data, pos + length - 4)[0] == length
        if block_type == 1:
            assert struct.unpack_from("<H", data, pos + 8)[0] == 1  # Ethernet
        if block_type == 6:
            captured = struct.unpack_from("<I", data, pos + 20)[0]
            frame = data[pos + 28 : pos + 28 + captured]
            if frame[12:14] == b"\x86\xdd":  # IPv6: a 40-byte header
                src, dst = str(IPv6Address(frame[22:38])), str(IPv6Address(frame[38:54]))
                tcp_at = 54
            else:
                src, dst = ".".join(map(str, frame[26:30])), ".".join(map(str, frame[30:34]))
                tcp_at = 34
            tcp = frame[tcp_at : tcp_at + 20]
            sport, dport, seq, _ack, _offset, flags = struct.unpack(">HHIIBB", tcp[:14])
            packets.append(((src, sport, dst, dport), seq, flags, frame[tcp_at + 20 :]))
        pos += length
    return packets


def request_api_keys(packets: list, ports: set[int]) -> set[int]:
    """The API keys of the requests toward ``ports``, checking that every stream's sequence numbers
    follow its bytes and that the bytes reassemble into whole Kafka frames."""
    streams: dict[tuple, list] = defaultdict(list)
    for key, seq, flags, payload in packets:
        streams[key].append((seq, flags, payload))
    api_keys = set()
    for key, segments in streams.items():
        expected = None
        data = b""
        for seq, flags, payload in segments:
            if flags & 0x02:  # SYN
                expected = (seq + 1) & 0xFFFFFFFF
                continue
            assert seq == expected, f"{key}: sequence gap"
            expected = (seq + len(payload) + (1 if flags & 0x01 else 0)) & 0xFFFFFFFF
            data += payload
        pos = 0
        while pos < len(data):  # whole Kafka frames, back to back
            size = struct.unpack_from(">i", data, pos)[0]
            frame = data[pos + 4 : pos + 4 + size]
            assert len(frame) == size, f"{key}: frame cut short"
            if key[3] in ports:  # requests toward a node
                api_keys.add(decode_request(frame).api_key)
            pos += 4 + size
    return api_keys


def tshark_api_keys(capture: str, ports: set[int]) -> list[str]:
    out = subprocess.run(
        ["tshark", "-r", capture, "-o", f"kafka.tcp.ports:{','.join(map(str, sorted(ports)))}"]
        + ["-T", "fields", "-e", "kafka.api_key"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_capture_reassembles_into_kafka_frames(cluster, tmp_path):
    capture = tmp_path / "node1.pcapng"
    cluster.start(2)
    cluster.start(3)
    cluster.start(1, "--capture", str(capture))
    cluster.wait_for_leader()
    client = MetadataClient(cluster.endpoints[1], deadline_s=30)
    client.produce([b"captured-record"], -1)
    client.close()
    cluster.stop_all()

    packets = read_pcapng(str(capture))
    keys = {key for key, _, _, _ in packets}
    port1 = cluster.endpoints[1].port
    assert any(key[3] == port1 for key in keys), "inbound connections to node 1"
    assert any(
        key[3] in (cluster.endpoints[2].port, cluster.endpoints[3].port) for key in keys
    ), "outbound ones"
    ports = {e.port for e in cluster.endpoints.values()}
    api_keys = request_api_keys(packets, ports)
    assert {18, 60}.issubset(api_keys) and (1 in api_keys or 52 in api_keys)
    if shutil.which("tshark"):
        # tshark reassembles and recognises the ApiVersions requests
        assert "18" in tshark_api_keys(str(capture), ports)


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


def tcp_checksums_ok(path: str) -> bool:
    """Every IPv6 TCP segment's checksum verifies (the one's-complement sum over the pseudo-header
    and the segment is 0xFFFF)."""
    data, pos = open(path, "rb").read(), 0
    while pos < len(data):
        block_type, length = struct.unpack_from("<II", data, pos)
        if block_type == 6:
            captured = struct.unpack_from("<I", data, pos + 20)[0]
            frame = data[pos + 28 : pos + 28 + captured]
            if frame[12:14] == b"\x86\xdd":
                segment = frame[54:]
                pseudo = frame[22:54] + struct.pack(">I3xB", len(segment), 6)
                summed = pseudo + segment + b"\x00" * (len(segment) % 2)
                total = sum(struct.unpack(f">{len(summed) // 2}H", summed))
                while total >> 16:
                    total = (total & 0xFFFF) + (total >> 16)
                if total != 0xFFFF:
                    return False
        pos += length
    return True


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 on loopback here")
def test_capture_of_a_quorum_on_ipv6_loopback(tmp_path):
    cluster = LocalCluster(str(tmp_path / "cluster"), 3, settings=TEST_SETTINGS, host="::1")
    cluster.format()
    capture = tmp_path / "node1.pcapng"
    try:
        cluster.start(2)
        cluster.start(3)
        cluster.start(1, "--capture", str(capture))
        cluster.wait_for_leader()
        client = MetadataClient(cluster.endpoints[1], deadline_s=30)
        client.produce([b"captured-over-ipv6"], -1)
        client.close()
    finally:
        cluster.stop_all(graceful_s=5)

    packets = read_pcapng(str(capture))
    assert packets and all(key[0] == key[2] == "::1" for key, _, _, _ in packets)
    ports = {e.port for e in cluster.endpoints.values()}
    api_keys = request_api_keys(packets, ports)
    assert {18, 60}.issubset(api_keys) and (1 in api_keys or 52 in api_keys)
    assert tcp_checksums_ok(str(capture))
    if shutil.which("tshark"):
        assert "18" in tshark_api_keys(str(capture), ports)
