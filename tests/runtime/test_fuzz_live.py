"""The live-node wire fuzzer's short seeded runs (``fuzz_live.py`` has the 1M-frame command): mutated
frames of every served API at a running 3-node quorum; afterwards every node is alive, the quorum
commits and every acknowledged record is on every node."""

from __future__ import annotations

import pytest

from fuzz_live import run_live_fuzz

pytestmark = pytest.mark.timeout(600)


def test_mutated_frames_naming_a_wrong_cluster_id(tmp_path):
    summary = run_live_fuzz(
        str(tmp_path / "cluster"), 2000, seed=26, rounds=4, knows_cluster_id=False
    )
    assert summary["frames"] == 2000 and summary["acknowledged"] == 4


def test_mutated_frames_knowing_the_cluster_id(tmp_path):
    summary = run_live_fuzz(str(tmp_path / "cluster"), 2000, seed=26, rounds=4)
    assert summary["frames"] == 2000 and summary["acknowledged"] == 4
