"""What the fuzzer feeds: every decoder that reads bytes or JSON from outside, with its seed inputs.

A target has a name (``package:what[:spec:vN]``), a ``kind`` ("bytes" or "json") and ``run(input)``,
which decodes the input and, when that succeeds, writes the result back out (encode, to_json), so an
escape on either side is seen. Errors of the ProtocolError family are the documented outcome for bad
input; anything else raised is an escape. Seeds come from the shared vectors written by Kafka's Java
classes (``../shared/kafka-vectors``) and from batches built here for every codec and magic.
"""

from __future__ import annotations

import gzip
import json
import struct
import sys
import zlib
from pathlib import Path
from typing import Callable, NamedTuple

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from shared import SHARED_ROOT  # noqa: E402
from vectors import Vector, load_vectors  # noqa: E402

import kraftwire.generated as bundled  # noqa: E402
from kraftwire import records  # noqa: E402

FUZZ_DECOMPRESSED_LIMIT = 8 * 1024 * 1024  # decompression limit while fuzzing (default: 64 MiB)


class Target(NamedTuple):
    name: str
    kind: str  # "bytes" or "json"
    run: Callable[[object], None]
    seeds: list
    package: object  # the generated package whose ProtocolError is the documented error


def load_packages() -> dict:
    """The bundled package, plus the package of all upstream specs when ../shared is present."""
    packages = {"bundled": bundled}
    if (SHARED_ROOT / "kafka-schemas").is_dir():
        from generated_packages import generated_package

        packages["upstream"] = generated_package([SHARED_ROOT / "kafka-schemas"], "kwupstream")
    return packages


def load_seed_vectors() -> dict[str, list[Vector]]:
    """The shared vectors by spec name (empty without ../shared)."""
    directory = SHARED_ROOT / "kafka-vectors"
    found: dict[str, list[Vector]] = {}
    if directory.is_dir():
        for vector in load_vectors(directory):
            found.setdefault(vector.spec, []).append(vector)
    return found


# -- messages and frames ----------------------------------------------------------------------------


def _message_runner(cls, version: int) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        message = cls.decode(data, version)
        message.encode(version)
        message.to_json(version)

    return run


def _json_runner(cls, version: int) -> Callable[[object], None]:
    def run(obj: object) -> None:
        message = cls.from_json(obj, version)
        cls.decode(message.encode(version), version)

    return run


def _request_runner(package) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        payload, _ = package.read_frame(data)
        if payload is not None:
            frame = package.decode_request(payload)
            package.encode_request(frame.body, frame.api_version, frame.correlation_id)

    return run


def _response_runner(package, api_key: int, version: int) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        payload, _ = package.read_frame(data)
        if payload is not None:
            frame = package.decode_response(payload, api_key, version)
            package.encode_response(frame.body, version, frame.correlation_id)

    return run


def _versions(cls) -> range:
    return range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)


def _default_encoding(cls, version: int) -> list[bytes]:
    try:
        return [cls().encode(version)]
    except Exception:  # a message with mandatory fields has no default encoding; vectors seed it
        return []


def message_targets(label: str, package, vectors: dict) -> list[Target]:
    """Decode (and JSON read) of every spec at every version, request frames, response frames."""
    targets = []
    request_seeds = []
    for stem in sorted(package.SPECS):
        cls = package.lookup(stem)
        by_version: dict[int, list[Vector]] = {}
        for vector in vectors.get(stem, ()):
            by_version.setdefault(vector.version, []).append(vector)
        for version in _versions(cls):
            found = by_version.get(version, [])
            seeds = [v.data for v in found] or _default_encoding(cls, version)
            name = f"{label}:decode:{stem}:v{version}"
            targets.append(Target(name, "bytes", _message_runner(cls, version), seeds, package))
            json_seeds = [v.json for v in found]
            if json_seeds:
                run = _json_runner(cls, version)
                targets.append(
                    Target(f"{label}:json:{stem}:v{version}", "json", run, json_seeds, package)
                )
            if cls.SPEC_TYPE == "response" and cls.API_KEY is not None:
                frames = [
                    package.encode_response(cls.decode(s, version), version, 7) for s in seeds
                ]
                run = _response_runner(package, cls.API_KEY, version)
                name = f"{label}:response-frame:{stem}:v{version}"
                targets.append(Target(name, "bytes", run, frames, package))
            if cls.SPEC_TYPE == "request" and cls.API_KEY is not None:
                request_seeds += [
                    package.encode_request(cls.decode(s, version), version, 7) for s in seeds[:3]
                ]
    targets.append(
        Target(f"{label}:request-frame", "bytes", _request_runner(package), request_seeds, package)
    )
    return targets


# -- records, control, metadata and coordinator records ---------------------------------------------


def _legacy_message(offset: int, magic: int, attributes: int, key, value) -> bytes:
    body = bytearray([magic, attributes])
    if magic == 1:
        body += struct.pack(">q", 1_600_000_000_000 + offset)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def record_seeds(vectors: dict) -> list[bytes]:
    """v2 batches of every codec (data and control), legacy sets, and the vectors' records fields."""
    rows = [
        (b"k%d" % i, b"value %d" % i * (i + 1), [("h", b"x")] if i % 2 else None, 1000 + i)
        for i in range(6)
    ]
    seeds = [records.encode_batch(rows, compression=codec) for codec in records.CODEC_NAMES]
    seeds.append(records.end_txn_marker_batch(True, producer_id=5, producer_epoch=1))
    seeds.append(records.encode_control_batch([records.control_record(4)]))
    for magic in (0, 1):
        plain = b"".join(_legacy_message(i, magic, 0, b"k", b"v%d" % i) for i in range(3))
        seeds.append(plain)
        seeds.append(_legacy_message(2, magic, 1, None, gzip.compress(plain, mtime=0)))
    for spec in ("FetchResponse", "ProduceRequest", "FetchSnapshotResponse"):
        for vector in vectors.get(spec, ())[:20]:
            seeds += [blob for blob in _records_fields(vector.json) if blob]
    return seeds


