"""The emitter: renders a package of codecs from validated spec models.

It only reads the model and the plans; every rule was checked before it runs. Output is formatted
by black and is deterministic: two runs over the same specs give identical bytes.
"""

from __future__ import annotations

import functools
import os
import re
import textwrap
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import black
from black.mode import TargetVersion
import jinja2

from kraftwire.worker_interrupts import leave_interrupts_to_parent, workers_start_without_interrupts

from . import GENERATOR_VERSION
from .defaults import INTEGER_RANGES
from .facts import KafkaFacts
from .facts_emit import fact_modules
from .model import Field, FieldType, MessageSpec, snake_case
from .plan import JsonTable, StructPlan, plan_message
from .python_values import default_constant, default_expr, mutable_default

TEMPLATES = Path(__file__).with_name("templates")
RUNTIME = Path(__file__).with_name("runtime")
# copied into every package beside the runtime: picks the compiled codecs when they are built
NATIVE_LOADER = Path(__file__).with_name("native") / "_native_loader.py"
TYPED_MARKER = "py.typed"
BLACK_MODE = black.Mode(line_length=100, target_versions={TargetVersion.PY311})

# Every runtime name a generated module may use: alias -> (runtime module, name). A module imports
# only the ones its code mentions.
RUNTIME_NAMES = {
    "_uuid_from_wire": ("_runtime", "uuid_from_wire"),
    "_SMALL_bool": ("_runtime", "SMALL_bool"),
    "_SMALL_float64": ("_runtime", "SMALL_float64"),
    "_SMALL_int16": ("_runtime", "SMALL_int16"),
    "_SMALL_int32": ("_runtime", "SMALL_int32"),
    "_SMALL_int64": ("_runtime", "SMALL_int64"),
    "_SMALL_int8": ("_runtime", "SMALL_int8"),
    "_SMALL_uint16": ("_runtime", "SMALL_uint16"),
    "_SMALL_uint32": ("_runtime", "SMALL_uint32"),
    "_read_fixed_array": ("_runtime", "read_fixed_array"),
    "_ARRAY_bool": ("_runtime", "ARRAY_bool"),
    "_ARRAY_float64": ("_runtime", "ARRAY_float64"),
    "_ARRAY_int16": ("_runtime", "ARRAY_int16"),
    "_ARRAY_int32": ("_runtime", "ARRAY_int32"),
    "_ARRAY_int64": ("_runtime", "ARRAY_int64"),
    "_ARRAY_int8": ("_runtime", "ARRAY_int8"),
    "_ARRAY_uint16": ("_runtime", "ARRAY_uint16"),
    "_ARRAY_uint32": ("_runtime", "ARRAY_uint32"),
    "_DEFAULT": ("_base", "DEFAULT"),
    "_F": ("_json", "JsonField"),
    "_INT32": ("_runtime", "INT32"),
    "_INT64_MAX": ("_runtime", "INT64_MAX"),
    "_JsonLayout": ("_json", "JsonLayout"),
    "_MapKeyList": ("_base", "MapKeyList"),
    "_Message": ("_base", "Message"),
    "_Struct": ("_base", "Struct"),
    "_RawTags": ("_runtime", "RawTags"),
    "_ZERO_BYTES": ("_runtime", "ZERO_BYTES"),
    "_ZERO_UUID": ("_runtime", "ZERO_UUID"),
    "_bad_bool": ("_runtime", "bad_bool"),
    "_bad_presence": ("_runtime", "bad_presence"),
    "_count_error": ("_runtime", "count_error"),
    "_default_tag": ("_runtime", "default_tag"),
    "_new": ("_base", "new_unfilled"),
    "_native_install": ("_native_loader", "install"),
    "_extend_path": ("_failures", "extend_path"),
    "_invalid_tag": ("_runtime", "invalid_tag"),
    "_not_ignorable": ("_runtime", "not_ignorable"),
    "_null_error": ("_runtime", "null_error"),
    "_null_value": ("_runtime", "null_value"),
    "_read_array_count": ("_runtime", "read_array_count"),
    "_read_bytes": ("_runtime", "read_bytes"),
    "_read_compact_array_count": ("_runtime", "read_compact_array_count"),
    "_read_compact_bytes": ("_runtime", "read_compact_bytes"),
    "_read_compact_string": ("_runtime", "read_compact_string"),
    "_read_string": ("_runtime", "read_string"),
    "_read_tag_count": ("_runtime", "read_tag_count"),
    "_read_tag_size": ("_runtime", "read_tag_size"),
    "_read_raw_tags": ("_runtime", "read_raw_tags"),
    "_read_uvarint": ("_runtime", "read_uvarint"),
    "_skip_unknown_tags": ("_runtime", "skip_unknown_tags"),
    "_tag_count_error": ("_runtime", "tag_count_error"),
    "_tag_order_error": ("_runtime", "tag_order_error"),
    "_tag_size_error": ("_runtime", "tag_size_error"),
    "_tags_not_supported": ("_runtime", "tags_not_supported"),
    "_too_long": ("_runtime", "too_long"),
    "_truncated": ("_runtime", "truncated"),
    "_write_bytes": ("_runtime", "write_bytes"),
    "_write_compact_bytes": ("_runtime", "write_compact_bytes"),
    "_write_compact_nullable_bytes": ("_runtime", "write_compact_nullable_bytes"),
    "_write_compact_nullable_string": ("_runtime", "write_compact_nullable_string"),
    "_write_compact_string": ("_runtime", "write_compact_string"),
    "_write_failure": ("_failures", "write_failure"),
    "_write_nullable_bytes": ("_runtime", "write_nullable_bytes"),
    "_write_nullable_string": ("_runtime", "write_nullable_string"),
    "_write_raw_tags": ("_runtime", "write_raw_tags"),
    "_write_string": ("_runtime", "write_string"),
    "_write_uvarint": ("_runtime", "write_uvarint"),
}
_IMPORTS_MARKER = "# -- runtime imports --"

