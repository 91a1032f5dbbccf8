"""``kraftwire decode-hex SPEC VERSION HEX`` and ``kraftwire encode-json SPEC VERSION FILE``.

Quick inspection with a generated package (the bundled ``kraftwire.generated`` unless
``--package`` names another importable one, e.g. a package generated from Kafka's upstream specs).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("spec", help="spec name, e.g. VoteRequest")
    parser.add_argument("version", type=int)
    if name == "decode-hex":
        parser.add_argument("hex", help="the message body as hex (whitespace allowed)")
    else:
        parser.add_argument("file", type=Path, help="a JSON file in Kafka's JsonConverter format ('-' for stdin)")
    parser.add_argument("--package", default="kraftwire.generated", help="generated package to use")
    parser.add_argument("--path", type=Path, default=None, help="directory to add to sys.path first")


def run(args: argparse.Namespace) -> int:
    from kraftwire.generated import ProtocolError

    if args.path is not None:
        sys.path.insert(0, str(args.path))
    package = importlib.import_module(args.package)
    try:
        cls = package.lookup(args.spec)
        if hasattr(args, "hex"):
            data = bytes.fromhex("".join(args.hex.split()))
            print(json.dumps(cls.decode(data, args.version).to_json(args.version), indent=2, ensure_ascii=False))
        else:
            text = sys.stdin.read() if str(args.file) == "-" else args.file.read_text(encoding="utf-8")
            print(cls.from_json(json.loads(text), args.version).encode(args.version).hex())
    except (ProtocolError, KeyError, ValueError) as exc:
        print(f"kraftwire: {exc}", file=sys.stderr)
        return 1
    return 0
