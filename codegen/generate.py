"""Load, validate and model a set of spec sources, then generate a package from them.

A source is a folder (searched recursively for ``*.json``), a single spec file, a Kafka jar or a Kafka
release tarball (see ``archives``). The package's import name is ``--package``; Python imports a
package by its folder's name, so the last part of that name must be the output folder's name.
"""

from __future__ import annotations

import keyword
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .archives import ArchiveError, archive_specs, is_archive
from .emit import generate_package
from .facts import KafkaFacts, load_facts
from .facts_emit import request_names
from .loader import RawSpec, SpecSyntaxError, parse_raw, spec_comments, spec_files
from .model import MessageSpec, build_message
from .output import OutputError, OutputPlan, apply, early_refusal, plan_output, refusal
from .validate import SpecError, load_and_validate, validate_specs


class SpecSetError(Exception):
    """The specs did not load or validate; ``errors`` lists every problem found, one line each."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(f"{len(errors)} spec error(s):\n" + "\n".join(errors))
        self.errors = errors


class PackageNameError(ValueError):
    """``--package`` is not a name the output folder can be imported as."""


def spec_families(paths: list[Path]) -> dict[Path, str]:
    """Record-type scopes: Kafka generates one package per spec directory, so ids repeat across them.

    Each directory is named by its first component below the common ancestor of all of them
    (``metadata``, ``group-coordinator``, ... for Kafka's tree), or by its own name when there is one
    or when it is that common ancestor.
    """
    parents = sorted({path.resolve().parent for path in paths})
    if len(parents) <= 1:
        return {path: path.resolve().parent.name for path in paths}
    common = Path(os.path.commonpath(parents))
    families = {}
    for path in paths:
        below = path.resolve().parent.relative_to(common).parts
        families[path] = below[0] if below else common.name  # a file in the common folder itself
    return families


@dataclass
class SourceSet:
    """Every spec file read from a set of sources, before modelling."""

    raws: list[RawSpec]
    families: dict[Path, str]  # spec path -> family (record-type scope)
    errors: list[SpecError]
    file_count: int  # spec files found, the unreadable ones included


def read_sources(sources: list[Path]) -> SourceSet:
    """Read and validate every spec in existing ``sources`` (folders, spec files, jars, tarballs)."""
    paths = spec_files([source for source in sources if not is_archive(source)])
    families = spec_families(paths)
    raws, errors = load_and_validate(paths)
    archived, archive_errors, archive_files = _load_archives(
        [source for source in sources if is_archive(source)], families
    )
    errors += archive_errors + validate_specs(archived)
    raws += archived
    return SourceSet(raws, families, errors + _duplicate_names(raws), len(paths) + archive_files)


def load_specs(sources: list[Path]) -> list[MessageSpec]:
    """Every spec in ``sources``, validated as one set.

    Raises SpecSetError on any problem, including a source that does not exist and a set of no specs.
    """
    sources = [Path(source) for source in sources]
    missing = [source for source in sources if not source.exists()]
    if missing:
        raise SpecSetError([f"{source}: no such file or folder" for source in missing])
    found = read_sources(sources)
    if found.errors:
        raise SpecSetError([str(error) for error in found.errors])
    if not found.raws:
        where = ", ".join(str(source) for source in sources)
        raise SpecSetError([f"{where}: no spec (*.json) found"])
    return [
        build_message(raw.spec, raw.path, found.families[raw.path], spec_comments(raw.text))
        for raw in found.raws
    ]


def _load_archives(
    archives: list[Path], families: dict[Path, str]
) -> tuple[list[RawSpec], list[SpecError], int]:
    """The specs of every archive (their families added to ``families``), the problems found and
    the number of spec files seen."""
    raws: list[RawSpec] = []
    errors: list[SpecError] = []
    count = 0
    for archive in archives:
        try:
            entries = archive_specs(archive)
        except ArchiveError as exc:
            errors.append(SpecError(str(archive), "", "unreadable", str(exc)))  # named once
            continue
        if not entries:
            errors.append(SpecError(archive.name, "", "unreadable", "holds no Kafka spec JSON"))
        count += len(entries)
        for entry in entries:
            families[entry.path] = entry.family
            try:
                raws.append(parse_raw(entry.path, entry.text))
            except SpecSyntaxError as exc:
                errors.append(SpecError(entry.path.name, "", "json-syntax", str(exc)))
    return raws, errors, count


def _duplicate_names(raws: list[RawSpec]) -> list[SpecError]:
    """Two specs of one name would generate the same module: name both places."""
    seen: dict[str, Path] = {}
    errors = []
    for raw in raws:
        first = seen.setdefault(raw.path.name, raw.path)
        if first != raw.path:
            message = f"found twice, in {first.parent} and {raw.path.parent}"
            errors.append(SpecError(raw.path.name, "", "duplicate-file", message))
    return errors


def package_name(out_dir: Path, package: str | None) -> str:
    """The import name of the package written to ``out_dir``; raises PackageNameError."""
    folder = out_dir.resolve().name
    name = package or folder
    parts = name.split(".")
    bad = [part for part in parts if not part.isidentifier() or keyword.iskeyword(part)]
    if bad:
        what = "--package" if package else f"--out {out_dir}: the folder name"
        raise PackageNameError(
            f"{what} {name!r} is not a Python import name ({bad[0]!r} is not an identifier)"
        )
    if parts[-1] != folder:
        raise PackageNameError(
            f"--package {name}: Python imports a package by its folder's name, "
            "so its last part must be "
            f"the --out folder's name {folder!r} (or write to a folder named {parts[-1]!r})"
        )
    return name


@dataclass(frozen=True)
class Generation:
    """A generation worked out in memory: the specs read and what writing it would change."""

    specs: list[MessageSpec]
    plan: OutputPlan

    @property
    def module_count(self) -> int:
        return sum(1 for spec in self.specs if not spec.is_placeholder)

    @property
    def placeholders(self) -> list[str]:
        """Specs skipped because they declare ``validVersions: none`` (API keys kept unused)."""
        return sorted(spec.stem for spec in self.specs if spec.is_placeholder)


def prepare(
    sources: list[Path],
    out_dir: Path,
    package: str | None = None,
    *,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Generation:
    """Load, validate and render everything, and compare it with ``out_dir``; writes nothing."""
    name = package_name(out_dir, package)
    specs, facts = load_spec_set(sources)
    files = generate_package(specs, name, jobs, progress, facts)
    return Generation(specs, plan_output(files, out_dir))


def load_spec_set(sources: list[Path]) -> tuple[list[MessageSpec], KafkaFacts]:
    """The specs of ``sources`` and the fact files beside them, checked together.

    Raises SpecSetError on any problem, in a spec or in a fact file.
    """
    specs = load_specs(sources)
    facts, problems = load_facts([Path(source) for source in sources], request_names(specs))
    if problems:
        raise SpecSetError(problems)
    return specs, facts


def write(plan: OutputPlan, force: bool = False) -> None:
    """Carry out ``plan``; raises OutputError, before touching anything, when it is refused."""
    reason = refusal(plan, force)
    if reason is not None:
        raise OutputError(reason)
    apply(plan)


def generate(
    sources: list[Path], out_dir: Path, package: str | None = None, *, force: bool = False
) -> int:
    """Generate ``package`` into ``out_dir``; returns the number of message modules written."""
    reason = early_refusal(out_dir, force)
    if reason is not None:
        raise OutputError(reason)
    generation = prepare(sources, out_dir, package)
    write(generation.plan, force)
    return generation.module_count
