"""Body decoding with a generated codec package, and the JSON view of a decoded body.

The JSON is Kafka's JsonConverter form from the codec, except that each ``records`` field holds the
records layer's view of its batches instead of base64: control records decoded, and in
``__cluster_metadata`` traffic each record value decoded as a metadata-log record when the package has
the metadata specs. ``error_codes`` collects every ``errorCode`` in the body, depth first.

``BodyDecoder.fill`` writes an exchange's body columns straight into its row (one call per
exchange); ``request`` and ``response`` give one body's ``Decoded`` on its own.
"""

from __future__ import annotations

import sys
import threading
import uuid
from types import ModuleType
from typing import Any, Callable, Final, NamedTuple

from mypy_extensions import mypyc_attr

from kraftwire.generated import ProtocolError, api_keys
from kraftwire.generated.records import batches_to_json, write_batches_json_text

from . import guard
from .guard import DecodeTimeout
from .headers import (
    RequestHead,
    request_body_start,
    request_body_start_after,
    response_body_start,
)
from .jsonview import dumps, json_view

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


class _Codec:
    """One side of one API version: its header codec and version, its body codec, and what the
    body's spec holds."""

    def __init__(
        self,
        header: Any,
        header_version: int,
        request: bool,
        body_class: Any,
        holds_records: bool,
        holds_floats: bool,
    ) -> None:
        self.header = header  # a generated class: its read() is all that is used
        self.header_version = header_version
        self.request = request  # which side, so which shortcut past a plain header (``headers``)
        self.body_class = body_class
        # The class's ``read``, looked up once: on a compiled class each look-up of a class method
        # makes a new bound method object, about a tenth of a microsecond per body.
        self.read = body_class.read
        self.holds_records = holds_records  # some struct of the body's spec has a records field
        self.holds_floats = holds_floats  # some struct of the body's spec has a float64 field
        # A compiled class writes the text of a body without floats itself (its to_json_text),
        # skipping the view dict, records fields through the decoder's writer (a build before
        # that took none); it answers None for what it does not write.
        self.writes_text = (
            not holds_floats
            and hasattr(body_class, "to_json_text")
            and (not holds_records or getattr(body_class, "RECORDS_JSON_TEXT", False))
        )
        self.side = "request" if request else "response"  # for messages

    def body_start(self, payload: bytes) -> int:
        """Where the body starts: past a plain header without the codec, else as the codec reads
        the header (which raises what is wrong with an unusual one)."""
        if self.request:
            pos = request_body_start(payload, self.header_version)
        else:
            pos = response_body_start(payload, self.header_version)
        if pos is None:
            _, pos = self.header.read(payload, 0, self.header_version)
        return pos


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
        self._protocol_error = (ProtocolError, getattr(package, "ProtocolError", ProtocolError))
        self._unsupported = package.UnsupportedVersionError
        self._codecs: dict[int, _Codec] = {}  # see _codec
        self._batches_to_json: Callable[..., dict[str, Any]] = batches_to_json
        self._write_batches_json_text = write_batches_json_text
        # The bound method made once: compiled, each look-up makes a new one.
        self._records_text: Callable[[Any, Any, Any], None] = self._write_records_text

    def api_name(self, api_key: int) -> str | None:
        """The codec set's name for ``api_key``, else Kafka's, else None (a key Kafka never used)."""
        info = self.package.APIS.get(api_key)
        return info.name if info is not None else api_keys.name(api_key)

    def request_flexible(self, api_key: int, api_version: int) -> bool | None:
        info = self.package.APIS.get(api_key)
        if info is None:
            return None
        return info.request_flexible is not None and api_version >= info.request_flexible

    def knows(self, api_key: int, api_version: int) -> bool:
        info = self.package.APIS.get(api_key)
        return info is not None and info.lowest_version <= api_version <= info.highest_version

    def request(self, payload: bytes, api_key: int, api_version: int) -> Decoded:
        return self._decoded(payload, self._codec(api_key, api_version, True), api_version)

    def response(self, payload: bytes, api_key: int, api_version: int) -> Decoded:
        return self._decoded(payload, self._codec(api_key, api_version, False), api_version)

    def fill(
        self,
        row: dict[str, Any],
        problems: list[str],
        request: bytes,
        head: RequestHead,
        response: bytes | None,
    ) -> None:
        """The body columns of an exchange's ``row`` (``rows.COLUMNS``), from its request payload,
        the request's header, and its response payload if any: each body's JSON, and the
        response's error codes and throttle time. What went wrong is added to ``problems``, and a
        row whose status is still "ok" takes the worst body's (decode_error before
        unsupported_version)."""
        api_key, version = head.api_key, head.api_version
        # A codec is made only for versions ``knows`` accepted.
        key = _version_key(api_key, version)
        asking = self._codecs.get(key | 1)
        if asking is None:
            if not self.knows(api_key, version):
                name = row["api_name"] or f"API key {api_key}"
                problems.append(f"no codec for {name} v{version}")
                if row["status"] == "ok":
                    row["status"] = UNSUPPORTED
                return
            asking = self._codec(api_key, version, True)
        start = request_body_start_after(head, request, asking.header_version)
        problem = self._decode(request, asking, version, row, problems, start)
        if response is not None:
            answering = self._codecs.get(key)
            if answering is None:
                answering = self._codec(api_key, version, False)
            answer = self._decode(response, answering, version, row, problems)
            if problem is None or answer == FAILED:
                problem = answer
        if problem is not None and row["status"] == "ok":
            row["status"] = problem

    def _codec(self, api_key: int, api_version: int, request: bool) -> _Codec:
        """How to decode one side of an API version, looked up once (the package's lookups are
        cheap, but they would run for every frame)."""
        key = _version_key(api_key, api_version) | request
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
                request,
                body_class,
                "records" in _field_kinds(body_class),
                "float64" in _field_kinds(body_class),
            )
        return codec

    def _decoded(self, payload: bytes, codec: _Codec, version: int) -> Decoded:
        """One body on its own: what ``_decode`` would put into a row."""
        row: dict[str, Any] = {}
        problems: list[str] = []
        problem = self._decode(payload, codec, version, row, problems)
        return Decoded(
            row.get("request_json" if codec.request else "response_json"),
            row.get("error_code"),
            row.get("error_codes", []),
            row.get("throttle_time_ms"),
            problem,
            "; ".join(problems) if problems else None,
        )

    def _decode(
        self,
        payload: bytes,
        codec: _Codec,
        version: int,
        row: dict[str, Any],
        problems: list[str],
        start: int | None = None,
    ) -> str | None:
        """Header and body into the row's columns of the codec's side; the problem (None,
        UNSUPPORTED or FAILED), its message added to ``problems``. ``start`` is where the body
        starts when the caller knows it (None: found here). Bytes after the body are reported
        but, as Kafka's broker does, ignored."""
        # guard.begin()/end() inline: the timer is armed for this limit on this thread
        armed = _ARMED[0]
        marks = _MARK if armed[1] == _get_ident() and armed[0] == self.limit_s else None
        if marks is None:
            marks = guard.arm(self.limit_s)
        try:
            if marks is not None:
                started = marks[1] + 1
                marks[1] = started
                marks[0] = started
            try:
                # Typed, so that compiled it is taken apart by index, not through an iterator.
                if start is None:
                    start = codec.body_start(payload)
                found: tuple[Any, int] = codec.read(payload, start, version)
            finally:
                if marks is not None:
                    marks[0] = 0
            body, end = found
            written = self._text(body, codec, version)
        except self._unsupported as exc:
            return self._failed(codec, row, problems, UNSUPPORTED, f"{codec.side}: {exc}")
        except (DecodeTimeout, RecursionError, MemoryError) as exc:
            return self._failed(codec, row, problems, FAILED, f"{codec.side}: {exc}")
        except self._protocol_error as exc:
            return self._failed(codec, row, problems, FAILED, f"{codec.side}: {exc}")
        except Exception as exc:  # a codec bug must not fail the job; the row says what happened
            message = f"{codec.side}: {type(exc).__name__}: {exc}"
            return self._failed(codec, row, problems, FAILED, message)
        text, top, throttle = written
        if codec.request:
            row["request_json"] = text
        else:
            row["response_json"] = text
            row["error_codes"] = error_codes(text)
            row["error_code"] = top if isinstance(top, int) else None
            row["throttle_time_ms"] = throttle if isinstance(throttle, int) else None
        extra = len(payload) - end
        if extra:
            problems.append(f"{codec.side}: {extra} bytes after the body ignored")
        return None

    def _text(self, body: Any, codec: _Codec, version: int) -> tuple[str, Any, Any]:
        """The body's JSON text, written by its compiled class where it can (records fields by
        ``_records_text``), else through its view; with its top-level errorCode and
        throttleTimeMs."""
        written: tuple[str, Any, Any] | None = None
        if codec.writes_text:
            if codec.holds_records:
                written = body.to_json_text(version, self._records_text)
            else:
                written = body.to_json_text(version)
        if written is None:
            written = self._text_of_view(body, codec, version)
        return written

    def _text_of_view(self, body: Any, codec: _Codec, version: int) -> tuple[str, Any, Any]:
        """The body's JSON text through its view (records fields expanded), and the view's
        top-level errorCode and throttleTimeMs (None when it has no such key)."""
        view = json_view(body, version, codec.holds_records)
        holds_floats = codec.holds_floats
        if codec.holds_records and self._expand_records(body, view, None):
            holds_floats = True  # a metadata record with a float64 field was viewed
        return dumps(view, holds_floats), view.get("errorCode"), view.get("throttleTimeMs")

    @staticmethod
    def _failed(
        codec: _Codec, row: dict[str, Any], problems: list[str], problem: str, message: str
    ) -> str:
        """A body that did not decode: no JSON, its message added; a response's error codes are
        none (an empty list, not unknown)."""
        if not codec.request:
            row["error_codes"] = []
        problems.append(message)
        return problem

    def _expand_records(
        self, obj: object, view: dict[str, Any], topic_is_metadata: bool | None
    ) -> bool:
        """Replace each records field in ``view`` (its bytes from a compiled class asked for them,
        else its base64) by the batches' JSON view; True when some record was viewed as a
        metadata-log record of a type with a float64 field."""
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

    def _write_records_text(self, w: Any, data: Any, topic: Any) -> None:
        """A records field's text for a compiled class's ``to_json_text``: the text of the view
        ``_records_view`` gives it, ``topic`` being what names the field's topic (a name, a topic
        id, or None), as ``_names_metadata_topic`` finds it. Raises for what it does not write."""
        metadata = self.has_metadata and _is_metadata_topic(topic)
        family = "metadata" if metadata else None
        self._write_batches_json_text(w, data, self.package, family)

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

    def _records_view(self, data: bytes, metadata: bool | None) -> dict[str, Any]:
        # The keywords spelled out: a dict of options spread into the call is built for every field.
        try:
            if metadata and self.has_metadata:
                return self._batches_to_json(
                    data,
                    package=self.package,
                    values="metadata",
                    family="metadata",
                    message_view=json_view,
                )
            return self._batches_to_json(data, package=self.package)
        except Exception as exc:  # corrupt batches: keep the bytes and say why
            import base64

            return {
                "decodeError": f"{type(exc).__name__}: {exc}",
                "base64": base64.b64encode(bytes(data)).decode("ascii"),
            }


