"""``kraftwire dump-log PATH...``: print segments (``.log``) and snapshots (``.checkpoint``) batch by batch,
record by record, in the layout of ``kafka-dump-log.sh --deep-iteration`` (kraft-operations.md §4).

Control records print with their type and JSON, data records with their payload (text when it is
UTF-8, else base64). ``--json`` prints one JSON document with the same facts. Bytes after the last
whole batch are reported, not guessed at.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
from types import ModuleType
from typing import Any

from kraftwire.generated import ProtocolError
from kraftwire.records import decode_batches, decode_control_record

from . import dump_metadata

_CONTROL_LABELS = {
    2: "LeaderChange:",
    3: "SnapshotHeader",
    4: "SnapshotFooter",
    5: "KRaftVersion",
    6: "KRaftVoters",
}
_MIN_BATCH = 61  # the v2 batch header
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help=".log segments and .checkpoint snapshots"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    dump_metadata.add_flags(parser)


def run(args: argparse.Namespace) -> int:
    dumps, status = [], 0
    values = None
    if args.record_values == dump_metadata.METADATA:
        try:
            values = dump_metadata.metadata_package(args.schemas)
        except dump_metadata.NoMetadataCodecs as exc:
            print(f"kraftwire dump-log: {exc}", file=sys.stderr)
            return 2
    for path in args.paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            print(f"kraftwire dump-log: cannot read {path}: {exc.strerror}", file=sys.stderr)
            status = 1
            continue
        try:
            dumps.append(dump_file(path, data, values))
        except ProtocolError as exc:
            print(f"kraftwire dump-log: {path}: {exc}", file=sys.stderr)
            status = 1
    if args.json:
        print(json.dumps(dumps, indent=1))
    else:
        for dump in dumps:
            print(render(dump))
    return status


def dump_file(path: str, data: bytes, metadata: ModuleType | None = None) -> dict[str, Any]:
    """The batches and records of one file, as plain data (with ``metadata``, a generated package
    holding the metadata records, data records decoded as KRaft metadata records)."""
    spans, tail = _whole_batches(data)
    batches = []
    for start, stop in spans:
        (batch,), _ = decode_batches(data[start:stop])
        batches.append(_batch(batch, start, stop - start, metadata))
    name = os.path.basename(path)
    out: dict[str, Any] = {
        "path": path,
        "batches": batches,
        "invalidTrailingBytes": len(data) - tail,
    }
    match = _SNAPSHOT.match(name)
    if match:
        out["snapshot"] = {"endOffset": int(match[1]), "epoch": int(match[2])}
    elif name.endswith(".log"):
        out["logStartOffset"] = int(name[:-4]) if name[:-4].isdigit() else 0
    return out


def _whole_batches(data: bytes) -> tuple[list[tuple[int, int]], int]:
    """Spans of the whole, valid batches and where they end (a torn or corrupt tail stops the walk)."""
    good, pos = [], 0
    while len(data) - pos >= 12:
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
        if size < _MIN_BATCH or pos + size > len(data):
            break
        try:
            decode_batches(data[pos : pos + size])
        except ProtocolError:
            break
        good.append((pos, pos + size))
        pos += size
    return good, pos


def _batch(batch: Any, position: int, size: int, metadata: ModuleType | None) -> dict[str, Any]:
    out = {
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "count": batch.record_count,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "isControl": batch.is_control,
        "position": position,
        "maxTimestamp": batch.max_timestamp,
        "size": size,
        "crc": batch.crc,
        "records": [],
    }
    controls = (
        [decode_control_record(r.key, r.value) for r in batch.records] if batch.is_control else None
    )
    for index, record in enumerate(batch.records):
        entry: dict[str, Any] = {
            "offset": record.offset,
            "timestamp": record.timestamp,
            "keySize": -1 if record.key is None else len(record.key),
            "valueSize": -1 if record.value is None else len(record.value),
        }
        if controls is not None:
            control = controls[index]
            entry["control"] = {"type": control.type, "json": control.to_json().get("value")}
        elif metadata is not None:
            entry["metadata"] = dump_metadata.decode_payload(record.value, metadata)
        else:
            entry["value"] = _payload(record.value)
        out["records"].append(entry)
    return out


def _payload(value: bytes | None) -> dict[str, str] | None:
    if value is None:
        return None
    try:
        return {"text": value.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode()}


def render(dump: dict[str, Any]) -> str:
    lines = [f"Dumping {dump['path']}"]
    if "snapshot" in dump:
        lines.append(
            f"Snapshot end offset: {dump['snapshot']['endOffset']}, epoch: {dump['snapshot']['epoch']}"
        )
    elif "logStartOffset" in dump:
        lines.append(f"Log starting offset: {dump['logStartOffset']}")
    for b in dump["batches"]:
        lines.append(
            f"baseOffset: {b['baseOffset']} lastOffset: {b['lastOffset']} count: {b['count']} baseSequence: -1 "
            f"lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: {b['partitionLeaderEpoch']} "
            f"isTransactional: false isControl: {str(b['isControl']).lower()} deleteHorizonMs: OptionalLong.empty "
            f"position: {b['position']} CreateTime: {b['maxTimestamp']} size: {b['size']} magic: 2 "
            f"compresscodec: none crc: {b['crc']} isvalid: true"
        )
        for r in b["records"]:
            prefix = (
                f"| offset: {r['offset']} CreateTime: {r['timestamp']} keySize: {r['keySize']} "
                f"valueSize: {r['valueSize']} sequence: -1 headerKeys: []"
            )
            if "control" in r:
                label = _CONTROL_LABELS.get(
                    r["control"]["type"], f"controlType: {r['control']['type']}"
                )
                body = json.dumps(r["control"]["json"], separators=(",", ":"))
                lines.append(f"{prefix} {label} {body}")
            elif "metadata" in r:
                lines.append(f"{prefix} payload: {dump_metadata.payload_text(r['metadata'])}")
            elif r["value"] is not None:
                lines.append(f"{prefix} payload: {next(iter(r['value'].values()))}")
            else:
                lines.append(prefix)
    if dump["invalidTrailingBytes"]:
        lines.append(
            f"Found {dump['invalidTrailingBytes']} invalid bytes at the end of {os.path.basename(dump['path'])}"
        )
    return "\n".join(lines)
