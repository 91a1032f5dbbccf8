"""Render the typed module of one spec that mypyc compiles: native classes, readers and writers.

The module mirrors the pure module's reads and writes step for step but reads integers with
``librt.strings``, varints, lengths, strings, bytes and uuids with typed helpers compiled into it
(``helpers.py``), writes into a ``BytesWriter`` and builds objects through the native classes'
positional constructors; only rare forms (unknown tagged fields) call the runtime. It keeps no
error detail: any failure makes the class method hand the same input to the pure twin (see
``_native_loader``), so errors, paths and every rare form come from one implementation only.
"""

from __future__ import annotations

from ..emit import format_source, init_default
from ..model import MessageSpec
from ..plan import Layout, MessagePlan, Op, StructPlan, TaggedOp, plan_message
from ..python_values import default_expr, non_default_test
from .lines import Lines as _Lines
from .lines import Unsupported
from .helpers import names_in
from .prelude import header as _header
from .texts import json_text_functions as _json_texts
from .views import json_view_functions as _json_views
from .writers import write_function as _writer

# Fixed-width kinds read straight from the buffer: kind -> (read expression, size). ``{p}`` is the
# offset. librt has signed 16/32/64-bit and float helpers; the rest are derived from them.
_READS = {
    "int8": ("_i8(buf[{p}])", 1),
    "int16": ("read_i16_be(buf, {p})", 2),
    "uint16": ("(int(read_i16_be(buf, {p})) & 0xFFFF)", 2),
    "int32": ("read_i32_be(buf, {p})", 4),
    "uint32": ("(int(read_i32_be(buf, {p})) & 0xFFFFFFFF)", 4),
    "int64": ("read_i64_be(buf, {p})", 8),
    "float64": ("read_f64_be(buf, {p})", 8),
}
# attributes of the root class that a field must not shadow
_RESERVED = {
    "decode",
    "read",
    "encode",
    "write",
    "encoded_size",
    "to_json",
    "to_json_text",
    "from_json",
}


def native_module_name(spec: MessageSpec) -> str:
    return f"_native_{spec.module}"


def render_native_module(spec: MessageSpec, package: str) -> str:
    """The formatted source of ``_native_<module>.py``; raises Unsupported."""
    return format_source(native_module_source(spec, package), native_module_name(spec))


def native_module_source(spec: MessageSpec, package: str) -> str:
    """The same source before black formats it (tests run it interpreted, where speed matters)."""
    plan = plan_message(spec)
    for sp in plan.structs:
        if any(fld.attr in _RESERVED for fld in sp.struct.fields):
            raise Unsupported(f"{spec.stem}: a field is named like a codec method")
    classes, out = _Lines(), _Lines()
    for sp in plan.structs:
        _class(classes, plan, sp)
    for sp in plan.structs:
        for layout in sp.layouts:
            _reader(out, layout)
            _writer(out, layout)
    _dispatch(out, plan)
    _json_views(out, plan)
    _json_texts(out, plan)
    _defaults(classes, plan, names_in("\n".join(classes.lines + out.lines)))
    body = "\n".join(classes.lines + out.lines) + "\n"
    opening = _Lines()
    _header(opening, spec, package, body)
    return "\n".join(opening.lines) + "\n" + body


def _class(out: _Lines, plan: MessagePlan, sp: StructPlan) -> None:
    is_root = sp is plan.root
    fields = sp.struct.fields
    out("")
    out("")
    with out.block(f"class {sp.class_name}:"):
        out(f'"""{sp.struct.name} (compiled)."""')
        out("")
        if is_root:
            _root_constants(out, plan.spec)
        kinds = ", ".join(f'"{f.attr}": "{f.type.kind}"' for f in fields)
        out(f"_KINDS: ClassVar[dict[str, str]] = {{{kinds}}}")
        keys = "".join(f'"{f.attr}", ' for f in sp.struct.map_key_fields)
        out(f"_MAP_KEY: ClassVar[tuple[str, ...]] = ({keys})")
        for fld in fields:
            out(f"{fld.attr}: Any")
        out("unknown_tagged_fields: Any")
        out("")
        params = "".join(f"{f.attr}: Any = {init_default(f)}, " for f in fields)
        with out.block(f"def __init__(self, {params}unknown_tagged_fields: Any = None) -> None:"):
            for fld in fields:
                if init_default(fld) == "_DEFAULT":
                    value = f"{default_expr(fld)} if {fld.attr} is _DEFAULT else {fld.attr}"
                else:
                    value = fld.attr
                out(f"self.{fld.attr} = {value}")
            out("self.unknown_tagged_fields = unknown_tagged_fields")
        out("")
        with out.block("def __eq__(self, other: object) -> bool:"):
            with out.block(f"if not isinstance(other, {sp.class_name}):"):
                out("return False")
            tests = [f"self.{f.attr} == other.{f.attr}" for f in fields]
            tests.append(
                "(self.unknown_tagged_fields or None) == (other.unknown_tagged_fields or None)"
            )
            out("return bool(" + " and ".join(tests) + ")")
        out("")
        with out.block("def __ne__(self, other: object) -> bool:"):
            out("return not self.__eq__(other)")
        out("")
        with out.block("def __repr__(self) -> str:"):
            out("return repr(_twin.to_pure(self))")
        out("")
        with out.block("def _map_key(self) -> tuple[object, ...]:"):
            out("return (" + "".join(f"self.{f.attr}, " for f in sp.struct.map_key_fields) + ")")
        if is_root:
            _root_methods(out, sp.class_name)
            _json_methods(out, sp.class_name)


