"""Same seed, same run: byte-identical traces, in this process and in others (any PYTHONHASHSEED)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from kraftwire.node.simulation import run_one

CASE = ("chaos", 3, 3)


def _digest(trace: str) -> str:
    return hashlib.sha256(trace.encode()).hexdigest()


def test_same_seed_gives_the_same_trace() -> None:
    a = run_one(*CASE, trace_limit=None, keep_trace=True)
    b = run_one(*CASE, trace_limit=None, keep_trace=True)
    assert a.trace and a.trace == b.trace
    assert (a.core_events, a.virtual_ms, a.frames) == (b.core_events, b.virtual_ms, b.frames)
    assert len(a.trace.splitlines()) > 1000


def test_other_seed_gives_another_trace() -> None:
    a = run_one("steady", 3, 0, trace_limit=None, keep_trace=True)
    b = run_one("steady", 3, 1, trace_limit=None, keep_trace=True)
    assert a.trace != b.trace


def test_trace_is_identical_in_fresh_processes() -> None:
    here = _digest(run_one(*CASE, trace_limit=None, keep_trace=True).trace)
    code = (
        "import hashlib, sys; from kraftwire.node.simulation import run_one; "
        f"r = run_one(*{CASE!r}, trace_limit=None, keep_trace=True); "
        "print(hashlib.sha256(r.trace.encode()).hexdigest())"
    )
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == here, f"PYTHONHASHSEED={hash_seed}: {out.stderr[-2000:]}"


def test_wire_round_trip_does_not_change_behaviour() -> None:
    """Through the codecs or handing objects over: the same run (the codecs lose nothing the core uses)."""
    encoded = run_one("message_loss", 3, 2, encode=True, trace_limit=None, keep_trace=True)
    direct = run_one("message_loss", 3, 2, encode=False, trace_limit=None, keep_trace=True)
    assert encoded.frames > 0 and direct.frames == 0
    assert encoded.trace == direct.trace
