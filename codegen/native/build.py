"""Compile the typed modules of a generated package with mypyc and place the extension modules in it.

Sources are written to a temporary folder laid out as the package's import path (mypyc names modules
by their folders), compiled there by ``setup.py build_ext --inplace`` with ``mypycify(separate=True)``
(one extension per spec, so a spec's module builds on its own and the C compiler runs in parallel),
and only the resulting ``_native_*`` extension files are copied into the package. The temporary
folder is always removed; nothing else in the package is touched.

The runtime modules of ``COMPILED_RUNTIME`` are compiled in the same build, each from the package's
own copy into ``_native_<module>`` (the runtime's other modules are copied beside it, read only for
their types); the runtime chooses them as it chooses the codecs (``_view_reader``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..model import MessageSpec
from ..output import is_native_extension
from .emit import native_module_name, render_native_module
from .lines import Unsupported

_SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify

setup(
    name="kraftwire-native",
    ext_modules=mypycify(sys.argv[1:], separate=True, opt_level="3"),
    script_args=["-q", "build_ext", "--inplace", "--parallel", "{jobs}"],
)
"""


# The runtime modules worth compiling: the records' JSON view (``batches_to_json``), which the Spark
# decoders run for every records field: its batch reader (about 40% less CPU compiled on the decode
# bench's fields), the view glue itself and the metadata-log value views it calls for every value
# of ``__cluster_metadata`` traffic; and the text of that view written straight from the bytes
# (``_v2_text``), which compiled codecs' JSON text writers call. ``_view_reader`` and ``records``
# choose them.
COMPILED_RUNTIME = ("_v2_view", "_logrecords", "_records_json", "_v2_text")


class NativeBuildError(Exception):
    """mypyc or the C compiler failed; the message names the log with the details."""


@dataclass(frozen=True)
class NativeBuild:
    compiled: list[str]  # spec modules now with a compiled codec
    skipped: list[str]  # "<spec>: reason" for specs whose module stays pure
    seconds: float
    extension_bytes: int  # total size of the extension files placed into the package


def emit_sources(
    specs: list[MessageSpec], package: str, out_dir: Path
) -> tuple[dict[str, str], list[str]]:
    """The native source per spec module (``{module: source}``) and the specs left pure.

    Each source records the SHA-256 of the pure module it was made for; the loader refuses a
    compiled module whose pure module changed since.
    """
    sources: dict[str, str] = {}
    skipped: list[str] = []
    for spec in specs:
        if spec.is_placeholder:
            continue
        pure = out_dir / f"{spec.module}.py"
        try:
            text = render_native_module(spec, package)
        except Unsupported as exc:
            skipped.append(f"{spec.stem}: {exc}")
            continue
        digest = hashlib.sha256(pure.read_bytes()).hexdigest()
        sources[spec.module] = text + f'\nPURE_SOURCE_SHA256: str = "{digest}"\n'
    return sources, skipped


def build_native(
    specs: list[MessageSpec], package: str, out_dir: Path, jobs: int | None = None
) -> NativeBuild:
    """Emit, compile and place the compiled codecs of ``specs`` into the package at ``out_dir``."""
    started = time.perf_counter()
    sources, skipped = emit_sources(specs, package, out_dir)
    runtime = runtime_sources(out_dir)
    with tempfile.TemporaryDirectory(prefix="kraftwire-native-") as temp:
        root = Path(temp)
        package_dir = root.joinpath(*package.split("."))
        package_dir.mkdir(parents=True)
        for level in [package_dir, *package_dir.relative_to(root).parents]:
            if level != Path("."):
                (root / level / "__init__.py").touch()
        for path in out_dir.glob("_*.py"):  # the runtime, for the types of what it imports
            if path.name != "__init__.py":
                shutil.copyfile(path, package_dir / path.name)
        paths = []
        for module, text in {**sources, **runtime}.items():
            path = package_dir / f"{native_module_name_of(module)}.py"
            path.write_text(text, encoding="utf-8")
            paths.append(str(path.relative_to(root)))
        _compile(root, paths, jobs or os.cpu_count() or 1)
        built = sorted(p for p in package_dir.iterdir() if is_native_extension(p.name))
        size = 0
        for path in built:
            _place(path, out_dir / path.name)
            size += path.stat().st_size
    return NativeBuild(sorted(sources), skipped, time.perf_counter() - started, size)


def _place(built: Path, target: Path) -> None:
    """Copy ``built`` to ``target`` through a new file renamed over it: a process that has the old
    extension loaded (the runtime imports a stale build to read its source digest) keeps its
    mapping of the old file instead of crashing on the rewritten one."""
    partial = target.with_name(f".{target.name}.partial")
    try:
        shutil.copyfile(built, partial)
        os.replace(partial, target)
    except BaseException:  # a full disk, an interrupt: no half-written file is left behind
        partial.unlink(missing_ok=True)
        raise


def runtime_sources(out_dir: Path) -> dict[str, str]:
    """The source of each ``COMPILED_RUNTIME`` module of the package at ``out_dir``, with the SHA-256
    of the file it was made from (``_view_reader`` uses the build only while the two agree)."""
    sources = {}
    for module in COMPILED_RUNTIME:
        pure = (out_dir / f"{module}.py").read_bytes()
        digest = hashlib.sha256(pure).hexdigest()
        sources[module] = pure.decode("utf-8") + f'\nPURE_SOURCE_SHA256 = "{digest}"\n'
    return sources


def native_module_name_of(module: str) -> str:
    return f"_native_{module}"


def _compile(root: Path, paths: list[str], jobs: int) -> None:
    if paths:
        run_build_script(root, _SETUP.format(jobs=jobs), paths)


def run_build_script(root: Path, script: str, args: list[str]) -> None:
    """Run a setuptools/mypyc ``script`` with ``args`` in ``root``; on failure keep its log in a new
    temporary file and raise NativeBuildError naming the first error line (or the last line)."""
    log = root / "build.log"
    with log.open("w") as stream:
        result = subprocess.run(
            [sys.executable, "-c", script, *args],
            cwd=root,
            stdout=stream,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if result.returncode != 0:
        handle, kept = tempfile.mkstemp(prefix="kraftwire-native-build-", suffix=".log")
        os.close(handle)
        shutil.copyfile(log, kept)
        lines = log.read_text(errors="replace").strip().splitlines()
        errors = [line for line in lines if ": error:" in line] or lines[-1:] or ["(no output)"]
        raise NativeBuildError(f"mypyc build failed ({errors[0][:200]}); full log: {kept}")


__all__ = [
    "COMPILED_RUNTIME",
    "NativeBuild",
    "NativeBuildError",
    "build_native",
    "emit_sources",
    "native_module_name",
    "run_build_script",
    "runtime_sources",
]
