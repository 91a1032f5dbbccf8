"""Read a node's committed log back with ``kraftwire dump-log --json`` (a separate process, as an
operator would)."""

from __future__ import annotations

import base64
import glob
import json
import os
import subprocess
import sys


def dump_log(partition_dir: str) -> list[dict]:
    segments = sorted(glob.glob(os.path.join(partition_dir, "*.log")))
    out = subprocess.run(
        [sys.executable, "-m", "kraftwire", "dump-log", "--json", *segments],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout)


def data_records(partition_dir: str) -> list[tuple[int, int, bytes]]:
    """(offset, batch epoch, value) of every data record in the node's segments, in log order."""
    found = []
    for dump in dump_log(partition_dir):
        for batch in dump["batches"]:
            if batch["isControl"]:
                continue
            for record in batch["records"]:
                value = record["value"]
                raw = (
                    value["text"].encode() if "text" in value else base64.b64decode(value["base64"])
                )
                found.append((record["offset"], batch["partitionLeaderEpoch"], raw))
    return found