def _records_fields(node) -> list[bytes]:
    import base64

    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("records", "unalignedRecords") and isinstance(value, str):
                found.append(base64.b64decode(value))
            else:
                found += _records_fields(value)
    elif isinstance(node, list):
        for item in node:
            found += _records_fields(item)
    return found


def _run_records(data: bytes) -> None:
    batches, _ = records.decode_batches(data, max_decompressed_bytes=FUZZ_DECOMPRESSED_LIMIT)
    for batch in batches:
        records.batch_to_json(batch)
        if batch.magic == 2:
            batch.encode()


def _reseal(data: bytes) -> bytes:
    """``data`` with the CRC of every whole batch recomputed, so that mutations reach the parsers
    behind the checksum (v2: CRC-32C from the attributes on; magic 0/1: CRC-32 from the magic on).
    """
    out = bytearray(data)
    pos = 0
    while pos + 17 <= len(out):
        (length,) = struct.unpack_from(">i", out, pos + 8)
        stop = pos + 12 + length
        if length < 14 or stop > len(out):
            break
        if out[pos + 16] == 2 and length >= 49:
            struct.pack_into(">I", out, pos + 17, records.crc32c(bytes(out[pos + 21 : stop])))
        elif out[pos + 16] in (0, 1):
            struct.pack_into(">I", out, pos + 12, zlib.crc32(bytes(out[pos + 16 : stop])))
        pos = stop
    return bytes(out)


def _run_resealed_records(data: bytes) -> None:
    _run_records(_reseal(data))


def _run_batch_json(obj: object) -> None:
    records.batch_from_json(obj).encode()


def _control_runner(package) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        control = records.decode_control_record(data[:4], data[4:], package=package)
        control.to_json()
        control.value_bytes()

    return run


def control_seeds(package) -> list[bytes]:
    seeds = []
    for data in (
        records.end_txn_marker_batch(False, producer_id=1, producer_epoch=0, package=package),
        records.encode_control_batch([records.control_record(4, package=package)], package=package),
    ):
        (batch,), _ = records.decode_batches(data)
        seeds += [record.key + record.value for record in batch.records]
    for type_, stem in (
        (2, "LeaderChangeMessage"),
        (3, "SnapshotHeaderRecord"),
        (5, "KRaftVersionRecord"),
        (6, "VotersRecord"),
    ):
        seeds.append(struct.pack(">hh", 0, type_) + package.lookup(stem)().encode(0))
    return seeds


def _metadata_runner(package) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        record = records.decode_metadata_record(data, package=package)
        record.to_json()
        if record.message is not None:
            records.encode_metadata_record(record.message, record.version, record.record_type)

    return run


def metadata_seeds(package, vectors: dict) -> list[bytes]:
    seeds = []
    for record_type, stem in package.METADATA_RECORDS.get("metadata", {}).items():
        for vector in vectors.get(stem, ())[:4]:
            seeds.append(bytes([1, record_type, vector.version]) + vector.data)
    return seeds


def _coordinator_runner(package, family: str) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        size = data[0] if data else 0
        key, value = data[1 : 1 + size], data[1 + size :] or None
        record = records.decode_coordinator_record(key, value, package=package, family=family)
        record.to_json()

    return run


def coordinator_seeds(package, family: str, vectors: dict) -> list[bytes]:
    seeds = []
    for record_type, (key_stem, value_stem) in package.COORDINATOR_RECORDS[family].items():
        for key_vector in vectors.get(key_stem, ())[:2]:
            key = struct.pack(">h", record_type) + key_vector.data
            if len(key) > 255:
                continue
            for value_vector in vectors.get(value_stem, ())[:3]:
                value = struct.pack(">h", value_vector.version) + value_vector.data
                seeds.append(bytes([len(key)]) + key + value)
    return seeds


def records_targets(packages: dict, vectors: dict) -> list[Target]:
    batches = record_seeds(vectors)
    views = []
    for data in batches:
        views += [records.batch_to_json(b) for b in records.decode_batches(data)[0] if b.magic == 2]
    targets = [
        Target("records:decode-batches", "bytes", _run_records, batches, bundled),
        Target("records:decode-resealed", "bytes", _run_resealed_records, batches, bundled),
        Target("records:batch-from-json", "json", _run_batch_json, views, bundled),
    ]
    for label, package in packages.items():
        run = _control_runner(package)
        targets.append(Target(f"{label}:control", "bytes", run, control_seeds(package), package))
        seeds = metadata_seeds(package, vectors)
        if seeds:
            run = _metadata_runner(package)
            targets.append(Target(f"{label}:metadata", "bytes", run, seeds, package))
        for family in sorted(package.COORDINATOR_RECORDS):
            seeds = coordinator_seeds(package, family, vectors)
            if seeds:
                run = _coordinator_runner(package, family)
                targets.append(
                    Target(f"{label}:coordinator:{family}", "bytes", run, seeds, package)
                )
    return targets


def all_targets() -> dict[str, Target]:
    """Every target by name."""
    packages = load_packages()
    vectors = load_seed_vectors()
    targets = records_targets(packages, vectors)
    for label, package in packages.items():
        targets += message_targets(label, package, vectors)
    return {target.name: target for target in targets if target.seeds}


def dumps(value: object) -> str:
    """JSON text for a mutated JSON input (NaN and infinity spelled as Python's json module does)."""
    return json.dumps(value, ensure_ascii=True)