def _root_constants(out: _Lines, spec: MessageSpec) -> None:
    """The root class's constants: the spec's, and what its methods take."""
    out(f'SPEC_NAME: ClassVar[str] = "{spec.stem}"')
    out(f'SPEC_TYPE: ClassVar[str] = "{spec.type}"')
    out(f"API_KEY: ClassVar[int | None] = {spec.api_key}")
    out(f"LOWEST_VERSION: ClassVar[int] = {spec.valid_versions.lowest}")
    out(f"HIGHEST_VERSION: ClassVar[int] = {spec.valid_versions.highest}")
    flexible = None if spec.flexible_versions.empty else spec.flexible_versions.lowest
    out(f"LOWEST_FLEXIBLE_VERSION: ClassVar[int | None] = {flexible}")
    out("# to_json is compiled here (see _json_root_*), not the pure twin's walk")
    out("COMPILED_JSON_VIEW: ClassVar[bool] = True")
    out("# to_json takes raw_records (a build before it did not)")
    out("RAW_RECORDS_JSON_VIEW: ClassVar[bool] = True")
    out("# to_json_text takes a writer of records fields (a build before it did not)")
    out("RECORDS_JSON_TEXT: ClassVar[bool] = True")


def _root_methods(out: _Lines, name: str) -> None:
    """The root's codec methods, each by its compiled function, else by the pure twin."""
    suffix = name
    out(f'''
    @classmethod
    def decode(cls, data: Any, version: Any) -> {name}:
        """Decode exactly all of ``data`` as this message at ``version``."""
        buf: bytes = data if type(data) is bytes else bytes(data)
        try:
            found = _read_root_{suffix}(buf, 0, version)
            if found[1] == len(buf):
                return found[0]
        except Exception:
            pass
        decoded: {name} = _twin.decode(buf, version)
        return decoded

    @classmethod
    def read(cls, buf: Any, pos: Any, version: Any) -> tuple[{name}, int]:
        """Decode one message starting at ``pos``; returns ``(message, position after it)``."""
        try:
            if type(buf) is bytes:
                return _read_root_{suffix}(buf, pos, version)
        except Exception:
            pass
        found: tuple[{name}, int] = _twin.read(buf, pos, version)
        return found

    def encode(self, version: Any) -> bytes:
        w = BytesWriter()
        try:
            _write_root_{suffix}(self, w, version)
            return w.getvalue()
        except Exception:
            pass
        encoded: bytes = _twin.encode(self, version)
        return encoded

    def write(self, out: Any, version: Any) -> None:
        """Append this message's encoding at ``version`` to ``out``."""
        out += self.encode(version)

    def encoded_size(self, version: Any) -> int:
        return len(self.encode(version))
'''.rstrip())


def _json_methods(out: _Lines, name: str) -> None:
    """The root's JSON methods: the compiled view and text, and from_json (the twin's)."""
    suffix = name
    out(f'''
    def to_json(self, version: Any, raw_records: bool = False) -> dict[str, Any]:
        """Kafka's JsonConverter form: the compiled view, or the twin's for what it does not take;
        ``raw_records`` leaves the view's records fields as bytes (for a caller that views them)."""
        try:
            return _json_root_{suffix}(self, version, raw_records)
        except Exception:
            pass
        found: dict[str, Any] = _twin.to_pure(self).to_json(version)
        return found

    def to_json_text(self, version: Any, records: Any = None) -> tuple[str, Any, Any] | None:
        """``to_json``'s dict as compact text (orjson's), with its top-level errorCode and
        throttleTimeMs (None when absent), each records field's text written by ``records(w,
        data, topic)``; None where only the dict is made (see texts.py)."""
        try:
            return _text_root_{suffix}(self, version, records)
        except Exception:
            return None

    @classmethod
    def from_json(cls, obj: Any, version: Any) -> {name}:
        made: {name} = _twin.from_json(obj, version)
        return made
'''.rstrip())


