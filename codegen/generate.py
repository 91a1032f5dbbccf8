"""Load, validate and model a set of spec directories, then generate a package from them."""

from __future__ import annotations

import os
from pathlib import Path

from .emit import generate_package, write_package
from .loader import spec_comments, spec_files
from .model import MessageSpec, build_message
from .validate import load_and_validate


class SpecSetError(Exception):
    """The specs did not validate; ``errors`` lists every problem found."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(f"{len(errors)} spec error(s):\n" + "\n".join(errors))
        self.errors = errors


def spec_families(paths: list[Path]) -> dict[Path, str]:
    """Record-type scopes: Kafka generates one package per spec directory, so ids repeat across them.

    Each directory is named by its first component below the common ancestor of all of them
    (``metadata``, ``group-coordinator``, ... for Kafka's tree), or by its own name when there is one.
    """
    parents = sorted({path.resolve().parent for path in paths})
    if len(parents) <= 1:
        return {path: path.resolve().parent.name for path in paths}
    common = Path(os.path.commonpath(parents))
    return {path: path.resolve().parent.relative_to(common).parts[0] for path in paths}


def load_specs(directories: list[Path]) -> list[MessageSpec]:
    """Every spec below ``directories``, validated as one set; raises SpecSetError on any problem."""
    paths = spec_files([Path(d) for d in directories])
    families = spec_families(paths)
    raws, errors = load_and_validate(paths)
    if errors:
        raise SpecSetError([str(e) for e in errors])
    return [
        build_message(raw.data, raw.path, families[raw.path], spec_comments(raw.text)) for raw in raws
    ]


def generate(directories: list[Path], out_dir: Path, package: str) -> int:
    """Generate ``package`` into ``out_dir``; returns the number of message modules written."""
    specs = load_specs(directories)
    files = generate_package(specs, package)
    write_package(files, out_dir)
    return sum(1 for spec in specs if not spec.is_placeholder)
