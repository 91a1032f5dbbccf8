"""``kraftwire dump-log --cluster-metadata-decoder`` (alias ``--record-values metadata``): the payload of
each data record of a ``__cluster_metadata`` segment or snapshot as the JSON Kafka's DumpLogSegments
prints with the same flag: ``{"type":"REGISTER_BROKER_RECORD","version":N,"data":{...}}``, compact,
``type`` named as in Kafka's ``MetadataRecordType`` (the record class's name in upper snake case) and
``data`` the record's JSON view at its version.

kraftwire's bundled codecs hold the KRaft protocol only, not the metadata records: ``--schemas DIR``
names Kafka's spec directories to generate them from (as ``kraftwire decode --schemas`` does, with
the same cache).
"""

from __future__ import annotations

import argparse
import json
import re
from types import ModuleType
from typing import Any

from kraftwire.codegen.package_cache import SpecsNotGenerated, generated_codecs, parse_schema_dirs
from kraftwire.generated import ProtocolError
from kraftwire.generated.records import decode_metadata_record

METADATA = "metadata"
_WORD_START = re.compile(r"(?<!^)(?=[A-Z])")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Kafka's flag name and kraftwire's ``--record-values`` spelling of the same choice."""
    parser.add_argument(
        "--cluster-metadata-decoder",
        dest="record_values",
        action="store_const",
        const=METADATA,
        help="decode data records as KRaft metadata records (as kafka-dump-log.sh does)",
    )
    parser.add_argument(
        "--record-values",
        choices=[METADATA],
        default=None,
        help="decode data records as this kind of record (metadata: as --cluster-metadata-decoder)",
    )
    parser.add_argument(
        "--schemas",
        metavar="DIR[,DIR...]",
        help="Kafka's spec directories holding the metadata records (e.g. kafka-schemas/metadata)",
    )


class NoMetadataCodecs(ValueError):
    """The codecs at hand cannot decode metadata records; the message says what to pass."""


def metadata_package(schemas: str | None) -> ModuleType:
    """The generated package that decodes the metadata records: generated from ``schemas``."""
    if not schemas:
        raise NoMetadataCodecs(
            "decoding metadata records needs their specs: pass --schemas DIR "
            "(the directory of Kafka's metadata record specs, e.g. kafka-schemas/metadata)"
        )
    try:
        package: ModuleType = generated_codecs(parse_schema_dirs(schemas))[0]
    except SpecsNotGenerated as exc:  # already names --schemas and the folder or spec at fault
        raise NoMetadataCodecs(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise NoMetadataCodecs(f"--schemas {schemas}: {exc}") from None
    try:
        package.metadata_record_class(0)
    except (KeyError, AttributeError):
        raise NoMetadataCodecs(f"--schemas {schemas}: no metadata record specs there") from None
    return package


def type_name(class_name: str) -> str:
    """``RegisterBrokerRecord`` -> ``REGISTER_BROKER_RECORD``, the constant Kafka names the type by."""
    return _WORD_START.sub("_", class_name).upper()


def decode_payload(value: bytes | None, package: ModuleType) -> dict[str, Any]:
    """The record value as Kafka's decoder shows it, or ``{"error": ...}`` saying why it does not
    decode as a metadata record (the line then shows that instead of guessing)."""
    if value is None:
        return {"error": "the record value is null"}
    try:
        record = decode_metadata_record(value, package=package)
    except (ProtocolError, ValueError) as exc:
        return {"error": str(exc)}
    if record.message is None:
        return {"error": f"unknown metadata record type {record.record_type}"}
    return {
        "type": type_name(type(record.message).__name__),
        "version": record.version,
        "data": record.message.to_json(record.version),
    }


def payload_text(payload: dict[str, Any]) -> str:
    """What follows ``payload:`` on a record line."""
    if "error" in payload:
        return f"(not a metadata record: {payload['error']})"
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