_PY_TYPES = {"bool": "bool", "float64": "float", "uuid": "uuid.UUID", "string": "str"}


def _py_type(field_type: FieldType) -> str:
    kind = field_type.kind
    if kind in INTEGER_RANGES:
        return "int"
    if kind in ("bytes", "records"):
        return "bytes"
    if kind == "struct":
        assert field_type.struct_name is not None
        return field_type.struct_name
    if kind == "array":
        assert field_type.element is not None
        return f"list[{_py_type(field_type.element)}]"
    return _PY_TYPES[kind]


def annotation(fld: Field) -> str:
    text = _py_type(fld.type)
    return (
        f"{text} | None" if not fld.nullable_versions.empty or fld.type.kind == "records" else text
    )


def may_be_null(fld: Field) -> bool:
    """Whether the attribute's type admits None (a writer of a version where it is not nullable checks)."""
    return annotation(fld).endswith(" | None")


def kind_text(field_type: FieldType) -> str:
    """A field's kind in a class's ``_KINDS``: "[]int32" (say) for an array of primitives, whose
    elements the error path then checks one by one; "array" for an array of structs."""
    element = field_type.element
    if element is not None and not element.is_struct:
        return f"[]{element.kind}"
    return field_type.kind


def init_default(fld: Field) -> str:
    return "_DEFAULT" if mutable_default(fld) else default_expr(fld)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', "'''").strip()


def _field_line(fld: Field) -> str:
    facts = [f"versions {fld.versions}"]
    if not fld.nullable_versions.empty:
        facts.append(f"nullable {fld.nullable_versions}")
    if fld.tag is not None:
        facts.append(f"tag {fld.tag} in {fld.tagged_versions}")
    if fld.default_text:
        facts.append(f"default {fld.default_text}")
    if fld.ignorable:
        facts.append("ignorable")
    if fld.map_key:
        facts.append("map key")
    head = f"{fld.attr} ({fld.type.spec}; {', '.join(facts)})"
    about = _escape(fld.about)
    return textwrap.fill(
        f"{head}: {about}" if about else head,
        width=96,
        initial_indent="    ",
        subsequent_indent="        ",
    )


