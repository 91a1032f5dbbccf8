"""Decode captures into every table and print the rows and stats as JSON, one file at a time.

    python tests/spark/decode_to_json.py CAPTURE...

Run by ``test_native_differential`` in a child process per implementation (the package chooses
pure or compiled when it is imported, so one process holds only one of them).
"""

from __future__ import annotations

import dataclasses
import json
import sys

import kraftwire.generated as codecs
import kraftwire.spark_decoders as decoders
from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.spark_decoders.decode.pipeline import DecodeOptions, decode_files
from kraftwire.spark_decoders.output.tables import TABLES, json_ready


def main(paths: list[str]) -> int:
    bodies = BodyDecoder(codecs)
    out: dict = {"implementation": decoders.IMPLEMENTATION, "files": {}}
    for path in paths:
        decoded = out["files"][path] = {}
        for table in TABLES:
            rows, stats = decode_files([path], bodies, DecodeOptions(table=table))
            decoded[table] = [json_ready(row, table) for row in rows]
            decoded["stats"] = {name: dataclasses.asdict(s) for name, s in stats.items()}
    json.dump(out, sys.stdout, default=str, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
