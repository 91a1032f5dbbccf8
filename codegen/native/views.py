"""JSON views of the native module: one typed function per JSON table, and the root's dispatch.

A pure class turns itself into Kafka's JsonConverter form by walking its ``JsonLayout`` (the runtime's
``_json.to_json``), field by field; the compiled classes would have to become pure objects to be
walked so. Here each JSON table of the plan (the layouts that look the same to JSON, whatever their
wire encoding) becomes straight-line code building the same dict: the fields in the table's order
(which is the key order), absent ones left out, tagged ones only when they differ from their default
(the pure view's test), nulls as null, uuids, bytes and records as the runtime's converters write
them (``_uuid_to_json`` and ``_bytes_to_json`` of the module's helpers). A caller that views each
records field's batches itself (the Spark decoders) asks ``to_json(version, raw_records=True)``:
records fields then hold their bytes, and no base64 is made only to be dropped.

Anything these functions do not take (a value of another type than the field's, a version without a
view, a table that holds a float64, which stays the runtime's to write) makes the root's ``to_json``
ask the pure twin instead, so the result and the errors stay the pure codec's.
"""

from __future__ import annotations

from ..model import Field
from ..plan import JsonTable, MessagePlan, _ranges
from ..python_values import literal, non_default_test
from .lines import Lines as _Lines

_TABLE_PREFIX = "_JSON_"  # how the plan names a nested table (the pure module's constant)


def json_view_functions(out: _Lines, plan: MessagePlan) -> None:
    """Emit ``_j_<table>`` per JSON table a root's view reaches (nested before parents) and
    ``_json_root_<Root>``."""
    viewed = viewable_tables(plan)
    raw = _tables_with_records(plan)
    versions = _message_versions(plan)
    reached = reached_tables(plan, viewed)
    for table in plan.json_tables:
        if table.suffix in reached:
            where = f"{plan.spec.stem} v{_ranges(versions[table.suffix])}"
            if table.class_name != plan.root.class_name:
                where = f"{table.class_name} in {where}"
            _view_function(out, table, where, raw)
    _dispatch(out, plan, viewed, raw)


def _message_versions(plan: MessagePlan) -> dict[str, list[int]]:
    """Per table, the versions of the message whose JSON holds it (the root's, or a parent's)."""
    tables = {table.suffix: table for table in plan.json_tables}
    versions: dict[str, list[int]] = {suffix: [] for suffix in tables}

    def visit(suffix: str, version: int) -> None:
        if version not in versions[suffix]:
            versions[suffix].append(version)
            for _, mode, child, _ in tables[suffix].entries:
                if child is not None and mode != "absent":
                    visit(_suffix(child), version)

    for version, table in plan.root_json.items():
        visit(table.suffix, version)
    return {suffix: sorted(found) for suffix, found in versions.items()}


def viewable_tables(plan: MessagePlan) -> set[str]:
    """Suffixes of the tables that get a compiled view: those without a float64 field, in them or
    in a table nested in them (the tables come nested first)."""
    viewable: set[str] = set()
    for table in plan.json_tables:
        present = [(fld, child) for fld, mode, child, _ in table.entries if mode != "absent"]
        if any(_holds_float(fld) for fld, _ in present):
            continue
        if all(child is None or _suffix(child) in viewable for _, child in present):
            viewable.add(table.suffix)
    return viewable


def reached_tables(plan: MessagePlan, usable: set[str]) -> set[str]:
    """Suffixes of the tables in ``usable`` that the root's tables in it nest, themselves
    included: a table nested only in a table without a function (one holding a float64) would get
    a function no one calls."""
    tables = {table.suffix: table for table in plan.json_tables}
    pending = [table.suffix for table in plan.root_json.values() if table.suffix in usable]
    reached: set[str] = set()
    while pending:
        suffix = pending.pop()
        if suffix not in reached:
            reached.add(suffix)
            for _, mode, child, _ in tables[suffix].entries:
                if child is not None and mode != "absent":
                    pending.append(_suffix(child))
    return reached


def _tables_with_records(plan: MessagePlan) -> set[str]:
    """Suffixes of the tables with a records field, in them or in a table nested in them: their
    view functions take ``raw_records`` (the tables come nested first)."""
    found: set[str] = set()
    for table in plan.json_tables:
        for fld, mode, child, _ in table.entries:
            if mode != "absent" and (
                fld.type.kind == "records" or child is not None and _suffix(child) in found
            ):
                found.add(table.suffix)
    return found


def _holds_float(fld: Field) -> bool:
    element = fld.type.element
    return fld.type.kind == "float64" or (element is not None and element.kind == "float64")


