"""settle_gc: what start-up made is frozen out of the collector's sight and young collections run
every 20,000 net allocations instead of 700; ``kraftwire node start`` calls it once started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kraftwire.node.runtime import cli_node

_PROBE = """
import gc
from kraftwire.node.runtime import settle_gc
from kraftwire.node.runtime.gc_settings import YOUNG_THRESHOLD
before = gc.get_threshold()
settle_gc()
after = gc.get_threshold()
assert after == (YOUNG_THRESHOLD, before[1], before[2]), (before, after)
assert gc.get_freeze_count() > 1000, gc.get_freeze_count()
cycle = []
cycle.append(cycle)
del cycle
assert gc.collect() >= 1  # cycles are still collected
"""


def test_settle_gc_freezes_start_up_and_raises_the_young_threshold():
    subprocess.run([sys.executable, "-c", _PROBE], check=True, timeout=60)


def test_the_node_command_settles_the_collector_once_started():
    source = Path(cli_node.__file__).read_text()
    assert "await node.start()\n    settle_gc()" in source
