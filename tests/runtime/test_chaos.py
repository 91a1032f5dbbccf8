"""Chaos on real processes for 60 s (the 10-minute run: `tests/runtime/chaos.py --seconds 600`)."""

import pytest

from chaos import run_chaos

pytestmark = pytest.mark.timeout(300)


def test_chaos_kill_nine_with_acks_all_producers(tmp_path):
    run_chaos(str(tmp_path / "chaos"), seconds=60, seed=7)
