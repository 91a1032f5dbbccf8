"""Body decoding with a generated codec package, and the JSON view of a decoded body.

The JSON is Kafka's JsonConverter form from the codec, except that each ``records`` field holds the
records layer's view of its batches instead of base64: control records decoded, and in
``__cluster_metadata`` traffic each record value decoded as a metadata-log record when the package has
the metadata specs. ``error_codes`` collects every ``errorCode`` in the body, depth first.
"""

from __future__ import annotations

import re
import sys
import uuid
from types import ModuleType
from typing import Any, Callable, Final, NamedTuple

from mypy_extensions import mypyc_attr

from . import guard
from .guard import DecodeTimeout
from .headers import request_body_start, response_body_start
from .jsonview import dumps, json_view
from .kafka_apis import KAFKA_API_NAMES

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)
UNSUPPORTED: Final = "unsupported_version"
FAILED: Final = "decode_error"


class Decoded(NamedTuple):
    json_text: str | None
    error_code: int | None
    error_codes: list[int]
    throttle_time_ms: int | None
    problem: str | None  # None, UNSUPPORTED or FAILED
    message: str | None


class _Codec(NamedTuple):
    """One side of one API version: its header codec and version, the shortcut past a plain
    header (``headers.request_body_start`` / ``response_body_start``), and its body codec."""

    header: Any  # a generated class: its read() is all that is used
    header_version: int
    body_start: Callable[[bytes, int], int | None]
    body_class: Any
    holds_records: bool  # some struct of the body's spec has a records field
    holds_floats: bool  # some struct of the body's spec has a float64 field
    side: str  # "request" or "response", for messages


