"""``--capture FILE.pcapng``: every frame the node sends and receives, written by
``kraftwire.synthetic_capture`` (a ``CaptureFile`` of TCP packets over IPv4 or IPv6 on Ethernet, one
``CapturedStream`` per connection), so a quorum can be captured without root. This module gives the
writer each connection's real addresses and ports."""

from __future__ import annotations

import asyncio


def addresses(writer: asyncio.StreamWriter) -> tuple[tuple[str, int], tuple[str, int]]:
    """(local, remote) (ip, port) of an asyncio stream writer, IPv4 or IPv6."""
    local = writer.get_extra_info("sockname")
    remote = writer.get_extra_info("peername")
    return (local[0], local[1]), (remote[0], remote[1])