_get_ident: Final = threading.get_ident
# The guard's lists as this module's own constants: compiled, a name imported from the (pure)
# guard module would be looked up in this module's namespace on every decode.
_ARMED: Final = guard.ARMED
_MARK: Final = guard.MARK
_ERROR_CODE_KEY: Final = '"errorCode":'
_JSON_KEYS: Final[dict[str, str]] = {}
_MODULE_KINDS: Final[dict[str, frozenset[str]]] = {}
_IS_STRUCT: Final[dict[type, bool]] = {}
_TOPIC_NAMING: Final[dict[type, tuple[tuple[str, ...], bool]]] = {}
_CONTAINER_FIELDS: Final[dict[type, tuple[tuple[str, str, str], ...]]] = {}


def error_codes(text: str) -> list[int]:
    """The number after each ``"errorCode":`` in a view's compact JSON text, in document order (the
    depth-first order of the body); a value that is no number (null) is left out. JSON escapes a
    quote inside a string, so the key never matches inside one. Found by ``str.find`` and read digit
    by digit: compiled, a regular expression and an int() of each match cost twice as much."""
    codes: list[int] = []
    end = len(text)
    at = text.find(_ERROR_CODE_KEY)
    while at >= 0:
        stop = at + len(_ERROR_CODE_KEY)
        negative = stop < end and text[stop] == "-"
        if negative:
            stop += 1
        first_digit = stop
        value = 0
        while stop < end:
            digit = ord(text[stop]) - 48  # "0" is 48
            if not 0 <= digit <= 9:
                break
            value = value * 10 + digit
            stop += 1
        if stop > first_digit:
            codes.append(-value if negative else value)
        at = text.find(_ERROR_CODE_KEY, stop)
    return codes


def _version_key(api_key: int, api_version: int) -> int:
    """The key of an API version in the codec cache, whose lowest bit is left for the side (1 for
    requests): one int, not a tuple built for every body, from the header's two int16s."""
    return (api_key & 0xFFFF) << 17 | (api_version & 0xFFFF) << 1


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


def _views_metadata_of(records_view: dict[str, Any], record_types: frozenset[int]) -> bool:
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


def _is_metadata_topic(topic: object) -> bool:
    """Whether ``topic``, a topic's name or id (or None), is the metadata log's."""
    if isinstance(topic, str):
        return topic == METADATA_TOPIC
    # The ints compared: UUID.__eq__ runs in Python.
    return isinstance(topic, uuid.UUID) and topic.int == METADATA_TOPIC_ID.int


def _names_metadata_topic(obj: object, inherited: bool | None) -> bool | None:
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
        value = getattr(obj, "topic_id")
        if isinstance(value, uuid.UUID) and value.int:
            # The ints compared: UUID.__eq__ runs in Python, once per topic of every body.
            return bool(value.int == METADATA_TOPIC_ID.int)
    return inherited
