"""Hypothesis strategies for generated message classes, driven by the spec model.

``message_instances(lookup, spec, version)`` draws random, *encodable* instances of the class that a
generated package has for ``spec`` (a :class:`kraftwire.codegen.model.MessageSpec`) at ``version``:

* only fields present at ``version`` get drawn values; the others are left out of the constructor,
  so they keep their defaults and the instance is legal to encode at that version;
* ``None`` is drawn only where the field is nullable at ``version``;
* tagged fields are sometimes left out (default, so not written) and sometimes drawn;
* integers cover each type's full range with the extremes (min, max, -1, 0, 1) favoured; strings mix
  ASCII, non-ASCII and emoji (≤ 24 code points, far below the 32767-byte limit); uuids include the
  zero uuid; ``bytes`` are arbitrary; ``records`` are a few real v2 record batches (from the
  package's ``records`` module when it has one) or arbitrary bytes;
* arrays have 0–3 elements (keyed arrays use the package's ``MapKeyList``); nested structs recurse
  with the same version rules.

Struct classes are found as attributes named after the struct in the message's generated module
(``sys.modules[cls.__module__]``), which is how kraftwire names them. ``lookup`` is the package's
``lookup(spec_stem)`` function (or the package itself). Works for any generated package + its specs::

    from kraftwire import generated
    from strategies import message_instances
    st_vote = message_instances(generated.lookup, vote_spec, 2)
"""

from __future__ import annotations

import importlib
import sys
import uuid
from typing import Callable

from hypothesis import strategies as st

from kraftwire.codegen.model import Field, FieldType, MessageSpec, Struct

__all__ = ["message_instances", "value_strategy", "INT_RANGES"]

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

MAX_ARRAY = 3
MAX_TEXT = 24
MAX_BYTES = 48

_SPECIAL_CHARS = "aZ09 _-.:/\x00\x7féß€中文Ωж\u200b\ufeff😀🚀👍🏽\U0010fffd"


def _ints(kind: str) -> st.SearchStrategy[int]:
    low, high = INT_RANGES[kind]
    extremes = sorted({low, high, 0, 1, -1 if low < 0 else 2, low + 1, high - 1})
    return st.one_of(st.sampled_from(extremes), st.integers(low, high))


_STRINGS = st.one_of(
    st.sampled_from(["", "a", "😀", "é" * 3, "broker-1", "x" * 200]),
    st.text(max_size=MAX_TEXT),  # any code point but surrogates: non-ASCII, astral, controls
    st.text(alphabet=st.sampled_from(_SPECIAL_CHARS), max_size=MAX_TEXT),
)

_UUIDS = st.one_of(
    st.sampled_from([uuid.UUID(int=0), uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)]),
    st.integers(0, 2**128 - 1).map(lambda n: uuid.UUID(int=n)),
)

_BYTES = st.one_of(st.just(b""), st.binary(max_size=MAX_BYTES))

_FLOATS = st.floats(allow_nan=False, allow_infinity=False)

_SCALARS: dict[str, st.SearchStrategy] = {
    "bool": st.booleans(),
    "float64": _FLOATS,
    "string": _STRINGS,
    "uuid": _UUIDS,
    "bytes": _BYTES,
    **{kind: _ints(kind) for kind in INT_RANGES},
}


def _record_batches(package: str) -> list[bytes]:
    """A few well-formed v2 batches from ``<package>.records`` (none if the package has no such module)."""
    try:
        records = importlib.import_module(f"{package}.records")
        encode = records.encode_batch
        return [
            encode([(None, b"v", None, 1_700_000_000_000)]),
            encode(
                [(b"k", "värde".encode(), [("h", b"1"), ("n", None)], 0), (None, None, None, 1)],
                base_offset=42,
                leader_epoch=7,
            ),
            encode(
                [(b"", b"x" * 30, [], 5)],
                producer_id=9,
                producer_epoch=1,
                base_sequence=0,
                transactional=True,
            ),
        ]
    except Exception:  # a package without the records helpers: arbitrary bytes are still valid
        return []


class _Builder:
    """Builds (and caches) the strategies of one message at one version."""

    def __init__(self, cls: type, spec: MessageSpec, version: int) -> None:
        self.cls = cls
        self.spec = spec
        self.version = version
        self.module = sys.modules[cls.__module__]
        self.package = cls.__module__.rpartition(".")[0]
        pkg = sys.modules.get(self.package)
        self.map_key_list = getattr(pkg, "MapKeyList", None) or getattr(self.module, "_MapKeyList")
        batches = _record_batches(self.package)
        self.records = st.one_of(_BYTES, st.sampled_from(batches)) if batches else _BYTES
        self.structs: dict[str, st.SearchStrategy] = {}

    def struct_class(self, struct: Struct) -> type:
        if struct is self.spec.root:
            return self.cls
        try:
            return getattr(self.module, struct.name)
        except AttributeError:
            raise LookupError(
                f"{self.module.__name__} has no class {struct.name!r} for struct {struct.name}"
            ) from None

    def struct(self, struct: Struct) -> st.SearchStrategy:
        cached = self.structs.get(struct.name)
        if cached is not None:
            return cached
        cls = self.struct_class(struct)
        required: dict[str, st.SearchStrategy] = {}
        optional: dict[str, st.SearchStrategy] = {}
        for fld in struct.fields:
            if self.version not in fld.versions:
                continue  # absent at this version: keep the constructor default
            values = self.field(fld)
            if self.version in fld.tagged_versions:
                optional[fld.attr] = values  # left out sometimes: default, so not written
            else:
                required[fld.attr] = values
        strategy = st.fixed_dictionaries(required, optional=optional).map(lambda kw: cls(**kw))
        self.structs[struct.name] = strategy
        return strategy

    def field(self, fld: Field) -> st.SearchStrategy:
        values = self.value(fld.type, fld)
        if self.version in fld.nullable_versions:
            values = st.one_of(st.none(), values)
        return values

    def value(self, ftype: FieldType, fld: Field) -> st.SearchStrategy:
        kind = ftype.kind
        if kind == "struct":
            assert fld.struct is not None, f"unresolved struct of field {fld.name}"
            return st.deferred(lambda: self.struct(fld.struct))
        if kind == "array":
            element = ftype.element
            assert element is not None
            if element.is_struct:
                assert fld.struct is not None, f"unresolved struct of field {fld.name}"
                items = st.deferred(lambda: self.struct(fld.struct))
                keyed = bool(fld.struct.map_key_fields)
                lists = st.lists(items, max_size=MAX_ARRAY)
                return lists.map(self.map_key_list) if keyed else lists
            return st.lists(self.value(element, fld), max_size=MAX_ARRAY)
        if kind == "records":
            return self.records
        return value_strategy(kind)


def value_strategy(kind: str) -> st.SearchStrategy:
    """The strategy for one primitive spec kind (``int32``, ``string``, ``uuid``, ``bytes`` ...)."""
    try:
        return _SCALARS[kind]
    except KeyError:
        raise ValueError(f"no strategy for spec type {kind!r}") from None


def message_instances(
    cls_lookup: Callable[[str], type] | object, spec: MessageSpec, version: int
) -> st.SearchStrategy:
    """Random valid instances of ``spec``'s generated class at ``version`` (see the module doc)."""
    lookup = getattr(cls_lookup, "lookup", cls_lookup)
    if version not in spec.valid_versions:
        raise ValueError(f"{spec.stem} has no version {version} (valid: {spec.valid_versions})")
    cls = lookup(spec.stem)
    return _Builder(cls, spec, version).struct(spec.root)