def _defaults(out: _Lines, plan: MessagePlan, used: set[str]) -> None:
    """The default objects of struct fields that the module's code (``used``, its names) reads."""
    names = sorted(
        {
            fld.type.struct_name
            for sp in plan.structs
            for fld in sp.struct.fields
            if fld.type.struct_name is not None
            and fld.type.kind == "struct"
            and not fld.default_is_null
            and f"_DEFAULT_{fld.type.struct_name}" in used
        }
    )
    out("")
    for name in names:
        out(f"_DEFAULT_{name}: Final = {name}()")


# -- readers ---------------------------------------------------------------------------------------


def _reader(out: _Lines, layout: Layout) -> None:
    cls = layout.struct.name
    out("")
    out("")
    with out.block(f"def _r_{layout.suffix}(buf: bytes, pos: int) -> tuple[{cls}, int]:"):
        values: dict[str, str] = {}
        for op in layout.ops:
            if op.kind == "absent":
                values[op.attr] = default_expr(op.one_field)
            elif op.kind == "run":
                _read_run(out, op)
                for fld in op.fields:
                    values[fld.attr] = f"v_{fld.attr}"
            else:
                _read_value(out, op, f"v_{op.attr}")
                values[op.attr] = f"v_{op.attr}"
        for t in layout.tagged:
            out(f"v_{t.op.attr}: Any = {default_expr(t.op.one_field)}")
            values[t.op.attr] = f"v_{t.op.attr}"
        if layout.flexible:
            _read_tags(out, layout)
        args = ", ".join(values[f.attr] for f in layout.struct.fields)
        unknown = "unknown" if layout.flexible else "None"
        out(f"return {cls}({args}{', ' if args else ''}{unknown}), pos")


def _read_run(out: _Lines, op: Op, prefix: str = "v_") -> None:
    out(f"if pos + {op.size} > len(buf):")
    out("    raise _Invalid()")
    offset = 0
    for fld in op.fields:
        kind = fld.type.kind
        at = f"pos + {offset}" if offset else "pos"
        target = f"{prefix}{fld.attr}"
        _read_fixed_value(out, kind, at, f"{target}_byte", f"{target}: Any = {{}}")
        size = fld.type.fixed_size
        assert size is not None  # a run holds fixed-size fields only
        offset += size
    out(f"pos += {op.size}")


def _read_value(out: _Lines, op: Op, target: str) -> None:
    """Read one non-run value at ``pos`` into ``target`` (declared here as Any)."""
    out(f"{target}: Any = None")
    if op.kind == "string":
        helper = "_read_compact_string" if op.compact else "_read_string"
        out(f"{target}, pos = {helper}(buf, pos)")
    elif op.kind in ("bytes", "records"):
        helper = "_read_compact_bytes" if op.compact else "_read_bytes"
        out(f"{target}, pos = {helper}(buf, pos)")
    elif op.kind == "struct" and op.nullable:
        with out.block("if buf[pos] == 1:"):
            out(f"{target}, pos = _r_{op.child_layout.suffix}(buf, pos + 1)")
        with out.block("elif buf[pos] == 0xFF:"):
            out("pos += 1")
        with out.block("else:"):
            out("raise _Invalid()")
        return
    elif op.kind == "struct":
        out(f"{target}, pos = _r_{op.child_layout.suffix}(buf, pos)")
        return
    elif op.kind == "array":
        _read_array(out, op, target)
        return
    else:
        raise Unsupported(f"no native reader for {op.kind}")
    if not op.nullable:
        out(f"if {target} is None:")
        out("    raise _Invalid()")


def _read_array(out: _Lines, op: Op, target: str) -> None:
    # Every loop bound is a variable of its own, never assigned inside the loop (mypyc once
    # mis-compiled a range() whose bound variable was reassigned in the loop body).
    count = f"count_{op.attr}"
    items = f"items_{op.attr}"
    helper = "_read_compact_array_count" if op.compact else "_read_array_count"
    out(f"{count}, pos = {helper}(buf, pos)")
    with out.block(f"if {count} < 0:"):
        out("pass" if op.nullable else "raise _Invalid()")
    with out.block("else:"):
        if op.child is not None:
            cls = op.child.struct.name
            if op.map_key_list:
                out(f"{items}: Any = _MapKeyList()")
            else:
                out(f"{items}: list[{cls}] = []")
            with out.block(f"for _ in range({count}):"):
                out(f"item_{op.attr}, pos = _r_{op.child_layout.suffix}(buf, pos)")
                out(f"{items}.append(item_{op.attr})")
        elif op.element_code:
            _read_fixed_elements(out, op, count, items)
        else:
            helper = "_read_compact_string" if op.compact else "_read_string"
            out(f"{items}: list[Any] = []")
            with out.block(f"for _ in range({count}):"):
                out(f"item_{op.attr}, pos = {helper}(buf, pos)")
                out(f"if item_{op.attr} is None:")
                out("    raise _Invalid()")
                out(f"{items}.append(item_{op.attr})")
        out(f"{target} = {items}")


