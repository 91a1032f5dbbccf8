"""Load, validate and model a set of spec directories, then generate a package from them."""

from __future__ import annotations

from pathlib import Path

from .emit import generate_package, write_package
from .loader import RawSpec, SpecSyntaxError, load_raw, spec_files
from .model import MessageSpec, build_message
from .validate import SpecError, validate_specs


class SpecSetError(Exception):
    """The specs did not validate; ``errors`` lists every problem found."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(f"{len(errors)} spec error(s):\n" + "\n".join(errors))
        self.errors = errors


def _family(path: Path, root: Path) -> str:
    """The record-type scope of a spec: the first directory below the schema root, else the root."""
    relative = path.parent.relative_to(root) if root.is_dir() else Path()
    return relative.parts[0] if relative.parts else (root if root.is_dir() else root.parent).name


def load_specs(directories: list[Path]) -> list[MessageSpec]:
    """Every spec below ``directories``, validated as one set; raises SpecSetError on any problem."""
    raws: list[RawSpec] = []
    families: dict[Path, str] = {}
    problems: list[str] = []
    for root in map(Path, directories):
        for path in spec_files([root]):
            try:
                raws.append(load_raw(path))
            except SpecSyntaxError as exc:
                problems.append(str(exc))
            families[path] = _family(path, root)
    errors: list[SpecError] = validate_specs(raws)
    problems += [str(e) for e in errors]
    if problems:
        raise SpecSetError(problems)
    return [build_message(raw.data, raw.path, families[raw.path]) for raw in raws]


def generate(directories: list[Path], out_dir: Path, package: str) -> int:
    """Generate ``package`` into ``out_dir``; returns the number of message modules written."""
    specs = load_specs(directories)
    files = generate_package(specs, package)
    write_package(files, out_dir)
    return sum(1 for spec in specs if not spec.is_placeholder)
