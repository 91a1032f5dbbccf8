"""``kraftwire spec check DIR...``: validate spec files and print one line per problem.

Besides the validator's rules (``validate.RULES``), the command reports three of its own: ``missing-path``
(an argument that does not exist), ``json-syntax`` (not JSON once comments are removed) and ``unreadable``.
The validator's ``WARNINGS`` (things Kafka's generator accepts) print with a ``warning:`` prefix and fail
the check only under ``--strict``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .loader import spec_files
from .validate import SpecError, load_and_validate, spec_warnings


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    sub = parser.add_subparsers(dest=f"{name}_command", required=True, metavar="SUBCOMMAND")
    check = sub.add_parser(
        "check", help="validate spec files against every rule of Kafka's generator"
    )
    check.add_argument("dirs", nargs="+", type=Path, help="spec directories or single spec files")
    check.add_argument("--strict", action="store_true", help="fail on warnings too")


def run(args: argparse.Namespace) -> int:
    missing = [path for path in args.dirs if not path.exists()]
    errors = [
        SpecError(str(path), "", "missing-path", "no such file or directory") for path in missing
    ]
    files = spec_files([path for path in args.dirs if path.exists()])
    raws, found = load_and_validate(files)
    errors.extend(found)
    warnings = spec_warnings(raws)
    for error in errors:
        print(error)
    for warning in warnings:
        print(f"warning: {warning}")
    summary = f"{len(files)} files, {len(errors)} errors"
    print(summary + (f", {len(warnings)} warnings" if warnings else ""), file=sys.stderr)
    return 1 if errors or (args.strict and warnings) else 0
