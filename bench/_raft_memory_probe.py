"""A bench/_raft_kraftwire_server.py node that reports where its memory goes, for bench/raft_memory.py.

    python bench/_raft_memory_probe.py --report PATH [--trace] -- <bench/_raft_kraftwire_server.py args>

It runs the server's ``main`` unchanged and, on SIGUSR1, writes one JSON object to PATH (replacing
it): VmRSS, the number of modules loaded, the log it holds (batches, records, their encoded bytes
and the bytes of every object reachable from the log, see :func:`reachable_bytes`) and, with
``--trace`` (tracemalloc from the first line, which itself costs memory and time), the 15 source
lines and files holding the most allocated memory.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import tracemalloc
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _raft_procs import rss_mb  # noqa: E402

_SKIPPED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def reachable_bytes(root: object) -> int:
    """``sys.getsizeof`` summed over every object reachable from ``root`` once each (classes,
    modules and functions excluded: they are shared code, not data the object holds)."""
    seen: set[int] = set()
    stack: list[Any] = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SKIPPED):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def log_figures(log: Any) -> dict[str, float]:
    batches = log.batches()
    return {
        "batches": len(batches),
        "records": sum(b.next_offset - b.base_offset for b in batches),
        "encoded_mib": sum(b.size_in_bytes() for b in batches) / 2**20,
        "reachable_mib": reachable_bytes(log) / 2**20,
    }


def top(snapshot: tracemalloc.Snapshot, key: str) -> list[str]:
    return [
        f"{stat.size / 2**20:7.2f} MiB {stat.count:8d} blocks {stat.traceback[0]}"
        for stat in snapshot.statistics(key)[:15]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", required=True)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("server_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.trace:
        tracemalloc.start()
    from kraftwire.node.runtime import KRaftNode

    import _raft_kraftwire_server as server

    nodes: list[KRaftNode] = []
    start = KRaftNode.start

    async def remembered_start(self: KRaftNode) -> None:
        nodes.append(self)
        await start(self)

    KRaftNode.start = remembered_start  # type: ignore[method-assign]

    def report(_signum: int, _frame: Any) -> None:
        found: dict[str, Any] = {"rss_mib": rss_mb(os.getpid()), "modules": len(sys.modules)}
        if nodes and nodes[0].storage is not None:
            found["log"] = log_figures(nodes[0].storage.log)
        if args.trace:
            snapshot = tracemalloc.take_snapshot()
            found["traced_mib"] = tracemalloc.get_traced_memory()[0] / 2**20
            found["by_file"] = top(snapshot, "filename")
            found["by_line"] = top(snapshot, "lineno")
        Path(args.report + ".tmp").write_text(json.dumps(found))
        os.replace(args.report + ".tmp", args.report)

    signal.signal(signal.SIGUSR1, report)
    sys.argv = [server.__file__, *[a for a in args.server_args if a != "--"]]
    server.main()


if __name__ == "__main__":
    main()
