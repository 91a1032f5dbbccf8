"""The codec package a decode job uses: the bundled one, or one generated from spec directories.

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


def _files_under(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts
    )


def specs_fingerprint(spec_dirs: list[Path]) -> str:
    """Hash of every spec file (path and content) and of the generator that would read them."""
    import kraftwire.codegen as codegen

    digest = hashlib.sha256()
    generator_root = Path(codegen.__file__).resolve().parent
    for root, suffixes in [(generator_root, (".py", ".j2", ".json"))] + [
        (Path(d), (".json",)) for d in spec_dirs
    ]:
        if not root.is_dir():
            raise FileNotFoundError(f"spec directory {root} does not exist")
        for path in _files_under(root, suffixes):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


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


def _generated_package_dir(spec_dirs: list[Path], cache_dir: Path | None) -> tuple[Path, str]:
    """``(import root, package name)`` of the cached package of ``spec_dirs``, generated if new."""
    name = f"kraftwire_codecs_{specs_fingerprint(spec_dirs)}"
    root = (cache_dir or default_cache_dir()) / name
    if not (root / name / "__init__.py").exists():
        # Imported only to generate: the generator's imports (jinja2, jsonschema, black) cost a
        # Spark query's planning process a tenth of a second more than the rest of its bundle.
        from kraftwire.codegen.generate import generate

        staging = Path(tempfile.mkdtemp(prefix=name, dir=_ensure(root.parent)))
        generate([Path(d) for d in spec_dirs], staging / name, name)
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
    from kraftwire.codegen.generate import load_specs
    from kraftwire.codegen.native.build import build_native

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