def docstring(plan: StructPlan) -> str:
    struct = plan.struct
    lines = [_escape(struct.about) or f"The {struct.name} struct.", ""]
    lines.append(f"Versions: {struct.versions}.")
    if struct.fields:
        lines += ["", "Attributes:"]
        lines += [_field_line(fld) for fld in struct.fields]
    return "\n    ".join(line.replace("\n", "\n    ") for line in lines) + "\n    "


def json_field(fld: Field) -> str:
    """The ``JsonField`` of one struct field, leaving out trailing defaults."""
    element = fld.type.struct_name or (fld.type.element.kind if fld.type.element else "")
    default = "None"
    if fld.tag is not None:
        if not mutable_default(fld):
            default = default_expr(fld)
        else:
            default = default_constant(fld) if fld.type.kind == "struct" else "[]"
    args = [f'"{fld.attr}"', f'"{fld.json_key}"', f'"{fld.type.kind}"']
    args += _without_trailing_defaults([f'"{element}"', default], ['""', "None"])
    return f"_F({', '.join(args)})"


def json_layout(table: JsonTable) -> str:
    """A ``JsonLayout`` call: modes, nullability flags and nested layouts of one JSON table."""
    modes = "".join(mode[0].upper() for _, mode, _, _ in table.entries)
    flags = "".join("1" if nullable else "0" for _, _, _, nullable in table.entries)
    children = ", ".join(
        f"{i}: {child}" for i, (_, _, child, _) in enumerate(table.entries) if child
    )
    args = [table.class_name, f"_FIELDS_{snake_case(table.class_name)}", f'"{modes}"']
    optional = [
        f'"{flags}"' if "1" in flags else '""',
        f"{{{children}}}" if children else "None",
        "_MapKeyList" if table.map_key else "None",
    ]
    args += _without_trailing_defaults(optional, ['""', "None", "None"])
    return f"_JsonLayout({', '.join(args)})"


def _without_trailing_defaults(values: list[str], defaults: list[str]) -> list[str]:
    """Drop trailing arguments equal to their parameter's default (positions align)."""
    values = list(values)
    while values and values[-1] == defaults[len(values) - 1]:
        values.pop()
    return values


