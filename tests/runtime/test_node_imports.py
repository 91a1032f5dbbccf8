"""A node's process imports only what it runs: the C CRC-32C without its package's command line and
metadata machinery, no JSON or text view of record batches (the decoders' and dump-log's), and no
compression library until a compressed batch arrives (bench/raft.py's memory goal: a node at most a
quarter of a Kafka controller's resident memory).
"""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
from kraftwire.node.runtime import KRaftNode, load_config
views = sorted(m for m in ("kraftwire.generated._records_json", "kraftwire.generated._v2_text")
               if m in sys.modules)
from kraftwire.records import crc32c_backend
before = sorted(m for m in ("importlib.metadata", "email", "zipfile", "argparse", "cramjam", "crc32c")
                if m in sys.modules)
from kraftwire.records import decode_batches, encode_batch
data = encode_batch([(b"k", b"v" * 100, None, 5)], compression="zstd")
value = decode_batches(data)[0][0].records[0].value
print(json.dumps({"before": before, "views": views, "backend": crc32c_backend, "after": "cramjam" in sys.modules,
                  "zstd": value == b"v" * 100}))
"""


def test_node_imports_no_package_metadata_and_no_compression_library_until_needed():
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    found = json.loads(out.stdout)
    assert found["before"] == [], f"a node imported {found['before']} it does not run"
    assert found["views"] == [], f"a node imported the batch views {found['views']} it never uses"
    assert found["backend"] == "crc32c", "the C CRC-32C must still be the one used"
    assert found["after"] and found["zstd"], "cramjam loads on the first zstd batch and works"
