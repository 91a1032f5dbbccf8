"""CRC-32C (Castagnoli), the checksum of record batch v2.

The work is done by a C implementation when one is installed (the ``crc32c`` package, or Google's
``google-crc32c``); otherwise a table-driven pure-Python version is used, which gives the same results
but is slow for large batches. ``crc32c(data)`` returns the checksum as an unsigned 32-bit int.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

__all__ = ["crc32c", "crc32c_backend"]

_POLY = 0x82F63B78  # Castagnoli polynomial, bit-reversed
_TABLE: list[int] = []


def _build_table() -> list[int]:
    table = []
    for byte in range(256):
        value = byte
        for _ in range(8):
            value = (value >> 1) ^ _POLY if value & 1 else value >> 1
        table.append(value)
    return table


def crc32c_python(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """Pure-Python CRC-32C of ``data`` continuing from ``value`` (0 to start)."""
    if not _TABLE:
        _TABLE.extend(_build_table())
    table = _TABLE
    crc = value ^ 0xFFFFFFFF
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _optional_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# The ICRAR "crc32c" package (C, uses SSE4.2/ARMv8 CRC) and Google's C binding, when installed.
_ICRAR = _optional_module("crc32c")
_GOOGLE = _optional_module("google_crc32c")


def _pick() -> tuple[Callable[..., int], str]:  # (data, value=0) -> checksum
    if _ICRAR is not None:
        return _ICRAR.crc32c, "crc32c"
    google = _GOOGLE
    if google is not None and getattr(google, "implementation", None) == "c":
        return (lambda data, value=0: google.extend(value, bytes(data))), "google-crc32c"
    return crc32c_python, "python"


crc32c, crc32c_backend = _pick()