@functools.lru_cache(maxsize=None)
def _environment() -> jinja2.Environment:
    """One per process: compiling the templates costs more than rendering a module with them."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        extensions=["jinja2.ext.do"],
    )
    env.globals.update(
        annotation=annotation,
        may_be_null=may_be_null,
        init_default=init_default,
        kind_text=kind_text,
        docstring=docstring,
        default_expr=default_expr,
        json_field=json_field,
        json_layout=json_layout,
        snake_case=snake_case,
        generator_version=GENERATOR_VERSION,
    )
    return env


def _spec_type_line(spec: MessageSpec) -> str:
    if spec.type in ("request", "response"):
        return f"the {spec.type} of API key {spec.api_key} ({spec.name[: -len(spec.type)]})."
    if spec.type == "metadata":
        return f"KRaft metadata record type {spec.api_key}."
    if spec.type in ("coordinator-key", "coordinator-value"):
        return f"the {spec.type.split('-')[1]} of coordinator record type {spec.api_key}."
    return f"a {spec.type} message."


def render_module(spec: MessageSpec) -> str:
    env = _environment()
    plan = plan_message(spec)
    defaults = sorted(
        {
            fld.type.struct_name
            for sp in plan.structs
            for fld in sp.struct.fields
            if fld.type.struct_name is not None
            and fld.type.kind == "struct"
            and not fld.default_is_null
        }
    )
    source = env.get_template("module.py.j2").render(
        spec=spec,
        plan=plan,
        default_constants=defaults,
        spec_type_line=_spec_type_line(spec),
        history=[_escape(line) for line in spec.comments],
        runtime_imports=_IMPORTS_MARKER,
    )
    return source.replace(_IMPORTS_MARKER, _runtime_imports(source))


# standard-library imports, each with the pattern that shows a module needs it
_STDLIB_IMPORTS = (
    (r"\b_struct\.", "import struct as _struct"),
    (r"\buuid\.UUID\b", "import uuid"),
    (r"\b_UUID\(", "from uuid import UUID as _UUID"),
)


def _runtime_imports(source: str) -> str:
    """Import lines for exactly the standard-library and runtime names that ``source`` uses."""
    stdlib = [line for pattern, line in _STDLIB_IMPORTS if re.search(pattern, source)]
    return "\n\n".join(filter(None, ["\n".join(stdlib), _package_imports(source)]))


def _package_imports(source: str) -> str:
    used = set(re.findall(r"\b_[A-Za-z]\w*\b", source)) & RUNTIME_NAMES.keys()
    by_module: dict[str, list[str]] = {}
    for alias in sorted(used):
        module, name = RUNTIME_NAMES[alias]
        by_module.setdefault(module, []).append(f"{name} as {alias}")
    return "\n".join(
        f"from .{module} import {', '.join(names)}" for module, names in sorted(by_module.items())
    )


def format_source(source: str, name: str) -> str:
    try:
        return black.format_str(source, mode=BLACK_MODE)
    except Exception as exc:  # a template bug: show where the emitted code is wrong
        raise RuntimeError(f"generated code for {name} does not parse: {exc}") from exc


@dataclass(frozen=True)
class GeneratedFile:
    name: str
    text: str


def _render_and_format(spec: MessageSpec) -> GeneratedFile:
    return GeneratedFile(f"{spec.module}.py", format_source(render_module(spec), spec.stem))


def generate_package(
    specs: list[MessageSpec],
    package: str,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    facts: KafkaFacts | None = None,
) -> list[GeneratedFile]:
    """Every file of the package, in a stable order: modules (the fact modules among them), runtime
    files, ``__init__.py``, ``py.typed``.

    ``progress(done, total)`` is called after each message module is rendered.
    """
    real = [spec for spec in specs if not spec.is_placeholder]
    jobs = jobs or min(len(real), os.cpu_count() or 1)
    if jobs > 1 and len(real) > 8:
        pool = ProcessPoolExecutor(max_workers=jobs, initializer=leave_interrupts_to_parent)
        try:
            with workers_start_without_interrupts():  # the workers are forked as work is submitted
                rendered = pool.map(_render_and_format, real, chunksize=4)
            modules = _collect(rendered, len(real), progress)
        finally:  # on Ctrl-C: drop the modules not started rather than render them all first
            pool.shutdown(cancel_futures=True)
    else:
        modules = _collect(map(_render_and_format, real), len(real), progress)
    modules += [
        GeneratedFile(file, format_source(source, file))
        for file, source in fact_modules(specs, facts or KafkaFacts()).items()
    ]
    runtime = [
        GeneratedFile(path.name, path.read_text(encoding="utf-8"))
        for path in sorted([*RUNTIME.glob("*.py"), NATIVE_LOADER])
    ]
    init = (
        _environment()
        .get_template("package_init.py.j2")
        .render(package=package, specs=sorted(specs, key=lambda s: s.stem), count=len(specs))
    )
    init_file = GeneratedFile("__init__.py", format_source(init, "__init__"))
    # PEP 561 marker: type checkers use the package's own annotations (empty: nothing is partial).
    marker = GeneratedFile(TYPED_MARKER, "")
    return sorted(modules + runtime, key=lambda f: f.name) + [init_file, marker]


def _collect(
    rendered: Iterable[GeneratedFile], total: int, progress: Callable[[int, int], None] | None
) -> list[GeneratedFile]:
    modules: list[GeneratedFile] = []
    for module in rendered:
        modules.append(module)
        if progress is not None:
            progress(len(modules), total)
    return modules