def _read_fixed_elements(out: _Lines, op: Op, count: str, items: str) -> None:
    """The ``count`` elements of an array of fixed-width values, all checked to be there first."""
    kind = op.element_kind
    size = {"bool": 1, "uuid": 16}.get(kind) or _READS[kind][1]
    out(f"if pos + {size} * {count} > len(buf):")
    out("    raise _Invalid()")
    out(f"{items}: list[Any] = []")
    with out.block(f"for _ in range({count}):"):
        _read_fixed_value(out, kind, "pos", "byte", f"{items}.append({{}})")
        out(f"pos += {size}")


def _read_fixed_value(out: _Lines, kind: str, at: str, byte: str, store: str) -> None:
    """One fixed-width value of ``kind`` read at ``at``, put where ``store`` (a format string with
    one ``{}`` for the value) says; a bool's byte is held in ``byte`` to be checked first."""
    if kind == "bool":
        out(f"{byte} = buf[{at}]")
        out(f"if {byte} > 1:")
        out("    raise _Invalid()")
        out(store.format(f"{byte} == 1"))
    elif kind == "uuid":
        out(store.format(f"_read_uuid(buf, {at})"))
    else:
        out(store.format(_READS[kind][0].format(p=at)))


def _read_tags(out: _Lines, layout: Layout) -> None:
    out("unknown: Any = None")
    with out.block("if buf[pos] == 0:"):
        out("pos += 1")
    with out.block("else:"):
        if not layout.tagged:
            out(f"unknown, pos = _skip_unknown_tags(buf, pos, {layout.declared_tags})")
            return
        out("previous = -1")
        out("tag_count, pos = _read_tag_count(buf, pos)")
        out("tag_index = 0")
        with out.block("while tag_index < tag_count:"):
            out("at = pos")
            out("tag, pos = _read_uvarint(buf, pos)")
            out("tag_size, pos = _read_tag_size(buf, pos)")
            out("if tag <= previous:")
            out("    raise _Invalid()")
            out("previous = tag")
            out("start = pos")
            for i, t in enumerate(layout.tagged):
                with out.block(f"{'if' if i == 0 else 'elif'} tag == {t.tag}:"):
                    _read_tagged_value(out, t)
            if len(layout.tagged) < layout.declared_tags:
                with out.block(f"elif tag < {layout.declared_tags}:"):
                    out("raise _Invalid()")
            with out.block("else:"):
                out(
                    "unknown, pos = _read_raw_tags("
                    f"buf, at, tag_count - tag_index, {layout.declared_tags})"
                )
                out("break")
            out("if pos - start != tag_size:")
            out("    raise _Invalid()")
            out("tag_index += 1")


def _read_tagged_value(out: _Lines, t: TaggedOp) -> None:
    target = f"v_{t.op.attr}"
    value = f"t_{t.op.attr}"
    if t.marker:
        out("marker, pos = _read_uvarint(buf, pos)")
        out(f"{value}: Any = None")
        with out.block("if marker == 1:"):
            out(f"{value}, pos = _r_{t.op.child_layout.suffix}(buf, pos)")
        with out.block("elif marker != 0:"):
            out("raise _Invalid()")
    elif t.op.kind == "run":
        _read_run(out, t.op, "t_")
    else:
        _read_value(out, t.op, value)
    out(f"if not ({non_default_test(t.op.one_field, value)}):")
    out("    raise _Invalid()")
    out(f"{target} = {value}")


def _dispatch(out: _Lines, plan: MessagePlan) -> None:
    root = plan.root
    name = root.class_name
    groups: dict[str, list[int]] = {}
    for version, layout in root.by_version.items():
        groups.setdefault(layout.suffix, []).append(version)
    out("")
    out("")
    with out.block(
        f"def _read_root_{name}(buf: bytes, pos: int, version: int) -> tuple[{name}, int]:"
    ):
        for suffix, versions in groups.items():
            test = " or ".join(f"version == {v}" for v in versions)
            with out.block(f"if {test}:"):
                out(f"return _r_{suffix}(buf, pos)")
        out("raise _Invalid()")
    out("")
    out("")
    with out.block(f"def _write_root_{name}(obj: {name}, w: BytesWriter, version: int) -> None:"):
        for suffix, versions in groups.items():
            test = " or ".join(f"version == {v}" for v in versions)
            with out.block(f"if {test}:"):
                out(f"_w_{suffix}(obj, w)")
                out("return")
        out("raise _Invalid()")
