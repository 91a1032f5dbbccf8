"""Unsigned varints written by hand for tests, independently of the runtime's own writer."""

from __future__ import annotations


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
