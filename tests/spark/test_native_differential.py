"""The compiled decoders (``make native``) give the pure decoders' rows, on hostile input too.

One child process decodes the corpus (``differential_corpus``) with the pure package
(``KRAFTWIRE_PURE=1``), another with the compiled one, into all three tables; rows and capture stats
must be equal, file by file. Skipped when no usable compiled build is present.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from differential_corpus import write_corpus
from kraftwire.spark_decoders.native.implementation import (
    FORCE_PURE_VARIABLE,
    forced_pure,
    usable_build,
)

HERE = Path(__file__).resolve().parent
SHARED_CAPTURES = ("arkime-kafka.pcap", "go-sniffer-kafka.pcap", "ndpi-kafka.pcapng")

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        not usable_build() or forced_pure(),
        reason="no compiled decoders to compare (make native; KRAFTWIRE_PURE unset)",
    ),
]


def _decode(paths: list[Path], pure: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != FORCE_PURE_VARIABLE}
    if pure:
        env[FORCE_PURE_VARIABLE] = "1"
    done = subprocess.run(
        [sys.executable, str(HERE / "decode_to_json.py"), *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        timeout=500,
        check=True,
    )
    return json.loads(done.stdout)


def test_compiled_rows_equal_pure_rows(tmp_path):
    from shared import shared_path

    shared = [shared_path("captures") / name for name in SHARED_CAPTURES]
    paths = write_corpus(tmp_path, shared)
    pure, native = _decode(paths, pure=True), _decode(paths, pure=False)
    assert (pure["implementation"], native["implementation"]) == ("pure", "native")
    assert len(pure["files"]) == len(paths) >= 60
    statuses: list[str] = []
    for path in map(str, paths):
        for part in ("exchanges", "frames", "connections", "stats"):
            assert native["files"][path][part] == pure["files"][path][part], (path, part)
        statuses += [row["status"] for row in pure["files"][path]["exchanges"]]
    # The corpus reaches the decoders' every outcome, not only the happy path.
    assert statuses.count("ok") > 250
    assert {"no_response", "no_request", "gap", "truncated", "decode_error"} <= set(statuses)