# mypy_extensions (a pinned dependency) only marks the class here; it changes nothing when pure.
@mypyc_attr(allow_interpreted_subclasses=True)  # compiled, it may still be specialised (bench/)
class BodyDecoder:
    """Decodes request and response frames of one codec package."""

    def __init__(self, package: ModuleType, limit_s: float = 5.0) -> None:
        self.package = package
        self.limit_s = limit_s
        self.has_metadata = "metadata" in getattr(package, "METADATA_RECORDS", {})
        # Metadata-log record types with a float64 field (ClientQuotaRecord): a body that views
        # one is written by the standard encoder (see ``jsonview.dumps``). Found when metadata
        # records are first viewed: it imports every metadata-record module.
        self._float_metadata_types: frozenset[int] | None = None
        from kraftwire.generated import ProtocolError

        self._protocol_error = (ProtocolError, getattr(package, "ProtocolError", ProtocolError))
        self._unsupported = package.UnsupportedVersionError
        self._codecs: dict[int, _Codec] = {}  # see _codec
        from kraftwire.records import batches_to_json  # imported once, not for every records field

        self._batches_to_json = batches_to_json

    def api_name(self, api_key: int) -> str | None:
        """The codec set's name for ``api_key``, else Kafka's, else None (a key Kafka never used)."""
        info = self.package.APIS.get(api_key)
        return info.name if info is not None else KAFKA_API_NAMES.get(api_key)

    def request_flexible(self, api_key: int, api_version: int) -> bool | None:
        info = self.package.APIS.get(api_key)
        if info is None:
            return None
        return info.request_flexible is not None and api_version >= info.request_flexible

    def knows(self, api_key: int, api_version: int) -> bool:
        info = self.package.APIS.get(api_key)
        return info is not None and info.lowest_version <= api_version <= info.highest_version

    def request(self, payload: bytes, api_key: int, api_version: int) -> Decoded:
        return self._decode(payload, self._codec(api_key, api_version, True), api_version)

    def response(self, payload: bytes, api_key: int, api_version: int) -> Decoded:
        return self._decode(payload, self._codec(api_key, api_version, False), api_version)

    def _codec(self, api_key: int, api_version: int, request: bool) -> _Codec:
        """How to decode one side of an API version, looked up once (the package's lookups are
        cheap, but they would run for every frame)."""
        # One int, not a tuple built for every body: the header's two int16s and the side.
        key = (api_key & 0xFFFF) << 17 | (api_version & 0xFFFF) << 1 | request
        codec = self._codecs.get(key)
        if codec is None:
            package = self.package
            if request:
                header = package.lookup("RequestHeader")
                header_version = package.request_header_version(api_key, api_version)
                body_class = package.request_class(api_key)
            else:
                header = package.lookup("ResponseHeader")
                header_version = package.response_header_version(api_key, api_version)
                body_class = package.response_class(api_key)
            codec = self._codecs[key] = _Codec(
                header,
                header_version,
                request_body_start if request else response_body_start,
                body_class,
                "records" in _field_kinds(body_class),
                "float64" in _field_kinds(body_class),
                "request" if request else "response",
            )
        return codec

    def _decode(self, payload: bytes, codec: _Codec, version: int) -> Decoded:
        """Header and body; bytes after the body are reported but, as Kafka's broker does, ignored."""
        header, header_version, body_start, body_class, holds_records, holds_floats, side = codec
        try:
            guarded = guard.begin(self.limit_s)
            try:
                pos = body_start(payload, header_version)
                if pos is None:  # an unusual header: the codec reads it, and says what is wrong
                    _, pos = header.read(payload, 0, header_version)
                body, end = body_class.read(payload, pos, version)
            finally:
                if guarded:
                    guard.end()
            view = json_view(body, version)
            if holds_records and self._expand_records(body, view, None):
                holds_floats = True  # a metadata record with a float64 field was viewed
            text = dumps(view, holds_floats)
        except self._unsupported as exc:
            return Decoded(None, None, [], None, UNSUPPORTED, f"{side}: {exc}")
        except (DecodeTimeout, RecursionError, MemoryError) as exc:
            return Decoded(None, None, [], None, FAILED, f"{side}: {exc}")
        except self._protocol_error as exc:
            return Decoded(None, None, [], None, FAILED, f"{side}: {exc}")
        except Exception as exc:  # a codec bug must not fail the job; the row says what happened
            return Decoded(None, None, [], None, FAILED, f"{side}: {type(exc).__name__}: {exc}")
        # In document order, which is the depth-first order of the body (a C-speed scan).
        codes = [int(code) for code in _ERROR_CODE.findall(text)] if '"errorCode"' in text else []
        top = view.get("errorCode")
        throttle = view.get("throttleTimeMs")
        extra = len(payload) - end
        decoded = (
            text,
            top if isinstance(top, int) else None,
            codes,
            throttle if isinstance(throttle, int) else None,
            None,
            f"{side}: {extra} bytes after the body ignored" if extra else None,
        )
        return _new_tuple(Decoded, decoded)  # as Decoded(*decoded), without its Python __new__

    def _expand_records(self, obj, view: dict, topic_is_metadata: bool | None) -> bool:
        """Replace the base64 of each records field in ``view`` by the batches' JSON view; True
        when some record was viewed as a metadata-log record of a type with a float64 field."""
        walk = _container_fields(type(obj))
        if not walk:
            return False
        topic_is_metadata = _names_metadata_topic(obj, topic_is_metadata)
        floats = False
        for attr, key, kind in walk:
            value = getattr(obj, attr, None)
            if key not in view or value is None:
                continue
            if kind == "records":
                records_view = view[key] = self._records_view(value, topic_is_metadata)
                if topic_is_metadata and self.has_metadata and self._float_types():
                    floats |= _views_metadata_of(records_view, self._float_types())
            elif kind == "struct":
                floats |= self._expand_records(value, view[key], topic_is_metadata)
            elif kind == "array" and value and _is_struct(type(value[0])):
                for item, item_view in zip(value, view[key]):
                    floats |= self._expand_records(item, item_view, topic_is_metadata)
        return floats

    def _float_types(self) -> frozenset[int]:
        found = self._float_metadata_types
        if found is None:
            records = self.package.METADATA_RECORDS["metadata"]
            found = self._float_metadata_types = frozenset(
                record_type
                for record_type, stem in records.items()
                if "float64" in _field_kinds(self.package.lookup(stem))
            )
        return found

    def _records_view(self, data: bytes, metadata: bool | None) -> dict:
        options: dict[str, object] = {"package": self.package}
        if metadata and self.has_metadata:
            options.update(values="metadata", family="metadata", message_view=json_view)
        try:
            return self._batches_to_json(data, **options)
        except Exception as exc:  # corrupt batches: keep the bytes and say why
            import base64

            return {
                "decodeError": f"{type(exc).__name__}: {exc}",
                "base64": base64.b64encode(bytes(data)).decode("ascii"),
            }


