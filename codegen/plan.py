"""Codec plans: for each struct and version, the exact wire layout, grouped into distinct layouts.

A layout is the ordered list of operations that read or write one struct at one version. Versions
whose layouts are identical (including the layouts of every nested struct) share one generated
function, so the emitted code has one specialised reader and writer per distinct wire format and no
version checks at run time. Adjacent fixed-width fields become one ``struct.Struct`` run.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as _field

from .model import Field, FieldType, MessageSpec, Struct, snake_case
from .python_values import default_expr, non_default_test

STRUCT_CODES = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "16s",
}


@dataclass
class Op:
    """One step of a layout. ``kind`` picks the template macro that renders it."""

    kind: str  # run | string | bytes | records | struct | array | absent
    field: Field | None = None
    compact: bool = False
    nullable: bool = False
    child: "Layout | None" = None  # struct / struct-array element layout at this version
    # run only
    fields: list[Field] = _field(default_factory=list)
    struct_name: str = ""
    size: int = 0
    # array of primitives
    element_code: str = ""

    @property
    def attr(self) -> str:
        """The single field's attribute ("" for a run of several fields)."""
        return self.field.attr if self.field is not None else ""

    @property
    def one_field(self) -> Field:
        """The field of an op that reads or writes one field (every kind but a run of several)."""
        assert self.field is not None
        return self.field

    @property
    def child_layout(self) -> Layout:
        """The element layout of a struct or struct-array op."""
        assert self.child is not None
        return self.child

    @property
    def path(self) -> str:
        if self.kind == "run":
            return ",".join(f.attr for f in self.fields)
        return self.attr

    @property
    def default(self) -> str:
        assert self.field is not None
        return default_expr(self.field)

    @property
    def non_default(self) -> str:
        assert self.field is not None
        return non_default_test(self.field, f"obj.{self.attr}")

    def non_default_of(self, obj: str) -> str:
        """The writer's "must be written" test, applied to ``obj`` (a reader's object variable)."""
        assert self.field is not None
        return non_default_test(self.field, f"{obj}.{self.attr}")

    @property
    def bool_offsets(self) -> list[tuple[int, str]]:
        """Byte offset and attribute of each bool field inside a run (its byte must be 0 or 1)."""
        offsets, offset = [], 0
        for fld in self.fields:
            if fld.type.kind == "bool":
                offsets.append((offset, fld.attr))
            offset += fld.type.fixed_size or 0
        return offsets

    @property
    def uuid_attrs(self) -> list[str]:
        return [f.attr for f in self.fields if f.type.kind == "uuid"]

    @property
    def element_kind(self) -> str:
        assert self.field is not None and self.field.type.element is not None
        return self.field.type.element.kind

    @property
    def map_key_list(self) -> bool:
        return self.child is not None and bool(self.child.struct.map_key_fields)


@dataclass
class TaggedOp:
    tag: int
    op: Op  # how the value itself is read/written (always compact)
    null_form: bool  # nullable with a non-null default: a null is sent as one 00 byte
    marker: bool  # nullable struct: uvarint presence marker inside the value


@dataclass(eq=False)
class Layout:
    struct: Struct
    versions: list[int]
    ops: list[Op]
    tagged: list[TaggedOp]
    flexible: bool
    declared_tags: int  # tags 0..declared_tags-1 exist in some version of the struct
    entries: list[
        tuple[Field, str, Op | None]
    ]  # per field in declaration order: inline/tagged/absent
    reader_called: bool = False  # some reader calls this layout's reader (else it is only inlined)
    # When the struct is one run of plain fixed-width fields (plus, if flexible, its tagged section):
    # the struct.Struct name of a whole element with an empty tagged section, and its size.
    row_struct: str = ""
    row_size: int = 0

    @property
    def row_run(self) -> Op:
        return next(op for op in self.ops if op.kind == "run")

    @property
    def first(self) -> int:
        return self.versions[0]

    @property
    def suffix(self) -> str:
        return f"{snake_case(self.struct.name)}_v{self.first}"

    @property
    def version_text(self) -> str:
        return _ranges(self.versions)

    @property
    def is_leaf(self) -> bool:
        """No arrays of structs inside: small enough to inline into a parent's element loop."""
        return not any(op.kind == "array" and op.child is not None for op in self.ops) and not any(
            t.op.kind == "array" and t.op.child is not None for t in self.tagged
        )

    @property
    def absent_ops(self) -> list[Op]:
        return [op for op in self.ops if op.kind == "absent"]


