"""The fuzzer in CI: every kept finding replays cleanly, and a short seeded run finds nothing.

Both run the fuzzer in a subprocess (tests/fuzz/fuzzer.py): it installs a CPU-time signal and wraps
the decompressors to count their output, neither of which belongs in the test process. The long
run is documented in fuzzer.py and the README.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FUZZER = HERE / "fuzzer.py"
CORPUS = HERE / "corpus.jsonl"
ENTRIES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
SHORT_RUN_INPUTS = 120_000  # about 15 s of CPU
OPEN_HANG = (
    "tagged-field size of 2^31 or more read as negative (issue #12 item 1), fixed on h-codec"
)


def _fuzzer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(FUZZER), *args], capture_output=True, text=True, timeout=1200
    )


@pytest.fixture(scope="module")
def replayed() -> dict[int, dict]:
    done = _fuzzer("--replay", str(CORPUS))
    assert done.stdout, done.stderr
    return {result["line"]: result for result in json.loads(done.stdout)}


def _entry_id(entry: dict) -> str:
    return f"{entry['kind']}-{entry['target']}"


@pytest.mark.parametrize(
    "line, entry",
    [
        pytest.param(
            number,
            entry,
            id=_entry_id(entry),
            marks=[pytest.mark.xfail(reason=entry["open"], strict=True)] if "open" in entry else [],
        )
        for number, entry in enumerate(ENTRIES, 1)
    ],
)
def test_kept_finding_is_handled(replayed, line, entry):
    result = replayed[line]
    if result.get("skipped"):
        pytest.skip(f"{entry['target']} needs ../shared")
    assert result["finding"] is None, f"{entry['detail']}: {result['finding']}"


def test_corpus_entries_are_well_formed():
    for entry in ENTRIES:
        assert entry["kind"] in ("escape", "hang", "allocation")
        assert ("hex" in entry) != ("json" in entry) and entry["detail"]


def test_short_seeded_run_finds_nothing():
    done = _fuzzer("--inputs", str(SHORT_RUN_INPUTS), "--seed", "7")
    summary = json.loads(done.stdout)
    assert summary["inputs"] == SHORT_RUN_INPUTS
    assert summary["findings"] == [], json.dumps(summary["findings"], indent=1)
