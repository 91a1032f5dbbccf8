"""``kraftwire dump-log PATH...``: print segments (``.log``) and snapshots (``.checkpoint``) batch by batch,
record by record, in the layout of ``kafka-dump-log.sh --deep-iteration`` (docs/operations.md §4).

Control records print with their type and JSON, data records with their payload (text when it is
UTF-8, else base64). ``--json`` prints one JSON document with the same facts. Bytes after the last
whole batch are reported, not guessed at. A batch that fails its CRC is printed with ``isvalid: false``
(Kafka's word), the walk goes on past it, and the exit status is 1; so it is for a file with no batch
at all (not a log).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import struct
import sys
from types import ModuleType
from typing import Any, Iterator

from kraftwire.generated import ProtocolError
from kraftwire.generated.records import decode_batches, decode_control_record

from . import dump_metadata

_CONTROL_LABELS = {
    2: "LeaderChange:",
    3: "SnapshotHeader",
    4: "SnapshotFooter",
    5: "KRaftVersion",
    6: "KRaftVoters",
}
_MIN_BATCH = 61  # the v2 batch header
_BATCH_SIZE = struct.Struct(">i")  # the length field at byte 8: the bytes after it
# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp: the v2 header up to the producer fields
_V2_HEAD = struct.Struct(">qiibIhiqq")
_COUNT = struct.Struct(">i")  # the record count, the header's last field
_CONTROL_FLAG = 0x20
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
            print(f"kraftwire dump-log: {path}: cannot read it: {exc.strerror}", file=sys.stderr)
            status = 1
            continue
        try:
            dump = dump_file(path, data, values)
        except ProtocolError as exc:
            print(f"kraftwire dump-log: {path}: {exc}", file=sys.stderr)
            status = 1
            continue
        if data and not dump["batches"] and not _begins_like_a_batch(data):
            print(
                f"kraftwire dump-log: {path}: not a log segment or snapshot "
                "(no record batch at position 0)",
                file=sys.stderr,
            )
            status = 1
            continue
        dumps.append(dump)
        for batch in dump["batches"]:
            if not batch["isValid"]:
                print(f"kraftwire dump-log: {path}: {batch['problem']}", file=sys.stderr)
                status = 1
    if args.json:
        print(json.dumps(dumps, indent=1))
    else:
        for dump in dumps:
            print(render(dump))
    return status


def dump_file(path: str, data: bytes, metadata: ModuleType | None = None) -> dict[str, Any]:
    """The batches and records of one file, as plain data (with ``metadata``, a generated package
    holding the metadata records, data records decoded as KRaft metadata records). A batch that fails
    its CRC (or does not decode) is listed with ``isValid`` false and without records, and the walk
    goes on past it when its length field leads to the next batch, as Kafka's DumpLogSegments prints
    ``isvalid: false`` for a batch and carries on."""
    batches, end = [], 0
    for start, stop, problem in _batch_spans(data):
        if problem is None:
            (batch,), _ = decode_batches(data[start:stop])
            batches.append(_batch(batch, start, stop - start, metadata))
        else:
            batches.append(_invalid_batch(data, start, stop - start, problem))
        end = stop
    name = os.path.basename(path)
    out: dict[str, Any] = {
        "path": path,
        "batches": batches,
        "invalidTrailingBytes": len(data) - end,
    }
    match = _SNAPSHOT.match(name)
    if match:
        out["snapshot"] = {"endOffset": int(match[1]), "epoch": int(match[2])}
    elif name.endswith(".log"):
        out["logStartOffset"] = int(name[:-4]) if name[:-4].isdigit() else 0
    return out


def _batch_spans(data: bytes) -> Iterator[tuple[int, int, str | None]]:
    """(start, stop, problem or None) of each batch; stops at a torn tail, or at a batch that does
    not decode and whose length does not lead to another batch (or to the end): then its length
    itself may be what is corrupt, and nothing after it can be placed."""
    pos = 0
    while _plausible_batch_at(data, pos):
        stop = pos + _BATCH_SIZE.unpack_from(data, pos + 8)[0] + 12
        try:
            decode_batches(data[pos:stop])
        except ProtocolError as exc:
            if stop != len(data) and not _plausible_batch_at(data, stop):
                return
            yield pos, stop, f"batch at position {pos}: {exc}"
        else:
            yield pos, stop, None
        pos = stop


def _plausible_batch_at(data: bytes, pos: int) -> bool:
    """Whether the bytes at ``pos`` begin a whole v2 batch: its length fits the file, and its magic
    byte is 2."""
    if len(data) - pos < _MIN_BATCH:
        return False
    size = _BATCH_SIZE.unpack_from(data, pos + 8)[0] + 12
    return _MIN_BATCH <= size <= len(data) - pos and data[pos + 16] == 2


def _begins_like_a_batch(data: bytes) -> bool:
    """Whether ``data`` starts with what a v2 batch starts with (a length of a whole header, magic 2),
    even if the batch is torn: a segment whose only batch was cut short is a log with a torn tail.
    """
    return (
        len(data) >= 17 and _BATCH_SIZE.unpack_from(data, 8)[0] + 12 >= _MIN_BATCH and data[16] == 2
    )


def _invalid_batch(data: bytes, position: int, size: int, problem: str) -> dict[str, Any]:
    """What the header of a batch that failed its check says (its records are not trusted)."""
    base_offset, _, epoch, _, crc, attributes, last_delta, _, max_ts = _V2_HEAD.unpack_from(
        data, position
    )
    count = _COUNT.unpack_from(data, position + _MIN_BATCH - 4)[0]
    return {
        "baseOffset": base_offset,
        "lastOffset": base_offset + last_delta,
        "count": count,
        "partitionLeaderEpoch": epoch,
        "isControl": bool(attributes & _CONTROL_FLAG),
        "position": position,
        "maxTimestamp": max_ts,
        "size": size,
        "crc": crc,
        "isValid": False,
        "problem": problem,
        "records": [],
    }


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
        "isValid": True,
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
            f"compresscodec: none crc: {b['crc']} isvalid: {str(b['isValid']).lower()}"
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
