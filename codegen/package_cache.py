"""Codec packages generated from spec directories on demand, cached: what ``kraftwire decode
--schemas`` and ``kraftwire dump-log --schemas`` decode with when the bundled codecs are not enough.

Generating from Kafka's 292 specs takes seconds, so a generated package is cached under a directory
named by a hash of the specs' contents and of the generator's sources: every job with the same specs
reuses it. A ``CodecBundle`` carries a generated package's sources by value (compressed), so a Spark
reader pickled to an executor on another machine can materialise and import the same package there.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

BUNDLED = "kraftwire.generated"


def default_cache_dir() -> Path:
    base = os.environ.get("KRAFTWIRE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kraftwire"
    )
    return Path(base) / "codecs"


def _files_under(root: Path, suffixes: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(path relative to root, path)`` of the files under ``root`` with one of ``suffixes``,
    outside ``__pycache__``, in the order of their relative paths' parts: what
    ``sorted(root.rglob("*"))`` lists (symlinked files included, symlinked folders not entered),
    in a fifth of its time."""
    found: list[tuple[list[str], str]] = []
    folders: list[tuple[list[str], str]] = [([], str(root))]
    while folders:
        parts, folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append((parts + [entry.name], entry.path))
                elif os.path.splitext(entry.name)[1] in suffixes and entry.is_file():
                    found.append((parts + [entry.name], entry.path))
    found.sort()
    return [("/".join(parts), path) for parts, path in found]


def _fingerprint_roots(spec_dirs: list[Path]) -> list[tuple[Path, tuple[str, ...]]]:
    """The folders a fingerprint covers (the generator's own sources first), with the suffixes
    of the files it reads there."""
    roots: list[tuple[Path, tuple[str, ...]]] = [
        (Path(__file__).resolve().parent, (".py", ".j2", ".json"))
    ]
    roots += [(Path(d), (".json",)) for d in spec_dirs]
    for root, _ in roots:
        if not root.is_dir():
            raise FileNotFoundError(f"spec directory {root} does not exist")
    return roots


# The last fingerprint of each list of spec folders, with the metadata of every file it read: a
# Spark query's planning process, reused from query to query, asks for it every query, and the
# files' metadata costs a fifth of reading and hashing their contents (2 ms against 10.5 for
# Kafka's specs). A file changed within ``_RACY_NS`` of the moment its metadata was read could
# change again within the same tick of the file system's clock with nothing in its metadata to
# show it, so such a fingerprint is not remembered (git's rule for "racily clean" files).
_FINGERPRINTS: dict[
    tuple[Path, ...], tuple[tuple[tuple[str, int, int, int, int, int], ...], str]
] = {}
_RACY_NS = 2_000_000_000


def specs_fingerprint(spec_dirs: list[Path]) -> str:
    """Hash of every spec file (path and content) and of the generator that would read them."""
    now = time.time_ns()
    files = [
        file
        for root, suffixes in _fingerprint_roots(spec_dirs)
        for file in _files_under(root, suffixes)
    ]
    stamps = tuple(_stamp(path) for _, path in files)
    key = tuple(Path(d) for d in spec_dirs)
    remembered = _FINGERPRINTS.get(key)
    if remembered is not None and remembered[0] == stamps:
        return remembered[1]
    digest = hashlib.sha256()
    for relative, path in files:
        digest.update(relative.encode() + b"\0")
        with open(path, "rb") as spec:
            digest.update(spec.read())
    fingerprint = digest.hexdigest()[:16]
    if all(max(stamp[-2:]) < now - _RACY_NS for stamp in stamps):
        _FINGERPRINTS[key] = (stamps, fingerprint)
    return fingerprint


