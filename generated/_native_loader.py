"""Chooses, per spec module, the compiled codec (``_native_<module>``, built by ``kraftwire codegen
--native``) or the pure one, and keeps the pure one as the compiled module's twin.

A spec module calls :func:`install` last. When the compiled module is present, importable and truly
an extension module (never its interpreted source), the module's public classes become the compiled
ones, and a private copy of the pure module (its classes untouched) becomes their twin: every error,
every rare input the compiled readers do not take, and the JSON and repr forms go through the twin
and are converted, so both implementations give the same results and the same errors.
``KRAFTWIRE_PURE=1`` in the environment forces the pure codecs everywhere.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
from collections.abc import Iterable
from types import ModuleType
from typing import Any

FORCE_PURE_VARIABLE = "KRAFTWIRE_PURE"
_TWIN_PREFIX = "_pure_"
_NATIVE_PREFIX = "_native_"


def forced_pure() -> bool:
    return os.environ.get(FORCE_PURE_VARIABLE, "") not in ("", "0")


def compiled_spec(package: str, module: str) -> importlib.machinery.ModuleSpec | None:
    """The import spec of ``module``'s compiled codec when one is built, else None."""
    try:
        spec = importlib.util.find_spec(f"{package}.{_NATIVE_PREFIX}{module}")
    except ImportError:
        return None
    if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
        return None
    return spec


def package_implementation(package: str, modules: Iterable[str]) -> str:
    """``"native"`` when every spec module of ``package`` has a compiled codec (and the pure ones are
    not forced), ``"pure"`` when none has, ``"mixed"`` otherwise."""
    if forced_pure():
        return "pure"
    found = [compiled_spec(package, module) is not None for module in modules]
    if found and all(found):
        return "native"
    return "mixed" if any(found) else "pure"


def install(namespace: dict[str, Any]) -> str:
    """Put the compiled classes into the calling spec module's ``namespace`` when they can be used.

    Returns the implementation the module ends up with: ``"native"`` or ``"pure"``.
    """
    package, _, module = namespace["__name__"].rpartition(".")
    if module.startswith(_TWIN_PREFIX) or forced_pure():
        return "pure"
    if compiled_spec(package, module) is None:
        return "pure"
    try:
        native = importlib.import_module(f"{package}.{_NATIVE_PREFIX}{module}")
    except ImportError:  # built for another Python, or its librt is missing: stay pure
        return "pure"
    with open(namespace["__file__"], "rb") as source:
        if getattr(native, "PURE_SOURCE_SHA256", None) != hashlib.sha256(source.read()).hexdigest():
            return "pure"  # compiled for an older generation of this module
    twin = _load_twin(package, module, namespace["__file__"])
    names = list(twin.__all__)
    native.bind(Twin(twin, native, names))
    for name in names:
        compiled, pure = getattr(native, name), getattr(twin, name)
        if "_JSON" in vars(pure):  # the message's JSON field tables, walked by `kraftwire decode`
            compiled._JSON = pure._JSON
        namespace[name] = compiled
    return "native"


def _load_twin(package: str, module: str, path: str) -> ModuleType:
    """A second, private instance of the pure module, for the compiled one to fall back on."""
    spec = importlib.util.spec_from_file_location(f"{package}.{_TWIN_PREFIX}{module}", path)
    assert spec is not None and spec.loader is not None
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)
    return twin


class Twin:
    """The pure module behind a compiled one, and the conversions between their objects."""

    def __init__(self, pure: ModuleType, native: ModuleType, names: list[str]) -> None:
        self.to_pure_class = {getattr(native, n): getattr(pure, n) for n in names}
        self.to_native_class = {getattr(pure, n): getattr(native, n) for n in names}
        self.pure_root = next(c for c in self.to_native_class if getattr(c, "SPEC_NAME", ""))

    def to_pure(self, value: Any) -> Any:
        return self._convert(value, self.to_pure_class, True)

    def to_native(self, value: Any) -> Any:
        return self._convert(value, self.to_native_class, False)

    def _convert(self, value: Any, classes: dict[type, type], to_pure: bool) -> Any:
        target = classes.get(type(value))
        if target is not None:
            names = [*getattr(target, "_KINDS"), "unknown_tagged_fields"]
            values = [self._convert(getattr(value, name), classes, to_pure) for name in names]
            if not to_pure:
                return target(*values)
            made: Any = object.__new__(target)
            for name, item in zip(names, values):
                setattr(made, name, item)
            return made
        if isinstance(value, list) and any(type(item) in classes for item in value):
            items = [self._convert(item, classes, to_pure) for item in value]
            return type(value)(items) if type(value) is not list else items
        return value

    def decode(self, buf: bytes, version: int) -> Any:
        return self.to_native(self.pure_root.decode(buf, version))

    def read(self, buf: bytes, pos: int, version: int) -> tuple[Any, int]:
        found, end = self.pure_root.read(buf, pos, version)
        return self.to_native(found), end

    def encode(self, message: Any, version: int) -> bytes:
        encoded: bytes = self.pure_root.encode(self.to_pure(message), version)
        return encoded

    def from_json(self, obj: dict[str, Any], version: int) -> Any:
        return self.to_native(self.pure_root.from_json(obj, version))
