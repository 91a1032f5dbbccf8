"""The garbage collector's settings for a process that runs a node.

CPython collects its youngest generation every 700 net allocations of container objects, and every
collection of the oldest one walks every live container: the modules, the configuration, the log
read at start-up and the futures of the appends in flight. On a leader appending 5,000 records/s
(bench/raft.py's workload) that came to 0.7 s of a 10 s window: 38 young collections a second and a
full one every few seconds, each stalling every append behind it. :func:`settle_gc`, called once the node has started,
collects once, moves what start-up made out of the collector's sight (``gc.freeze``) and raises the
young threshold to 20,000, so the collector still reclaims reference cycles (asyncio's futures and
exceptions make them) but runs a few times a second at most. A process setting: the ``kraftwire
node start`` command calls it; an application embedding :class:`KRaftNode` may call it too.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000  # net container allocations between young collections (CPython: 700)


def settle_gc() -> None:
    """Collect, freeze the survivors and raise the young generation's threshold (see above)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
