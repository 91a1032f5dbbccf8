"""Chooses the decoders' implementation: the compiled hot path (``make native``) or the pure modules.

The compiled build (``build``) puts one mypyc extension per hot module, plus the library they
share, into ``_native/`` beside the sources (a hot module of a subpackage into that subpackage's
folder there: ``_native/packets/``), with a manifest of the sources they were compiled from.
Nothing is renamed: the extension of ``kraftwire.spark_decoders.packets.layers`` is that module.
When the build is usable, the package puts ``_native/`` first on its ``__path__`` and each
``_native/<subpackage>/`` first on that subpackage's, so importing a hot module finds its extension
before its source; every other module stays pure and imports the same names either way. The build
is used only when it was made for this interpreter and from the sources as they are now: a module
edited since the build makes the whole package pure rather than running stale code.
``KRAFTWIRE_PURE=1`` in the environment forces pure, as for the codecs.

This module is never compiled itself: it runs before the choice is made.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import json
import os
from collections.abc import MutableSequence
from pathlib import Path

# The decoders' package (this module is in its ``native`` subpackage) and its source folder.
PACKAGE = __name__.rsplit(".", 2)[0]
SOURCE_ROOT = Path(__file__).resolve().parent.parent
FORCE_PURE_VARIABLE = "KRAFTWIRE_PURE"
NATIVE_DIR = SOURCE_ROOT / "_native"
MANIFEST = "BUILD.json"
# The library every compiled module of the build links to (mypyc's group): its module name.
GROUP = "hot_path"
GROUP_LIBRARY = f"{GROUP}__mypyc"
# The modules compiled, chosen by profile (``bench/decode.py --profile``): the per-packet path
# (capture records, link and IP layers, reassembly, the typed reads, framing, headers), the
# per-exchange path (matching, rows, body decoding, the JSON views) and the loop tying them
# together; for Spark, the shards' packet ownership, the byte-range splits and IP fragment
# reassembly. ``tables`` is compiled because its connections derive from ``connection.Connection``.
# ``guard`` stays pure: its CPU-time limit is a signal handler, which runs between interpreted
# bytecodes.
COMPILED_MODULES = (
    "decode.pipeline",
    "kafka.bodies",
    "kafka.connection",
    "kafka.exchanges",
    "kafka.framing",
    "kafka.headers",
    "kafka.jsonview",
    "kafka.rows",
    "output.tables",
    "packets.capture",
    "packets.fragments",
    "packets.layers",
    "packets.pcapng",
    "packets.reassembly",
    "packets.typed_reads",
    "spark.ownership",
    "spark.splits",
)


def forced_pure() -> bool:
    return os.environ.get(FORCE_PURE_VARIABLE, "") not in ("", "0")


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def extension_suffix() -> str:
    """The file ending this interpreter gives its extension modules (``.cpython-311-...so``)."""
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def source_path(module: str) -> Path:
    """The source of ``module`` (dotted, relative to the package: ``"packets.capture"``)."""
    return SOURCE_ROOT.joinpath(*module.split(".")).with_suffix(".py")


def extension_path(native_dir: Path, module: str) -> Path:
    """Where the build puts the extension of ``module``: its subpackage's folder in ``native_dir``."""
    *folders, name = module.split(".")
    return native_dir.joinpath(*folders, f"{name}{extension_suffix()}")


def subpackages() -> list[str]:
    """The subpackages holding compiled modules, each of which gets its own folder in the build."""
    return sorted({module.split(".")[0] for module in COMPILED_MODULES if "." in module})


def usable_build(native_dir: Path = NATIVE_DIR) -> bool:
    """Whether ``native_dir`` holds a complete build for this interpreter of the current sources."""
    try:
        manifest = json.loads((native_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("suffix") != extension_suffix():
        return False
    sources = manifest.get("sources")
    if not isinstance(sources, dict) or sorted(sources) != sorted(COMPILED_MODULES):
        return False
    for module in COMPILED_MODULES:
        if not extension_path(native_dir, module).is_file():
            return False
        if sources[module] != source_digest(source_path(module)):
            return False  # edited since the build: its extension would run the old code
    return (native_dir / f"{GROUP_LIBRARY}{extension_suffix()}").is_file()


def choose(package_path: MutableSequence[str]) -> str:
    """``"native"`` after putting the compiled build first on ``package_path`` (the package's
    ``__path__``) and on each subpackage's, or ``"pure"`` when it is forced, absent, stale, or
    does not load. The subpackages are imported here for their ``__path__``: their ``__init__``
    modules import nothing, so no decoder module is imported before the choice is made."""
    if forced_pure() or not usable_build():
        return "pure"
    paths: list[tuple[MutableSequence[str], str]] = [(package_path, str(NATIVE_DIR))]
    for sub in subpackages():
        module = importlib.import_module(f"{PACKAGE}.{sub}")
        paths.append((module.__path__, str(NATIVE_DIR / sub)))
    for path, folder in paths:
        path.insert(0, folder)
    try:
        importlib.import_module(f"{PACKAGE}.{GROUP_LIBRARY}")
    except ImportError:  # e.g. built against another mypyc runtime: the pure modules still work
        for path, folder in paths:
            path.remove(folder)
        return "pure"
    return "native"
