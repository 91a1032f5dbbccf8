"""``kraftwire decode-hex SPEC VERSION HEX...`` and ``kraftwire encode-json SPEC VERSION FILE``.

Quick inspection with a generated package (the bundled ``kraftwire.generated`` unless ``--package``
names another importable one, e.g. a package generated from Kafka's upstream specs). ``--records``
shows the record batches inside ``records`` fields (Fetch, Produce, FetchSnapshot) instead of base64.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from .cli_input import BAD_DATA, CliError, find_spec, load_package, parse_hex, read_json, read_text

RECORD_VALUES = ("metadata", "coordinator")


def add_package_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--package",
        default="kraftwire.generated",
        metavar="NAME",
        help="generated package to use (default: kraftwire.generated)",
    )
    parser.add_argument(
        "--path",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder to add to sys.path first (the one holding --package)",
    )


def add_records_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--records",
        action="store_true",
        help="expand record batches (control records decoded) instead of base64",
    )
    parser.add_argument(
        "--record-values",
        choices=RECORD_VALUES,
        default=None,
        help="also decode data records as KRaft metadata or coordinator records "
        "(implies --records)",
    )
    parser.add_argument(
        "--record-family",
        default=None,
        metavar="NAME",
        help="spec folder of those records when the package has several "
        "(e.g. metadata, group-coordinator)",
    )


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("spec", help="spec name, e.g. VoteRequest")
    parser.add_argument("version", type=int)
    if name == "decode-hex":
        parser.add_argument(
            "hex",
            nargs="+",
            help="the message body as hex (spaces and 0x prefixes allowed; '-' for stdin)",
        )
        add_records_options(parser)
    else:
        parser.add_argument(
            "file", help="a JSON file in Kafka's JsonConverter format ('-' for stdin)"
        )
    add_package_options(parser)


def run(args: argparse.Namespace) -> int:
    package = load_package(args.package, args.path)
    cls = find_spec(package, args.spec)
    if hasattr(args, "hex"):
        text = read_text("-", "stdin") if args.hex == ["-"] else " ".join(args.hex)
        message = protocol_call(package, cls.decode, parse_hex(text, "HEX"), args.version)
        print_json(message_json(message, args.version, package, args))
    else:
        document = read_json(args.file, "FILE")
        message = protocol_call(package, cls.from_json, document, args.version)
        print(protocol_call(package, message.encode, args.version).hex())
    return 0


def protocol_call(package: ModuleType, function: Any, *arguments: Any) -> Any:
    """``function(*arguments)``, the package's ProtocolError (or a KeyError) as a CliError."""
    try:
        return function(*arguments)
    except (package.ProtocolError, KeyError) as exc:
        raise CliError(str(exc.args[0]) if exc.args else type(exc).__name__, BAD_DATA) from None


def message_json(message: Any, version: int, package: ModuleType, args: argparse.Namespace) -> Any:
    """``message`` in Kafka's JSON form, record batches expanded when ``--records`` asks for it."""
    document = protocol_call(package, message.to_json, version)
    if args.records or args.record_values:
        records = importlib.import_module(f"{package.__name__}.records")
        options = {"values": args.record_values, "family": args.record_family}
        _expand_records(type(message)._JSON[version], message, document, records, options)
    return document


def _expand_records(
    layout: Any, obj: Any, document: dict[str, Any], records: ModuleType, options: dict[str, Any]
) -> None:
    """Replace every ``records`` field's base64 in ``document`` by its batches' JSON view.

    Walks the message's own JSON field tables, so any field typed ``records`` is found wherever it
    is nested, whatever its JSON key.
    """
    for entry in layout.entries:
        field, child = entry.field, entry.child
        value = getattr(obj, field.attr)
        if field.key not in document or value is None:
            continue
        if field.kind == "records":
            document[field.key] = protocol_call(records, _batches_json, records, value, options)
        elif field.kind == "struct" and child is not None:
            _expand_records(child, value, document[field.key], records, options)
        elif field.kind == "array" and child is not None:
            for item, item_document in zip(value, document[field.key]):
                _expand_records(child, item, item_document, records, options)


def _batches_json(records: ModuleType, data: bytes, options: dict[str, Any]) -> Any:
    return records.batches_to_json(data, **options)


def print_json(document: Any) -> None:
    print(json.dumps(document, indent=2, ensure_ascii=False))