_new_tuple: Final = tuple.__new__
_ERROR_CODE: Final = re.compile(r'"errorCode":(-?\d+)')
_JSON_KEYS: Final[dict[str, str]] = {}
_MODULE_KINDS: Final[dict[str, frozenset[str]]] = {}
_IS_STRUCT: Final[dict[type, bool]] = {}
_TOPIC_NAMING: Final[dict[type, tuple[tuple[str, ...], bool]]] = {}
_CONTAINER_FIELDS: Final[dict[type, tuple[tuple[str, str, str], ...]]] = {}


def _json_key(attr: str) -> str:
    key = _JSON_KEYS.get(attr)
    if key is None:
        head, *rest = attr.split("_")
        key = _JSON_KEYS[attr] = head + "".join(part[:1].upper() + part[1:] for part in rest)
    return key


def _container_fields(cls: type) -> tuple[tuple[str, str, str], ...]:
    """``(attribute, JSON key, kind)`` of the fields of a generated struct class that are records or
    can contain them (structs and arrays); the scalar fields, most of them, are never visited."""
    fields = _CONTAINER_FIELDS.get(cls)
    if fields is None:
        fields = _CONTAINER_FIELDS[cls] = tuple(
            (attr, _json_key(attr), kind)
            for attr, kind in (getattr(cls, "_KINDS", None) or {}).items()
            if kind in ("records", "struct", "array")
        )
    return fields


def _field_kinds(message_class: type) -> frozenset[str]:
    """The field kinds of every struct of the message class's module (one generated module per
    spec). Most messages have no records field, and skipping their walk is most of the JSON cost
    saved; few have a float64 one, and the others' text can be written by the faster writer."""
    module_name = message_class.__module__
    kinds = _MODULE_KINDS.get(module_name)
    if kinds is None:
        module = sys.modules[module_name]
        kinds = _MODULE_KINDS[module_name] = frozenset(
            kind
            for value in vars(module).values()
            if isinstance(value, type)
            for kind in getattr(value, "_KINDS", {}).values()
        )
    return kinds


def _views_metadata_of(records_view: dict, record_types: frozenset[int]) -> bool:
    """Whether a records field's view holds a metadata-log record of one of ``record_types``."""
    for batch in records_view.get("batches", ()):
        for record in batch["records"]:
            metadata = record.get("metadata")
            if metadata is not None and metadata["type"] in record_types:
                return True
    return False


def _is_struct(cls: type) -> bool:
    found = _IS_STRUCT.get(cls)
    if found is None:
        found = _IS_STRUCT[cls] = hasattr(cls, "_KINDS")
    return found


def _topic_naming(cls: type) -> tuple[tuple[str, ...], bool]:
    """Which of the attributes that may name a struct's topic its class has: the text ones, in
    the order they are tried, and whether it has ``topic_id``. Looked up once per class: asking an
    object for an attribute it lacks costs an exception each time (compiled, five times the walk).
    """
    found = _TOPIC_NAMING.get(cls)
    if found is None:
        kinds = getattr(cls, "_KINDS", None) or {}
        found = _TOPIC_NAMING[cls] = (
            tuple(attr for attr in ("topic", "name", "topic_name") if attr in kinds),
            "topic_id" in kinds,
        )
    return found


def _names_metadata_topic(obj, inherited: bool | None) -> bool | None:
    """Whether ``obj`` names the metadata log's topic, by name or id; ``inherited`` (its parent's
    answer) when it names none. A field the message's version lacks holds its default, the empty
    name or the zero id, which names nothing: Fetch from v13 on has a ``topic`` of "" beside the
    ``topic_id`` that counts."""
    names, has_topic_id = _topic_naming(type(obj))
    for attr in names:
        value = getattr(obj, attr)
        if isinstance(value, str) and value:
            return value == METADATA_TOPIC
    if has_topic_id:
        value = obj.topic_id
        if isinstance(value, uuid.UUID) and value.int:
            return value == METADATA_TOPIC_ID
    return inherited
