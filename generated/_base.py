"""Bases of the generated classes (version dispatch, the public codec methods, keyed arrays) and
:func:`generated_package`, through which the runtime reaches the package it was copied into."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar, Self, TypeVar

from . import _json
from ._failures import decode_failure, encode_failure
from ._runtime import DecodeError, UnsupportedVersionError

_T = TypeVar("_T", bound="Struct")

# A reader or writer of one wire layout; each is annotated with its own struct in its module.
Reader = Callable[[bytes, int], tuple[Any, int]]
Writer = Callable[[Any, bytearray], None]


class _Default:
    """Marks an argument left out, where the default is a fresh list or struct."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


# Typed Any so that it can stand as the default of a parameter of any list or struct type, where the
# constructor replaces it with a fresh value; the signature keeps the parameter's real type.
DEFAULT: Any = _Default()

# Readers create objects without running __init__ and fill every slot themselves. Typed Any on purpose:
# the object is incomplete until its reader has filled the last slot; what the reader hands back is
# checked against the reader's return annotation.
new_unfilled: Callable[[type[object]], Any] = object.__new__


def generated_package(package: ModuleType | None = None) -> ModuleType:
    """The generated package to take message classes from: ``package`` or the one this file is in.

    The package's ``__init__`` imports the runtime, so the runtime looks the package up when it is
    called instead of importing it.
    """
    if package is not None:
        return package
    if not _OWN_PACKAGE:  # looked up once: framing asks for every frame it encodes or decodes
        _OWN_PACKAGE.append(importlib.import_module(__name__.rpartition(".")[0]))
    return _OWN_PACKAGE[0]


_OWN_PACKAGE: list[ModuleType] = []


class MapKeyList(list[_T]):
    """An array whose element struct has mapKey fields: ordered, duplicates kept, keyed lookup."""

    __slots__ = ()

    def find(self, *key: object) -> _T | None:
        """The first element whose mapKey fields (in declaration order) equal ``key``, or None."""
        for item in self:
            if item._map_key() == key:
                return item
        return None

    def find_all(self, *key: object) -> list[_T]:
        return [item for item in self if item._map_key() == key]


class Struct:
    """Base of every generated struct class; equality and construction are generated."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable value objects
    _KINDS: ClassVar[dict[str, str]] = {}
    _MAP_KEY: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        parts = [f"{name}={getattr(self, name)!r}" for name in self._KINDS]
        unknown = getattr(self, "unknown_tagged_fields", None)
        if unknown:
            parts.append(f"unknown_tagged_fields={unknown!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def _map_key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._MAP_KEY)


class Message(Struct):
    """Base of every generated message class: version dispatch and the public codec methods."""

    __slots__ = ()
    SPEC_NAME: ClassVar[str] = ""
    SPEC_TYPE: ClassVar[str] = ""
    API_KEY: ClassVar[int | None] = None
    LOWEST_VERSION: ClassVar[int] = 0
    HIGHEST_VERSION: ClassVar[int] = -1
    LOWEST_FLEXIBLE_VERSION: ClassVar[int | None] = None
    _READERS: ClassVar[dict[int, Reader]] = {}
    _WRITERS: ClassVar[dict[int, Writer]] = {}
    _JSON: ClassVar[dict[int, _json.JsonLayout]] = {}

    @classmethod
    def _unsupported(cls, version: int) -> UnsupportedVersionError:
        valid = (
            "none"
            if cls.HIGHEST_VERSION < cls.LOWEST_VERSION
            else f"{cls.LOWEST_VERSION}-{cls.HIGHEST_VERSION}"
        )
        return UnsupportedVersionError(
            f"{cls.SPEC_NAME} v{version} is not supported (valid versions: {valid})"
        )

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Self:
        """Decode exactly all of ``data`` as this message at ``version``."""
        buf = data if data.__class__ is bytes else bytes(data)
        obj, pos = cls.read(buf, 0, version)
        if pos != len(buf):
            raise DecodeError(
                f"{cls.SPEC_NAME} v{version}: {len(buf) - pos} bytes left over after the message",
                pos,
            )
        return obj

    @classmethod
    def read(cls, buf: bytes, pos: int, version: int) -> tuple[Self, int]:
        """Decode one message starting at ``pos``; returns ``(message, position after it)``."""
        reader = cls._READERS.get(version)
        if reader is None:
            raise cls._unsupported(version)
        try:
            found: tuple[Self, int] = reader(buf, pos)
        except Exception as exc:
            raise decode_failure(cls.SPEC_NAME, version, exc) from None
        return found

    def encode(self, version: int) -> bytes:
        out = bytearray()
        self.write(out, version)
        return bytes(out)

    def write(self, out: bytearray, version: int) -> None:
        """Append this message's encoding at ``version`` to ``out``."""
        writer = self._WRITERS.get(version)
        if writer is None:
            raise self._unsupported(version)
        try:
            writer(self, out)
        except Exception as exc:
            raise encode_failure(self.SPEC_NAME, version, exc) from None

    def encoded_size(self, version: int) -> int:
        """Size of ``encode(version)``, from the same field walk (never a second size ladder)."""
        return len(self.encode(version))

    def to_json(self, version: int) -> dict[str, Any]:
        """Kafka's JsonConverter form: camelCase keys, uuid base64url, bytes and records base64."""
        table = self._JSON.get(version)
        if table is None:
            raise self._unsupported(version)
        return _json.to_json(table, self)

    @classmethod
    def from_json(cls, obj: dict[str, Any], version: int) -> Self:
        table = cls._JSON.get(version)
        if table is None:
            raise cls._unsupported(version)
        try:
            made: Self = _json.from_json(table, obj)
        except Exception as exc:
            raise encode_failure(cls.SPEC_NAME, version, exc) from None
        return made