def _suffix(child_table: str) -> str:
    return child_table[len(_TABLE_PREFIX) :]


def _view_function(out: _Lines, table: JsonTable, where: str, raw: set[str]) -> None:
    """A dict literal of the leading inline fields, then one statement per later field."""
    name = table.class_name
    takes = ", raw_records: bool" if table.suffix in raw else ""
    out("")
    out("")
    with out.block(f"def _j_{table.suffix}(obj: {name}{takes}) -> dict[str, Any]:"):
        out(f'"""The JSON of {where} (``_JSON_{table.suffix}``)."""')
        present = [entry for entry in table.entries if entry[1] != "absent"]
        leading = 0
        while leading < len(present) and present[leading][1] == "inline":
            leading += 1
        items = [
            f'"{fld.json_key}": {_value(out, fld, child, raw)}'
            for fld, _, child, _ in present[:leading]
        ]
        out("out: dict[str, Any] = {" + ", ".join(items) + "}")
        for fld, mode, child, _ in present[leading:]:
            if mode == "tagged":
                out(f"v_{fld.attr}: Any = obj.{fld.attr}")
                with out.block(f"if {_differs_from_default(fld, f'v_{fld.attr}')}:"):
                    out(f'out["{fld.json_key}"] = {_converted(fld, child, f"v_{fld.attr}", raw)}')
            else:
                out(f'out["{fld.json_key}"] = {_value(out, fld, child, raw)}')
        out("return out")


def _differs_from_default(fld: Field, value: str) -> str:
    """The pure view's test ``value != default``. It is the writer's test, except for a uuid: the
    writer compares ``.int`` (a value there is a UUID), where a view may be shown a null."""
    if fld.type.kind == "uuid" and not fld.default_is_null:
        return f"_uuid_differs({value}, {literal(fld.default)})"
    return non_default_test(fld, value)


def _value(out: _Lines, fld: Field, child: str | None, raw: set[str]) -> str:
    """The field's JSON value as an expression: the attribute itself when that is its JSON, else
    its conversion of a local the attribute is read into (emitted here)."""
    converted = _converted(fld, child, f"v_{fld.attr}", raw)
    if converted == f"v_{fld.attr}":
        return f"obj.{fld.attr}"
    out(f"v_{fld.attr}: Any = obj.{fld.attr}")
    return converted


def _converted(fld: Field, child: str | None, value: str, raw: set[str]) -> str:
    """The expression for the field's JSON value; ``value`` is the local holding it."""
    kind = fld.type.kind
    if kind == "records":  # its bytes when the caller views the batches itself
        return f"{value} if raw_records or {value} is None else _bytes_to_json({value})"
    if kind == "array" and child is not None:
        convert = f"[{_table_call(child, 'item', raw)} for item in {value}]"
    elif kind == "array":
        element = fld.type.element
        assert element is not None
        item = _scalar("item", element.kind)
        convert = f"list({value})" if item == "item" else f"[{item} for item in {value}]"
    elif kind == "struct":
        assert child is not None  # the plan gives a present struct field its table
        convert = _table_call(child, value, raw)
    else:
        convert = _scalar(value, kind)
        if convert == value:
            return value  # null is null, and every other value is its own JSON
    return f"None if {value} is None else {convert}"


def _table_call(child: str, value: str, raw: set[str]) -> str:
    """The call of a nested table's view function on ``value``."""
    suffix = _suffix(child)
    return f"_j_{suffix}({value}{', raw_records' if suffix in raw else ''})"


def _scalar(value: str, kind: str) -> str:
    if kind == "uuid":
        return f"_uuid_to_json({value})"
    if kind == "bytes":
        return f"_bytes_to_json({value})"
    return value


def _dispatch(out: _Lines, plan: MessagePlan, viewed: set[str], raw: set[str]) -> None:
    name = plan.root.class_name
    groups: dict[str, list[int]] = {}
    for version, table in plan.root_json.items():
        if table.suffix in viewed:
            groups.setdefault(table.suffix, []).append(version)
    out("")
    out("")
    params = f"obj: {name}, version: int, raw_records: bool = False"
    with out.block(f"def _json_root_{name}({params}) -> dict[str, Any]:"):
        out(
            '"""to_json\'s dict; _Invalid where the pure twin writes it (float64, no such version)."""'
        )
        for suffix, versions in groups.items():
            test = " or ".join(f"version == {v}" for v in versions)
            with out.block(f"if {test}:"):
                out(f"return _j_{suffix}(obj{', raw_records' if suffix in raw else ''})")
        out("raise _Invalid()")
