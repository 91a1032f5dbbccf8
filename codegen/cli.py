"""``kraftwire codegen --schemas DIR [DIR ...] --out DIR --package NAME``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--schemas", nargs="+", type=Path, required=True, metavar="DIR",
                        help="spec directories (searched recursively for *.json)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="package directory to write (its stale modules are removed)")
    parser.add_argument("--package", default=None, metavar="NAME",
                        help="import name of the generated package (default: the --out folder name)")


def run(args: argparse.Namespace) -> int:
    from .generate import SpecSetError, generate

    started = time.perf_counter()
    package = args.package or args.out.name
    try:
        count = generate(args.schemas, args.out, package)
    except SpecSetError as exc:
        for line in exc.errors:
            print(line, file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - started
    print(f"generated {count} modules into {args.out} as {package} in {elapsed:.1f}s", file=sys.stderr)
    return 0
