"""``kraftwire specs check [--strict] DIR...``: validate spec files and print one line per problem
(warnings, such as a field present in no valid version, fail the check only with ``--strict``).

Besides the validator's rules (``validate.RULES``), the command reports four of its own: ``missing-path``
(an argument that does not exist), ``no-specs`` (a folder that holds no ``*.json``: a mistyped path
must not pass as checked), ``json-syntax`` (not JSON once comments are removed) and ``unreadable``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .generate import read_sources
from .validate import SpecError, spec_warnings


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dirs", nargs="+", type=Path, help="spec folders, single spec files, Kafka jars or tarballs"
    )
    parser.add_argument("--strict", action="store_true", help="fail on warnings too")


def run(args: argparse.Namespace) -> int:
    missing = [path for path in args.dirs if not path.exists()]
    errors = [
        SpecError(str(path), "", "missing-path", "no such file or directory") for path in missing
    ]
    errors += [
        SpecError(str(path), "", "no-specs", "no spec (*.json) found")
        for path in args.dirs
        if path.is_dir() and next(path.rglob("*.json"), None) is None
    ]
    found = read_sources([path for path in args.dirs if path.exists()])
    errors.extend(found.errors)
    warnings = spec_warnings(found.raws)
    for error in errors:
        print(error)
    for warning in warnings:
        print(f"warning: {warning}")
    summary = f"{found.file_count} files, {len(errors)} errors"
    print(summary + (f", {len(warnings)} warnings" if warnings else ""), file=sys.stderr)
    return 1 if errors or (args.strict and warnings) else 0
