"""What log recovery cuts is kept, not deleted: moved into a side file next to its segment.

Kafka's recovery truncates a segment at its first invalid batch and deletes the later segments; the
bytes are gone. Here they are kept for an operator to look at or to salvage records from: the cut
tail of a segment is written to ``<segment>.log.corrupt-<ms since the epoch>`` (fsynced
before the segment is cut), and a later segment is renamed to that pattern whole. No name of that
form is a segment to Kafka or to the node, so neither ever reads it back as log.

``count_batches`` walks the kept bytes by the v2 batch headers to say what was lost: whole batches,
their records (the header's record count) and the offsets they held. The count stops at the first
header whose length does not fit; the bytes after it are reported as such.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from .files import FileOps

SIDE_FILE_RE = re.compile(r"^(\d{20})\.log\.corrupt-(\d+)$")
_HEADER = 61  # the v2 batch header; its length field counts from byte 12
_LENGTH, _LAST_DELTA, _RECORDS = 8, 23, 57


@dataclass(frozen=True)
class CutData:
    """The bytes one side file keeps and what they held."""

    side_file: str  # the file's name, in the partition directory
    size: int
    batches: int  # whole batches
    records: int
    first_offset: int | None
    last_offset: int | None
    rest: int  # bytes after the last whole batch (a torn or corrupt header)

    def summary(self) -> str:
        offsets = f" (offsets {self.first_offset}..{self.last_offset})" if self.batches else ""
        rest = f" and {self.rest} bytes of no whole batch" if self.rest else ""
        return (
            f"{self.batches} batches, {self.records} records{offsets}{rest}: "
            f"{self.size} bytes kept in {self.side_file}"
        )

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.side_file,
            "bytes": self.size,
            "batches": self.batches,
            "records": self.records,
            "firstOffset": self.first_offset,
            "lastOffset": self.last_offset,
        }


def count_batches(data: bytes, side_file: str = "") -> CutData:
    pos = batches = records = 0
    first = last = None
    while len(data) - pos >= _HEADER:
        length = int.from_bytes(data[pos + _LENGTH : pos + _LENGTH + 4], "big", signed=True)
        size = 12 + length
        if length < _HEADER - 12 or pos + size > len(data):
            break
        base = int.from_bytes(data[pos : pos + 8], "big", signed=True)
        delta = int.from_bytes(data[pos + _LAST_DELTA : pos + _LAST_DELTA + 4], "big", signed=True)
        count = int.from_bytes(data[pos + _RECORDS : pos + _RECORDS + 4], "big", signed=True)
        first = base if first is None else first
        last = base + max(delta, 0)
        batches += 1
        records += max(count, 0)
        pos += size
    return CutData(side_file, len(data), batches, records, first, last, len(data) - pos)


def keep_tail(ops: FileOps, segment_path: str, data: bytes, pos: int) -> CutData:
    """Write ``data[pos:]`` (the segment's tail about to be cut) to a new side file, durably."""
    path = _side_path(segment_path)
    handle = ops.open_append(path)
    try:
        ops.write(handle, data[pos:])
        ops.fsync(handle)
    finally:
        handle.close()
    ops.fsync_dir(os.path.dirname(path))
    return count_batches(data[pos:], os.path.basename(path))


def keep_segment(ops: FileOps, segment_path: str) -> CutData:
    """Rename a whole segment the cut leaves behind to a side file."""
    path = _side_path(segment_path)
    ops.rename(segment_path, path)
    ops.fsync_dir(os.path.dirname(path))
    with open(path, "rb") as f:
        return count_batches(f.read(), os.path.basename(path))


def kept_cuts(directory: str) -> list[CutData]:
    """Every side file in ``directory`` (from this start or an earlier one), oldest first."""
    stamped = []
    for name in os.listdir(directory):
        match = SIDE_FILE_RE.match(name)
        if match:
            stamped.append((int(match[2]), name))
    cuts = []
    for _, name in sorted(stamped):
        with open(os.path.join(directory, name), "rb") as f:
            cuts.append(count_batches(f.read(), name))
    return cuts


def _side_path(segment_path: str) -> str:
    stamp = int(time.time() * 1000)
    while os.path.exists(f"{segment_path}.corrupt-{stamp}"):  # never over an earlier one
        stamp += 1
    return f"{segment_path}.corrupt-{stamp}"
