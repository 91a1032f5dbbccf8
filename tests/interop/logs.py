"""Every batch of a node's ``__cluster_metadata-0`` segments as (base offset, last offset, leader epoch,
CRC), read with kraftwire's own record-batch reader, so logs written by either kind compare as data.
"""

from __future__ import annotations

from pathlib import Path

from kraftwire.records import decode_batches

Batch = tuple[int, int, int, int]


def log_batches(partition_dir: Path) -> list[Batch]:
    batches: list[Batch] = []
    for segment in sorted(partition_dir.glob("*.log")):
        found, _partial_tail = decode_batches(segment.read_bytes())
        batches.extend(
            (b.base_offset, b.base_offset + b.last_offset_delta, b.partition_leader_epoch, b.crc)
            for b in found
        )
    return batches


def assert_prefixes_of_one_log(logs: dict[int, list[Batch]], at_least: int) -> int:
    """Every node's log is a prefix of the longest (same offsets, epochs and CRCs), and the shortest
    reaches ``at_least`` (an offset known committed); how many batches all of them share."""
    longest = max(logs.values(), key=len)
    for node, batches in logs.items():
        assert batches == longest[: len(batches)], f"node {node} diverges from the longest log"
    shortest = min(logs.values(), key=len)
    assert (
        shortest and shortest[-1][1] + 1 >= at_least
    ), f"a log ends at {shortest[-1][1] if shortest else None}, below the committed {at_least}"
    return len(shortest)
