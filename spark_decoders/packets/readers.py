"""A capture's packet reader, whichever its format. ``PcapReader`` and ``PcapngReader`` offer the
same ``packets(start, stop, chunk_bytes)`` (``capture.PacketView`` tuples read from a window of
the file) and ``records(...)`` (numbered ``capture.Packet`` tuples), so the loops over them (the
local decode's ``pipeline.feed_file_in_steps``, Spark's ``splits``) do not ask which."""

from __future__ import annotations

from .capture import CaptureBuffer, CaptureStats, PcapFile, PcapReader, capture_format
from .pcapng import PcapngReader

CaptureReader = PcapReader | PcapngReader


def open_reader(buf: CaptureBuffer, stats: CaptureStats) -> tuple[CaptureReader, int]:
    """A packet reader for the capture in ``buf`` (pcap or pcapng) and the offset of its first
    record; CaptureError if it is neither."""
    if capture_format(buf) == "pcapng":
        return PcapngReader(buf, stats), 0
    return PcapReader(buf, PcapFile.parse(buf), stats), 24
