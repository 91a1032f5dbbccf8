"""A small spec set for the command-line tests: generating all of schemas/ takes seconds per run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SMALL_SET = ("VoteRequest", "VoteResponse", "RequestHeader", "ResponseHeader")


@pytest.fixture
def small_specs(tmp_path: Path) -> Path:
    """Four of our KRaft specs plus a removed API (a ``validVersions: none`` placeholder pair)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in SMALL_SET:
        shutil.copy(REPO / "schemas" / f"{name}.json", specs)
    for kind in ("request", "response"):
        placeholder = {
            "apiKey": 7,
            "type": kind,
            "name": f"ControlledShutdown{kind.title()}",
            "validVersions": "none",
        }
        (specs / f"ControlledShutdown{kind.title()}.json").write_text(json.dumps(placeholder))
    return specs
