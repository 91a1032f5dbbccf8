"""Packages generated from Kafka's upstream specs, shared by the tests that need them.

Generating all 292 specs takes a while, so the result is cached under the system temp directory,
keyed by a hash of the generator's own sources and the specs: any change to either regenerates.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
import sys
import tempfile
from pathlib import Path

from kraftwire.codegen.generate import generate

CODEGEN = Path(__file__).resolve().parents[1] / "codegen"


def _fingerprint(spec_dirs: list[Path]) -> str:
    digest = hashlib.sha256()
    for root in [CODEGEN, *spec_dirs]:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def generated_package(spec_dirs: list[Path], name: str):
    """Import (generating first when not cached) a package generated from ``spec_dirs``."""
    cache = Path(tempfile.gettempdir()) / f"kraftwire-test-{name}-{_fingerprint(spec_dirs)}"
    if not (cache / name / "__init__.py").exists():
        # Parallel test workers may generate at once: the cache appears whole by one rename, and a
        # worker that loses the race drops its own copy.
        staging = Path(tempfile.mkdtemp(prefix=f"kraftwire-{name}-"))
        generate(spec_dirs, staging / name, name)
        try:
            staging.rename(cache)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    if str(cache) not in sys.path:
        sys.path.insert(0, str(cache))
    return importlib.import_module(name)
