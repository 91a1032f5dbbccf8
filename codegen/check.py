"""``kraftwire specs check DIR...``: validate spec files and print one line per problem.

Besides the validator's rules (``validate.RULES``), the command reports three of its own: ``missing-path``
(an argument that does not exist), ``json-syntax`` (not JSON once comments are removed) and ``unreadable``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .generate import read_sources
from .validate import SpecError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dirs", nargs="+", type=Path, help="spec folders, single spec files, Kafka jars or tarballs"
    )


def run(args: argparse.Namespace) -> int:
    missing = [path for path in args.dirs if not path.exists()]
    errors = [
        SpecError(str(path), "", "missing-path", "no such file or directory") for path in missing
    ]
    found = read_sources([path for path in args.dirs if path.exists()])
    errors.extend(found.errors)
    for error in errors:
        print(error)
    print(f"{found.file_count} files, {len(errors)} errors", file=sys.stderr)
    return 1 if errors else 0