def _stamp(path: str) -> tuple[str, int, int, int, int, int]:
    """What tells a file's content changed without reading it; the last two: mtime and ctime."""
    stat = os.stat(path)
    return (path, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


@dataclass(frozen=True)
class CodecBundle:
    """A generated package by value: its import name and its compressed module sources."""

    name: str
    files: tuple[tuple[str, bytes], ...]

    @classmethod
    def of_directory(cls, name: str, package_dir: Path) -> "CodecBundle":
        files = tuple(
            (p.name, zlib.compress(p.read_bytes(), 6)) for p in sorted(package_dir.glob("*.py"))
        )
        return cls(name, files)

    def materialise(self, cache_dir: Path | None = None) -> ModuleType:
        """Write the package under the cache (once) and import it."""
        root = (cache_dir or default_cache_dir()) / self.name
        target = root / self.name
        if not (target / "__init__.py").exists():
            staging = Path(tempfile.mkdtemp(prefix=self.name, dir=_ensure(root.parent)))
            (staging / self.name).mkdir()
            for file_name, data in self.files:
                (staging / self.name / file_name).write_bytes(zlib.decompress(data))
            _publish(staging, root)
        return _import_from(root, self.name)


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _publish(staging: Path, root: Path) -> None:
    """Move a fully written staging directory into place; a concurrent winner is kept."""
    try:
        staging.rename(root)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def _import_from(root: Path, name: str) -> ModuleType:
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(name)


def generated_codecs(
    spec_dirs: list[Path], cache_dir: Path | None = None
) -> tuple[ModuleType, CodecBundle]:
    """The package generated from ``spec_dirs`` (from the cache when the specs did not change)."""
    root, name = _generated_package_dir(spec_dirs, cache_dir)
    return _import_from(root, name), CodecBundle.of_directory(name, root / name)


class SpecsNotGenerated(ValueError):
    """The spec directories hold specs that do not load or validate: the first problem, one line
    (``kraftwire decode`` and ``dump-log`` print it as their one-line error)."""


def _generated_package_dir(spec_dirs: list[Path], cache_dir: Path | None) -> tuple[Path, str]:
    """``(import root, package name)`` of the cached package of ``spec_dirs``, generated if new."""
    name = f"kraftwire_codecs_{specs_fingerprint(spec_dirs)}"
    root = (cache_dir or default_cache_dir()) / name
    if not (root / name / "__init__.py").exists():
        # Imported only to generate: the generator's imports (jinja2, jsonschema, black) cost a
        # Spark query's planning process a tenth of a second more than the rest of its bundle.
        from .generate import SpecSetError, generate

        staging = Path(tempfile.mkdtemp(prefix=name, dir=_ensure(root.parent)))
        try:
            generate([Path(d) for d in spec_dirs], staging / name, name)
        except SpecSetError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            more = f" (and {len(exc.errors) - 1} more)" if len(exc.errors) > 1 else ""
            raise SpecsNotGenerated(f"--schemas: {exc.errors[0]}{more}") from None
        _publish(staging, root)
    return root, name


def codecs_bundle(spec_dirs: list[Path], cache_dir: Path | None = None) -> CodecBundle:
    """The bundle of the package generated from ``spec_dirs``, without importing the package
    (a Spark query's planning needs only the bundle, for its executors)."""
    root, name = _generated_package_dir(spec_dirs, cache_dir)
    return CodecBundle.of_directory(name, root / name)


def compile_native(
    spec_dirs: list[Path], stems: list[str], cache_dir: Path | None = None
) -> list[str]:
    """Compile with mypyc (``kraftwire codegen --native``'s build) the codecs of the specs named in
    ``stems`` into the cached package of ``spec_dirs``; returns the stems compiled now (a spec
    already compiled is not built again). Call it before the package is imported: each spec module
    chooses its compiled codec when it is imported, and uses it only if built from its own source.

    Compiling all of Kafka's specs takes a quarter of an hour of CPU; a job that knows which APIs
    its traffic carries compiles those. ``KRAFTWIRE_PURE=1`` still forces the pure codecs.
    """
    from .generate import load_specs
    from .native.build import build_native

    root, name = _generated_package_dir(spec_dirs, cache_dir)
    package_dir = root / name
    wanted = set(stems)
    specs = [spec for spec in load_specs([Path(d) for d in spec_dirs]) if spec.stem in wanted]
    unknown = wanted - {spec.stem for spec in specs}
    if unknown:
        raise ValueError(f"no spec named {', '.join(sorted(unknown))} in the spec directories")
    todo = [spec for spec in specs if not any(package_dir.glob(f"_native_{spec.module}.*"))]
    if todo:
        build_native(todo, name, package_dir)
    return [spec.stem for spec in todo]


def parse_schema_dirs(text: str | None) -> list[Path]:
    """``"DIR[,DIR...]"`` as paths; an empty or missing value means the bundled codecs."""
    return [Path(part) for part in (text or "").split(",") if part.strip()]


def load_codecs(bundle: CodecBundle | None, cache_dir: Path | None = None) -> ModuleType:
    """The package of a bundle (None: the bundled codecs)."""
    if bundle is None:
        return importlib.import_module(BUNDLED)
    return bundle.materialise(cache_dir)
