"""Writers of the native module: one function per wire layout, into a librt BytesWriter."""

from __future__ import annotations

from ..emit import may_be_null
from ..plan import Layout, Op, TaggedOp
from .lines import Lines as _Lines
from .lines import Unsupported

# kind -> statement writing ``{v}`` to ``{w}``; each rejects what struct.pack would reject.
_WRITES = {
    "int8": "_put_i8({w}, {v})",
    "int16": "write_i16_be({w}, {v})",
    "uint16": "_put_u16({w}, {v})",
    "int32": "write_i32_be({w}, {v})",
    "uint32": "_put_u32({w}, {v})",
    "int64": "write_i64_be({w}, {v})",
    "float64": "write_f64_be({w}, {v})",
    "bool": "{w}.append(1 if {v} else 0)",
}

# (kind, compact) -> statement writing the null of a nullable field to ``{w}``
_NULLS = {
    ("string", False): '{w}.write(b"\\xff\\xff")',
    ("string", True): "{w}.append(0)",
    ("bytes", False): '{w}.write(b"\\xff\\xff\\xff\\xff")',
    ("bytes", True): "{w}.append(0)",
    ("records", False): '{w}.write(b"\\xff\\xff\\xff\\xff")',
    ("records", True): "{w}.append(0)",
    ("array", False): '{w}.write(b"\\xff\\xff\\xff\\xff")',
    ("array", True): "{w}.append(0)",
    ("struct", False): "{w}.append(0xFF)",
    ("struct", True): "{w}.append(0xFF)",
}

# -- writers ---------------------------------------------------------------------------------------


def write_function(out: _Lines, layout: Layout) -> None:
    cls = layout.struct.name
    out("")
    out("")
    with out.block(f"def _w_{layout.suffix}(obj: {cls}, w: BytesWriter) -> None:"):
        out("value: Any = None")
        for op in layout.ops:
            if op.kind == "absent":
                if not op.one_field.ignorable:
                    out(f"if {op.non_default}:")
                    out("    raise _Invalid()")
            elif op.kind == "run":
                for fld in op.fields:
                    _write_fixed(out, fld.type.kind, f"obj.{fld.attr}", "w")
            else:
                _write_value(out, op, f"obj.{op.attr}", "w")
        _write_tags(out, layout)


def _write_fixed(out: _Lines, kind: str, value: str, w: str) -> None:
    if kind == "uuid":
        out(f"raw = {value}.bytes")
        out("if len(raw) != 16:")
        out("    raise _Invalid()")
        out(f"{w}.write(raw)")
    else:
        out(_WRITES[kind].format(w=w, v=value))


def _write_value(out: _Lines, op: Op, src: str, w: str) -> None:
    out(f"value = {src}")
    if op.kind == "run":
        _write_fixed(out, op.fields[0].type.kind, "value", w)
        return
    if op.nullable:
        null = _NULLS.get((op.kind, op.compact))
        if null is None:
            raise Unsupported(f"no native writer for a null {op.kind}")
        with out.block("if value is None:"):
            out(null.format(w=w))
        with out.block("else:"):
            _write_present(out, op, w)
        return
    if may_be_null(op.one_field) and op.kind in ("string", "struct", "array"):
        out("if value is None:")
        out("    raise _Invalid()")
    _write_present(out, op, w)


def _write_present(out: _Lines, op: Op, w: str) -> None:
    """Write ``value``, known not to be a null of a nullable field (bytes/records: not None)."""
    if op.kind in ("string", "bytes", "records"):
        kind = "string" if op.kind == "string" else "bytes"
        out(f"_put_{'compact_' if op.compact else ''}{kind}({w}, value)")
    elif op.kind == "struct":
        if op.nullable:
            out(f"{w}.append(1)")
        out(f"_w_{op.child_layout.suffix}(value, {w})")
    elif op.kind == "array":
        _write_items(out, op, w)
    else:
        raise Unsupported(f"no native writer for {op.kind}")


def _write_items(out: _Lines, op: Op, w: str) -> None:
    out("size = len(value)")
    if op.compact:
        with out.block("if size < 127:"):
            out(f"{w}.append(size + 1)")
        with out.block("else:"):
            out(f"_put_uvarint({w}, size + 1)")
    else:
        out(f"write_i32_be({w}, size)")
    with out.block("for item in value:"):
        if op.child is not None:
            out(f"_w_{op.child_layout.suffix}(item, {w})")
        elif op.element_kind == "uuid":
            out(f"{w}.write(item.bytes)")
        elif op.element_code:
            out(_WRITES[op.element_kind].format(w=w, v="item"))
        else:
            out(f"_put_{'compact_' if op.compact else ''}string({w}, item)")


def _write_tags(out: _Lines, layout: Layout) -> None:
    if not layout.flexible:
        out("if obj.unknown_tagged_fields:")
        out("    raise _Invalid()")
        return
    out("unknown: Any = obj.unknown_tagged_fields")
    if not layout.tagged:
        with out.block("if unknown:"):
            out("_put_uvarint(w, len(unknown))")
            out("raw_tags = bytearray()")
            out(f"_write_raw_tags(raw_tags, unknown, {layout.declared_tags})")
            out("w.write(raw_tags)")
        with out.block("else:"):
            out("w.append(0)")
        return
    for t in layout.tagged:
        out(f"has_{t.tag} = bool({t.op.non_default})")
    count = " + ".join(f"int(has_{t.tag})" for t in layout.tagged)
    out(f"count = {count} + (len(unknown) if unknown else 0)")
    with out.block("if count < 128:"):
        out("w.append(count)")
    with out.block("else:"):
        out("_put_uvarint(w, count)")
    for t in layout.tagged:
        with out.block(f"if has_{t.tag}:"):
            if t.null_form:
                with out.block(f"if obj.{t.op.attr} is None:"):
                    out(f"w.write(bytes([{t.tag}, 1, 0]))")
                with out.block("else:"):
                    _write_tag(out, t)
            else:
                _write_tag(out, t)
    with out.block("if unknown:"):
        out("raw_tags = bytearray()")
        out(f"_write_raw_tags(raw_tags, unknown, {layout.declared_tags})")
        out("w.write(raw_tags)")


def _write_tag(out: _Lines, t: TaggedOp) -> None:
    out(f"w.append({t.tag})")
    if t.op.kind == "run":
        out(f"w.append({t.op.size})")
        _write_fixed(out, t.op.fields[0].type.kind, f"obj.{t.op.attr}", "w")
        return
    out("tag_out = BytesWriter()")
    if t.marker:
        out("tag_out.append(1)")
        out(f"_w_{t.op.child_layout.suffix}(obj.{t.op.attr}, tag_out)")
    else:
        _write_value(out, t.op, f"obj.{t.op.attr}", "tag_out")
    out("tag_size = len(tag_out)")
    with out.block("if tag_size < 128:"):
        out("w.append(tag_size)")
    with out.block("else:"):
        out("_put_uvarint(w, tag_size)")
    out("w.write(tag_out.getvalue())")
