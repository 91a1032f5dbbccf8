"""CRC-32C (Castagnoli), the checksum of record batch v2.

The work is done by a C implementation when one is installed (the ``crc32c`` package, or Google's
``google-crc32c``); otherwise a table-driven pure-Python version is used, which gives the same results
but is slow for large batches. ``crc32c(data)`` returns the checksum as an unsigned 32-bit int.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
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


_CHECK = (b"123456789", 0xE3069283)  # CRC-32C's published check value


def _icrar_extension() -> ModuleType | None:
    """The ICRAR ``crc32c`` package's C extension module, loaded on its own.

    The package's ``__init__`` imports ``importlib.metadata`` (for its version string) and its command
    line (argparse), which pull in email, csv, zipfile and more: about 5 MiB of memory in every
    process that checks a batch, for one C function. The extension is loaded from the package's
    folder without running that ``__init__``; if the layout is not the one expected (another
    version), or the loaded function fails the check value, the package is imported as usual."""
    try:
        spec = importlib.util.find_spec("crc32c")
        folders = spec.submodule_search_locations if spec is not None else None
        if not folders:
            return None
        finder = importlib.machinery.FileFinder(
            folders[0],
            (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
        )
        found = finder.find_spec("crc32c._crc32c")
        if found is None or found.loader is None:
            return None
        module = importlib.util.module_from_spec(found)
        found.loader.exec_module(module)  # multi-phase init: its functions exist only after this
        if module.crc32c(_CHECK[0]) != _CHECK[1]:
            return None
        return module
    except Exception:  # any surprise: the ordinary import below decides
        return None


# The ICRAR "crc32c" package (C, uses SSE4.2/ARMv8 CRC) and Google's C binding, when installed.
_ICRAR = _icrar_extension() or _optional_module("crc32c")
_GOOGLE = None if _ICRAR is not None else _optional_module("google_crc32c")


def _pick() -> tuple[Callable[..., int], str]:  # (data, value=0) -> checksum
    if _ICRAR is not None:
        return _ICRAR.crc32c, "crc32c"
    google = _GOOGLE
    if google is not None and getattr(google, "implementation", None) == "c":
        return (lambda data, value=0: google.extend(value, bytes(data))), "google-crc32c"
    return crc32c_python, "python"


crc32c, crc32c_backend = _pick()
