"""JSON text of the native module: one typed writer per JSON table, and the root's dispatch.

The Spark decoders want each body as text: compact, non-ASCII kept, the text orjson writes of the
body's view (``to_json``'s dict). Building that dict only to hand it to an encoder costs as much as
writing the text itself, so each JSON table the views take (``views.viewable_tables``) also gets a
writer: the same fields in the same order and under the same tests as its view, written into a
``librt.strings.StringWriter`` as they are visited. Keys and punctuation are string constants;
values go through typed helpers (``_text_int`` and its kin in ``helpers.py``) that take exactly the
types a read gives (an int is an ``int``, a string a ``str``...) and raise on any other, as on a
string orjson refuses (a lone surrogate).

A records field is written by the caller's ``records(w, data, topic)``, which writes the text of
its own view of the batches (the decoders': ``records.write_batches_json_text``): ``topic`` is
what names the field's topic, the innermost non-empty ``topic``, ``name`` or ``topic_name`` string
of the structs holding it, else their innermost non-zero ``topic_id`` uuid, else None. The writers
of the tables holding a records field pass both down.

The root's ``to_json_text(version, records=None)`` returns the text with the body's top-level
``errorCode`` and ``throttleTimeMs`` (each as its view holds it, None when the view has no such
key), or None when a writer (or ``records``) raised or the version has no writer (a float64): the
caller then writes the view as before, so the rows never depend on which way a body went. Writing
the text this way costs about half of what the view and orjson cost together (``bench/decode.py
--breakdown``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..model import Field
from ..plan import JsonTable, MessagePlan
from .lines import Lines as _Lines
from .views import (
    _differs_from_default,
    _suffix,
    _tables_with_records,
    reached_tables,
    viewable_tables,
)

# scalar kind -> the helper that writes a value of it (a float64 never reaches a writer)
_SCALAR_WRITERS = {
    "bool": "_text_bool",
    "int8": "_text_int",
    "int16": "_text_int",
    "uint16": "_text_int",
    "int32": "_text_int",
    "uint32": "_text_int",
    "int64": "_text_int",
    "string": "_text_str",
    "uuid": "_text_uuid",
    "bytes": "_text_bytes",
}
# the top-level keys the decoders read from a response's view besides its text
_TOP_KEYS = ("errorCode", "throttleTimeMs")


def json_text_functions(out: _Lines, plan: MessagePlan) -> None:
    """Emit ``_t_<table>`` per table with a writer (nested before parents) and
    ``_text_root_<Root>``."""
    written = text_tables(plan)
    reached = reached_tables(plan, written)
    holding = _tables_with_records(plan)
    fields = {sp.class_name: sp.struct.fields for sp in plan.structs}
    for table in plan.json_tables:
        if table.suffix in reached:
            _text_function(out, table, holding, fields[table.class_name])
    _dispatch(out, plan, written, holding)


def text_tables(plan: MessagePlan) -> set[str]:
    """Suffixes of the tables that get a writer: those with a view, but not a root's table whose
    errorCode or throttleTimeMs is a tagged field (no spec of Kafka's has one): such a version is
    left to the view."""
    tagged_tops = {
        table.suffix
        for table in plan.root_json.values()
        if any(_top_value(table, key) is None for key in _TOP_KEYS)
    }
    return viewable_tables(plan) - tagged_tops


# The fields that may name a struct's topic, as the decoders look for one: the first non-empty of
# these strings, else a non-zero ``topic_id``.
_TOPIC_NAMES = ("topic", "name", "topic_name")


class _Writes:
    """The statements of a writer: each constant piece of text joins the pieces before it, and
    one ``w.write`` writes them all before the next statement (or the end of a block)."""

    def __init__(self, out: _Lines) -> None:
        self.out = out
        self.pending = ""

    def text(self, piece: str) -> None:
        self.pending += piece

    def flush(self) -> None:
        if self.pending:
            self.out(f"w.write({self.pending!r})")
            self.pending = ""

    def __call__(self, line: str) -> None:
        self.flush()
        self.out(line)

    def local(self, line: str) -> None:
        """A statement that writes nothing: the pending pieces wait past it."""
        self.out(line)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.flush()
        with self.out.block(header):
            yield
            self.flush()


class _Separators:
    """Which keys need a comma before them: none before the first key written, one before every
    later key. Until a key is written for sure (an inline field), a tagged field may or may not
    have been: then a local, ``more``, says so at run time."""

    def __init__(self, writes: _Writes) -> None:
        self.writes = writes
        self.state = "empty"  # "empty": nothing written; "maybe": see ``more``; "some": written

    def key(self, json_key: str, certain: bool) -> None:
        """Write ``"key":`` (with its comma); ``certain`` when the field is inline."""
        plain = f'"{json_key}":'
        if self.state == "some":
            self.writes.text("," + plain)
        elif self.state == "maybe":
            self.writes(f"w.write({(',' + plain)!r} if more else {plain!r})")
        else:
            self.writes.text(plain)
        if certain:
            self.state = "some"
        elif self.state in ("empty", "maybe"):
            self.state = "maybe"
            self.writes("more = True")


def _text_function(out: _Lines, table: JsonTable, holding: set[str], fields: list[Field]) -> None:
    """``holding``: the tables with a records field, in them or nested; their writers take the
    caller's ``records`` and the ``topic`` of the structs around them."""
    present = [entry for entry in table.entries if entry[1] != "absent"]
    takes = ", records: Any, topic: Any" if table.suffix in holding else ""
    out("")
    out("")
    with out.block(
        f"def _t_{table.suffix}(obj: {table.class_name}, w: StringWriter{takes}) -> None:"
    ):
        out(f'"""The JSON text of ``_JSON_{table.suffix}`` (as ``_j_{table.suffix}``\'s dict)."""')
        if takes:
            _name_topic(out, fields)
        if any(mode == "tagged" for _, mode, _, _ in present[:1]):
            out("more = False")
        writes = _Writes(out)
        writes.text("{")
        separators = _Separators(writes)
        for fld, mode, child, _ in present:
            value = f"v_{fld.attr}"
            writes.local(f"{value}: Any = obj.{fld.attr}")
            if mode == "tagged":
                with writes.block(f"if {_differs_from_default(fld, value)}:"):
                    separators.key(fld.json_key, False)
                    _write_value(writes, fld, child, value, holding)
            else:
                separators.key(fld.json_key, True)
                _write_value(writes, fld, child, value, holding)
        writes.text("}")
        writes.flush()


def _name_topic(out: _Lines, fields: list[Field]) -> None:
    """``topic`` as this struct names it, else as given: the fields of ``_TOPIC_NAMES`` tried in
    their order, then ``topic_id`` (each applied over the one after it, so the first that names
    the topic is the one that counts)."""
    kinds = {fld.attr: fld.type.kind for fld in fields}
    if kinds.get("topic_id") == "uuid":
        out("topic = _topic_by_id(obj.topic_id, topic)")
    for attr in reversed(_TOPIC_NAMES):
        if kinds.get(attr) == "string":
            out(f"topic = _topic_by_name(obj.{attr}, topic)")


def _write_value(
    writes: _Writes, fld: Field, child: str | None, value: str, holding: set[str]
) -> None:
    """The statements writing the field's JSON value, ``value`` being a local holding it."""
    kind = fld.type.kind
    if kind not in ("array", "struct", "records"):
        writes(f"{_SCALAR_WRITERS[kind]}(w, {value})")
        return
    with writes.block(f"if {value} is None:"):
        writes.text("null")
    with writes.block("else:"):
        if kind == "records":
            writes(f"records(w, {value}, topic)")
            return
        if kind == "struct":
            assert child is not None  # the plan gives a present struct field its table
            writes(_table_call(child, value, holding))
            return
        if child is not None:
            item = _table_call(child, "item", holding)
        else:
            element = fld.type.element
            assert element is not None
            item = f"{_SCALAR_WRITERS[element.kind]}(w, item)"
        writes.text("[")
        writes.local("first = True")
        with writes.block(f"for item in {value}:"):
            with writes.block("if not first:"):
                writes.text(",")
            writes("first = False")
            writes(item)
        writes.text("]")


def _table_call(child: str, value: str, holding: set[str]) -> str:
    """The call of a nested table's writer on ``value``."""
    suffix = _suffix(child)
    passed = ", records, topic" if suffix in holding else ""
    return f"_t_{suffix}({value}, w{passed})"


def _top_value(table: JsonTable, json_key: str) -> str | None:
    """The expression of the view's value under a top-level ``json_key`` ("None" without it);
    None when the key is a tagged field's (``text_tables``)."""
    for fld, mode, _, _ in table.entries:
        if fld.json_key == json_key and mode != "absent":
            return f"obj.{fld.attr}" if mode == "inline" else None
    return "None"


def _dispatch(out: _Lines, plan: MessagePlan, written: set[str], holding: set[str]) -> None:
    name = plan.root.class_name
    groups: dict[str, list[int]] = {}
    tops: dict[str, str] = {}
    for version, table in plan.root_json.items():
        if table.suffix in written:
            groups.setdefault(table.suffix, []).append(version)
            tops[table.suffix] = ", ".join(str(_top_value(table, key)) for key in _TOP_KEYS)
    out("")
    out("")
    params = f"obj: {name}, version: int, records: Any"
    with out.block(f"def _text_root_{name}({params}) -> tuple[str, Any, Any]:"):
        out('"""to_json_text\'s answer; _Invalid for a version without a writer."""')
        for suffix, versions in groups.items():
            test = " or ".join(f"version == {v}" for v in versions)
            with out.block(f"if {test}:"):
                out("w = StringWriter()")
                passed = ", records, None" if suffix in holding else ""
                out(f"_t_{suffix}(obj, w{passed})")
                out(f"return w.getvalue(), {tops[suffix]}")
        out("raise _Invalid()")