@dataclass(eq=False)
class StructPlan:
    struct: Struct
    class_name: str
    layouts: list[Layout]
    by_version: dict[int, Layout]


@dataclass(eq=False)
class JsonTable:
    """The JSON view of a struct: layouts that differ only in wire encoding share one table."""

    class_name: str
    suffix: str
    entries: list[tuple[Field, str, str | None, bool]]  # field, mode, child table name, nullable
    map_key: bool


@dataclass(eq=False)
class MessagePlan:
    spec: MessageSpec
    structs: list[StructPlan]  # dependency order: nested before parents, root last
    root: StructPlan
    run_formats: list[tuple[str, str]]  # (constant name, struct format)
    json_tables: list[JsonTable] = _field(default_factory=list)  # dependency order
    root_json: dict[int, JsonTable] = _field(default_factory=dict)


def plan_message(spec: MessageSpec) -> MessagePlan:
    builder = _Planner(spec)
    for version in spec.valid_versions:
        builder.layout(spec.root, version)
    return builder.finish()


class _Planner:
    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        self.plans: dict[str, StructPlan] = {}
        self.keys: dict[str, dict[tuple[object, ...], Layout]] = {}
        self.formats: dict[str, str] = {}

    def layout(self, struct: Struct, version: int) -> Layout:
        plan = self.plans.get(struct.name)
        if plan is not None and version in plan.by_version:
            return plan.by_version[version]
        ops, tagged, entries, key = self._ops(struct, version)
        flexible = version in self.spec.flexible_versions
        key = (key, flexible)
        if plan is None:
            plan = StructPlan(struct, struct.name, [], {})
            self.plans[struct.name] = plan
            self.keys[struct.name] = {}
        layout = self.keys[struct.name].get(key)
        if layout is None:
            declared = sum(1 for f in struct.fields if f.tag is not None)
            layout = Layout(struct, [], ops, tagged, flexible, declared, entries)
            runs = [op for op in ops if op.kind == "run"] + [
                t.op for t in tagged if t.op.kind == "run"
            ]
            for run in runs:
                codes = "".join(STRUCT_CODES[f.type.kind] for f in run.fields)
                run.struct_name = self._format(">" + codes)
            self.keys[struct.name][key] = layout
            plan.layouts.append(layout)
        layout.versions.append(version)
        plan.by_version[version] = layout
        return layout

    def _plan_row(self, layout: Layout) -> None:
        """Arrays of such structs are read a whole array at a time when no element has tags."""
        present = [op for op in layout.ops if op.kind != "absent"]
        if len(present) != 1 or present[0].kind != "run":
            return
        run = present[0]
        if any(f.type.kind in ("uuid", "bool") for f in run.fields):
            return  # those need a conversion or a check per element
        codes = "".join(STRUCT_CODES[f.type.kind] for f in run.fields)
        layout.row_struct = self._format(">" + codes + ("x" if layout.flexible else ""))
        layout.row_size = run.size + (1 if layout.flexible else 0)

    def _format(self, fmt: str) -> str:
        if fmt not in self.formats:
            self.formats[fmt] = f"_S{len(self.formats)}"
        return self.formats[fmt]

    def _ops(
        self, struct: Struct, version: int
    ) -> tuple[list[Op], list[TaggedOp], list[tuple[Field, str, Op | None]], tuple[object, ...]]:
        flexible = self.spec.flexible_versions
        ops: list[Op] = []
        tagged: list[TaggedOp] = []
        entries: list[tuple[Field, str, Op | None]] = []
        key: list[tuple[object, ...]] = []
        for fld in struct.fields:
            if version not in fld.versions:
                ops.append(Op("absent", fld))
                entries.append((fld, "absent", None))
                key.append((fld.name, "absent"))
                continue
            nullable = version in fld.nullable_versions
            if version in fld.tagged_versions:
                op = self._value_op(fld, version, compact=True, nullable=nullable)
                null_form = nullable and not fld.default_is_null
                marker = nullable and fld.type.is_struct
                assert fld.tag is not None
                tagged.append(TaggedOp(fld.tag, op, null_form, marker))
                entries.append((fld, "tagged", op))
                key.append((fld.name, "tagged", nullable, _child_id(op)))
                continue
            compact = version in (fld.flexible_versions or flexible)
            op = self._value_op(fld, version, compact, nullable)
            entries.append((fld, "inline", op))
            key.append((fld.name, "inline", compact, nullable, _child_id(op)))
            if op.kind == "run" and ops and ops[-1].kind == "run":
                merged = ops[-1]
                if merged.field is not None and len(merged.fields) == 1:
                    # the first field's own op stays in `entries`; the run gets a copy
                    merged = Op("run", fields=list(merged.fields), size=merged.size)
                    ops[-1] = merged
                merged.fields.extend(op.fields)
                merged.size += op.size
            else:
                ops.append(op)
        tagged.sort(key=lambda t: t.tag)
        return ops, tagged, entries, tuple(key)

    def _value_op(self, fld: Field, version: int, compact: bool, nullable: bool) -> Op:
        ftype: FieldType = fld.type
        if ftype.fixed_size is not None:
            return Op("run", fields=[fld], size=ftype.fixed_size, field=fld)
        if ftype.kind in ("string", "bytes", "records"):
            return Op(ftype.kind, fld, compact, nullable)
        if ftype.is_struct:
            assert fld.struct is not None
            return Op("struct", fld, compact, nullable, self.layout(fld.struct, version))
        element = ftype.element
        assert element is not None
        if element.is_struct:
            assert fld.struct is not None
            return Op("array", fld, compact, nullable, self.layout(fld.struct, version))
        return Op("array", fld, compact, nullable, element_code=STRUCT_CODES.get(element.kind, ""))

    def finish(self) -> MessagePlan:
        ordered = _dependency_order(self.plans)
        root = self.plans[self.spec.root.name]
        for inlined in _mark_called_readers(ordered, root):
            self._plan_row(inlined)
        formats = [(name, fmt) for fmt, name in self.formats.items()]  # numbered in insertion order
        plan = MessagePlan(self.spec, ordered, root, formats)
        _plan_json(plan)
        return plan


