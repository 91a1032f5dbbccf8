"""Compile the decoders' hot path with mypyc into ``_native/`` (``make native``).

    .venv/bin/python -m kraftwire.spark_decoders.native.build [--if-needed]

The package's sources are copied into a temporary folder laid out as their import path
(``kraftwire/spark_decoders/``, since mypyc names a module by its folders), type-checked and
compiled there by ``setup.py build_ext --inplace`` with ``mypycify``: the modules of
``implementation.COMPILED_MODULES`` in one group, so calls between them are native C calls, the
others only read for their types. The extension files and a manifest of the sources' digests are
then placed into ``_native/``; ``implementation.choose`` uses them only while those sources are
unchanged. The temporary folder is always removed, and in ``_native/`` only this build's own files
are replaced. ``--if-needed`` builds only when ``_native/`` holds no usable build. Needs the
``native`` extra (mypy) and a C compiler.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kraftwire.codegen.native.build import NativeBuildError, run_build_script

from .implementation import (
    COMPILED_MODULES,
    GROUP,
    GROUP_LIBRARY,
    MANIFEST,
    NATIVE_DIR,
    PACKAGE,
    SOURCE_ROOT,
    extension_path,
    extension_suffix,
    source_digest,
    subpackages,
    usable_build,
)

# The codecs, the records layer, construct and pyspark are outside the build: typed as Any.
MYPY_OPTIONS = ["--ignore-missing-imports", "--follow-imports=silent"]
_SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify

setup(
    name="kraftwire-spark-decoders-native",
    ext_modules=mypycify(sys.argv[1:], opt_level="3", group_name={group!r}),
    script_args=["-q", "build_ext", "--inplace"],
)
"""


@dataclass(frozen=True)
class NativeBuild:
    modules: tuple[str, ...]
    seconds: float
    extension_bytes: int  # total size of the extension files placed into ``_native/``


def build(native_dir: Path = NATIVE_DIR) -> NativeBuild:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kraftwire-decoders-native-") as temp:
        root = Path(temp)
        package_dir = root.joinpath(*PACKAGE.split("."))
        package_dir.mkdir(parents=True)
        for level in [package_dir, *package_dir.relative_to(root).parents]:
            if level != Path("."):
                (root / level / "__init__.py").touch()  # empty: the real one chooses, uncompiled
        for source in SOURCE_ROOT.rglob("*.py"):
            place = package_dir / source.relative_to(SOURCE_ROOT)
            if "_native" in place.parts:
                continue
            place.parent.mkdir(parents=True, exist_ok=True)
            if source.name == "__init__.py":
                place.touch()  # empty: the real ones choose, uncompiled
            else:
                shutil.copyfile(source, place)
        copies = {
            m: package_dir.joinpath(*m.split(".")).with_suffix(".py") for m in COMPILED_MODULES
        }
        # The digests of the sources compiled, not of the files as they are once the build ends:
        # a source edited meanwhile must make the build stale.
        digests = {m: source_digest(path) for m, path in copies.items()}
        _compile(root, [str(path.relative_to(root)) for path in copies.values()])
        built = {m: extension_path(package_dir, m) for m in (*COMPILED_MODULES, GROUP_LIBRARY)}
        missing = [path.name for path in built.values() if not path.is_file()]
        if missing:
            raise NativeBuildError(f"mypyc built no {', '.join(missing)}")
        size = _place(built, digests, native_dir)
    return NativeBuild(COMPILED_MODULES, time.perf_counter() - started, size)


def _compile(root: Path, paths: list[str]) -> None:
    run_build_script(root, _SETUP.format(group=f"{PACKAGE}.{GROUP}"), [*MYPY_OPTIONS, *paths])


def _place(built: dict[str, Path], digests: dict[str, str], native_dir: Path) -> int:
    """Replace the previous build's files in ``native_dir`` by ``built`` (by module) and the
    manifest of the sources' ``digests``."""
    native_dir.mkdir(exist_ok=True)
    for folder in [native_dir, *(native_dir / sub for sub in subpackages())]:
        if not folder.is_dir():
            continue
        for old in folder.iterdir():
            if old.name == MANIFEST or (old.suffix in (".so", ".pyd") and _ours(native_dir, old)):
                old.unlink()
    size = 0
    for module, path in built.items():
        target = extension_path(native_dir, module)
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, target)
        size += path.stat().st_size
    manifest = {
        "python": sys.version.split()[0],
        "suffix": extension_suffix(),
        "sources": digests,
    }
    (native_dir / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return size


def _ours(native_dir: Path, path: Path) -> bool:
    """Whether ``path`` (an extension file in ``native_dir``) is one a build of this package
    places: the extension of a compiled module, or the group library."""
    module = ".".join((*path.relative_to(native_dir).parent.parts, path.name.split(".")[0]))
    return module in (*COMPILED_MODULES, GROUP_LIBRARY)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--if-needed"]):
        print(
            "usage: python -m kraftwire.spark_decoders.native.build [--if-needed]", file=sys.stderr
        )
        return 2
    if args and usable_build():
        print(f"compiled decoders in {NATIVE_DIR} are up to date", file=sys.stderr)
        return 0
    try:
        import mypyc  # noqa: F401  (the build runs it in a subprocess; say so here if it is absent)
    except ImportError as exc:
        print(
            f"native build: needs mypyc: pip install 'kraftwire[native]' ({exc})", file=sys.stderr
        )
        return 2
    try:
        done = build()
    except NativeBuildError as exc:
        print(f"native build: {exc}", file=sys.stderr)
        return 1
    print(
        f"compiled {len(done.modules)} decoder modules with mypyc into {NATIVE_DIR} in "
        f"{done.seconds:.0f}s ({done.extension_bytes / 1e6:.1f} MB of extension modules)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
