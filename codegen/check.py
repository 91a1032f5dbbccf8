"""``kraftwire specs check DIR...``: validate spec files and print one line per problem.

Besides the validator's rules (``validate.RULES``), the command reports three of its own: ``missing-path``
(an argument that does not exist), ``json-syntax`` (not JSON once comments are removed) and ``unreadable``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .loader import spec_files
from .validate import SpecError, load_and_validate


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", type=Path, help="spec directories or single spec files")


def run(args: argparse.Namespace) -> int:
    missing = [path for path in args.dirs if not path.exists()]
    errors = [
        SpecError(str(path), "", "missing-path", "no such file or directory") for path in missing
    ]
    files = spec_files([path for path in args.dirs if path.exists()])
    errors.extend(load_and_validate(files)[1])
    for error in errors:
        print(error)
    print(f"{len(files)} files, {len(errors)} errors", file=sys.stderr)
    return 1 if errors else 0
