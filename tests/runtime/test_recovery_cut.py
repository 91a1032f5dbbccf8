"""A sole voter whose segment has a corrupt batch mid-way: recovery cuts the log there, keeps the cut
bytes in a side file, logs one ERROR line with the batches and records lost, and ``quorum describe``
tells of it (Kafka's lines unchanged before it; nothing extra when nothing was cut)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from kraftwire.node.runtime.producer import MetadataClient
from kraftwire.records import decode_batches
from runtime_settings import formatted_cluster

RECORDS = 50


def batch_spans(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of each batch of a segment, by the length in its header."""
    spans, pos = [], 0
    while pos < len(data):
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        spans.append((pos, size))
        pos += size
    return spans


def describe(cluster, *extra: str) -> str:
    endpoint = cluster.endpoints[1]
    result = subprocess.run(
        [sys.executable, "-m", "kraftwire", "quorum", "describe", "--status", *extra]
        + ["--bootstrap-controller", f"{endpoint.host}:{endpoint.port}"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_cut_mid_segment_is_kept_logged_as_an_error_and_described(tmp_path):
    with formatted_cluster(tmp_path / "cluster", controllers=1) as cluster:
        cluster.start(1)
        cluster.wait_for_leader(timeout_s=60)
        client = MetadataClient(cluster.endpoints[1], deadline_s=30)
        try:
            offsets = [client.produce([b"value-%02d" % i], acks=-1) for i in range(RECORDS)]
        finally:
            client.close()
        assert "LogRecoveryCut" not in describe(cluster)  # Kafka's output while nothing is cut
        cluster.kill(1, 15)
        part = Path(cluster.partition_dir(1))
        segment = part / "00000000000000000000.log"
        original = segment.read_bytes()
        spans = batch_spans(original)
        batches, _ = decode_batches(original)
        first_cut = next(i for i, b in enumerate(batches) if b.base_offset == offsets[23])
        position, size = spans[first_cut]
        damaged = bytearray(original)
        damaged[position + size - 3] ^= 0xFF  # in the batch's records: its CRC no longer matches
        segment.write_bytes(bytes(damaged))
        lost = batches[first_cut:]
        lost_records = sum(len(b.records) for b in lost)
        assert lost_records == RECORDS - 23

        cluster.start(1)
        cluster.wait_for_leader(timeout_s=60)
        text = describe(cluster)
        json_status = json.loads(describe(cluster, "--json"))
        log = (Path(cluster.directory) / "node1.log").read_text()

    [side] = [p for p in part.iterdir() if re.fullmatch(r"0{20}\.log\.corrupt-\d+", p.name)]
    assert side.read_bytes() == bytes(damaged[position:])  # exactly the cut bytes
    assert segment.read_bytes()[:position] == original[:position]
    errors = [line for line in log.splitlines() if " ERROR " in line]
    assert len(errors) == 1, log
    assert f"at position {position} (corrupt batch" in errors[0] and "CRC" in errors[0]
    span = f"(offsets {lost[0].base_offset}..{lost[-1].base_offset + len(lost[-1].records) - 1})"
    assert f"lost {len(lost)} batches, {lost_records} records {span}" in errors[0]
    assert side.name in errors[0]
    kafka_lines, notice = text.splitlines()[:-1], text.splitlines()[-1]
    assert kafka_lines[0].startswith("ClusterId:") and kafka_lines[-1].startswith(
        "CurrentObservers:"
    )
    assert notice == (
        f"LogRecoveryCut:         node 1 lost {len(lost)} batches, {lost_records} records "
        f"{span}, kept in {side.name}"
    )
    [cut] = json_status["LogRecoveryCuts"]
    assert (cut["nodeId"], cut["batches"], cut["records"], cut["file"]) == (
        1,
        len(lost),
        lost_records,
        side.name,
    )
    assert cut["bytes"] == len(original) - position