def _mark_called_readers(structs: list[StructPlan], root: StructPlan) -> list[Layout]:
    """Mark the layouts whose reader some reader calls (and the root's); return those inlined.

    read.j2 inlines the elements of an array of leaf structs read at the top of a function (not
    inside an element already inlined) and calls a function for everything else.
    """
    inlined: list[Layout] = []

    def visit(layout: Layout, inside_element: bool) -> None:
        for op in [*layout.ops, *(t.op for t in layout.tagged)]:
            if op.child is None:
                continue
            if op.kind == "array" and op.child.is_leaf and not inside_element:
                if op.child not in inlined:
                    inlined.append(op.child)
                visit(op.child, True)
            else:
                op.child.reader_called = True

    for layout in root.layouts:
        layout.reader_called = True
    for sp in structs:
        for layout in sp.layouts:
            visit(layout, False)
    return inlined


def _plan_json(plan: MessagePlan) -> None:
    """Group layouts by what JSON sees (modes, nullability, nested tables), not by wire encoding."""
    by_layout: dict[int, JsonTable] = {}
    for sp in plan.structs:
        seen: dict[tuple[object, ...], JsonTable] = {}
        for layout in sp.layouts:
            entries = []
            for fld, mode, op in layout.entries:
                child = op.child if op is not None else None
                child_table = by_layout[id(child)].suffix if child is not None else None
                entries.append(
                    (fld, mode, child_table and f"_JSON_{child_table}", bool(op and op.nullable))
                )
            key = tuple((fld.name, mode, child, nullable) for fld, mode, child, nullable in entries)
            table = seen.get(key)
            if table is None:
                table = JsonTable(
                    sp.class_name, layout.suffix, entries, bool(sp.struct.map_key_fields)
                )
                seen[key] = table
                plan.json_tables.append(table)
            by_layout[id(layout)] = table
    plan.root_json = {v: by_layout[id(layout)] for v, layout in plan.root.by_version.items()}


def _child_id(op: Op) -> int | None:
    return id(op.child) if op.child is not None else None


def _dependency_order(plans: dict[str, StructPlan]) -> list[StructPlan]:
    done: list[StructPlan] = []
    seen: set[str] = set()

    def visit(plan: StructPlan) -> None:
        if plan.struct.name in seen:
            return
        seen.add(plan.struct.name)
        for fld in plan.struct.fields:
            child = fld.type.struct_name
            if child is not None and child in plans:
                visit(plans[child])
        done.append(plan)

    for plan in plans.values():
        visit(plan)
    return done


def _ranges(versions: list[int]) -> str:
    parts = []
    start = prev = versions[0]
    for v in versions[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(parts)
