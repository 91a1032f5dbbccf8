"""The one way tests reach ../shared (Kafka's specs, vectors, captures and docs).

A user's fresh clone has no ../shared beside it; CI has. Tests that need it skip with a clear message.
Set KRAFTWIRE_SHARED to point elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_ROOT = Path(os.environ.get("KRAFTWIRE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def shared_available() -> bool:
    return (SHARED_ROOT / "kafka-schemas").is_dir()


def shared_path(*parts: str) -> Path:
    """Path inside ../shared, or skip the calling test when ../shared (or that part of it) is absent."""
    path = SHARED_ROOT.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"{path} is not present: ../shared is not beside this clone "
            "(CI has it; a fresh clone does not), so this test cannot run here"
        )
    return path
