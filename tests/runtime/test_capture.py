"""``node start --capture``: a pcapng of every frame, with real ports and consistent TCP sequence numbers,
that reassembles into whole Kafka frames (and that tshark reads, when it is installed)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections import defaultdict

import pytest

from kraftwire.generated import decode_request
from kraftwire.node.runtime.producer import MetadataClient

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
            ip, tcp = frame[14:34], frame[34:54]
            src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
            sport, dport, seq, _ack, _offset, flags = struct.unpack(">HHIIBB", tcp[:14])
            packets.append(((src, sport, dst, dport), seq, flags, frame[54:]))
        pos += length
    return packets


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
    streams: dict[tuple, list] = defaultdict(list)
    for key, seq, flags, payload in packets:
        streams[key].append((seq, flags, payload))
    port1 = cluster.endpoints[1].port
    assert any(key[3] == port1 for key in streams), "inbound connections to node 1"
    assert any(
        key[3] in (cluster.endpoints[2].port, cluster.endpoints[3].port) for key in streams
    ), "outbound ones"
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
            if key[3] in {e.port for e in cluster.endpoints.values()}:  # requests toward a node
                api_keys.add(decode_request(frame).api_key)
            pos += 4 + size
    assert {18, 60}.issubset(api_keys) and (1 in api_keys or 52 in api_keys)

    if shutil.which("tshark"):
        ports = ",".join(str(e.port) for e in cluster.endpoints.values())
        out = subprocess.run(
            [
                "tshark",
                "-r",
                str(capture),
                "-o",
                f"kafka.tcp.ports:{ports}",
                "-T",
                "fields",
                "-e",
                "kafka.api_key",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert (
            "18" in out.stdout.split()
        )  # tshark reassembles and recognises the ApiVersions requests
