"""The emitter: renders a package of codecs from validated spec models.

It only reads the model and the plans; every rule was checked before it runs. Output is formatted
by black and is deterministic: two runs over the same specs give identical bytes.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import black
import jinja2

from . import GENERATOR_VERSION
from .model import Field, MessageSpec
from .plan import Op, StructPlan, plan_message
from .python_values import default_constant, default_expr

TEMPLATES = Path(__file__).with_name("templates")
RUNTIME = Path(__file__).with_name("runtime")
BLACK_MODE = black.Mode(line_length=100, target_versions={black.TargetVersion.PY311})

_INT_KINDS = ("int8", "int16", "uint16", "int32", "uint32", "int64")
_PY_TYPES = {"bool": "bool", "float64": "float", "uuid": "uuid.UUID", "string": "str"}


def _py_type(field_type) -> str:
    kind = field_type.kind
    if kind in _INT_KINDS:
        return "int"
    if kind in ("bytes", "records"):
        return "bytes"
    if kind == "struct":
        return field_type.struct_name
    if kind == "array":
        return f"list[{_py_type(field_type.element)}]"
    return _PY_TYPES[kind]


def annotation(fld: Field) -> str:
    text = _py_type(fld.type)
    return f"{text} | None" if not fld.nullable_versions.empty or fld.type.kind == "records" else text


def init_default(fld: Field) -> str:
    expr = default_expr(fld)
    return "_DEFAULT" if expr.endswith("()") or expr == "[]" else expr


def kind_name(fld: Field) -> str:
    return fld.type.kind


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
        f"{head}: {about}" if about else head, width=96, initial_indent="    ", subsequent_indent="        "
    )


def docstring(plan: StructPlan) -> str:
    struct = plan.struct
    lines = [_escape(struct.about) or f"The {struct.name} struct.", ""]
    lines.append(f"Versions: {struct.versions}.")
    if struct.fields:
        lines += ["", "Attributes:"]
        lines += [_field_line(fld) for fld in struct.fields]
    return "\n    ".join(line.replace("\n", "\n    ") for line in lines) + "\n    "


def json_field(fld: Field, mode: str, child: str | None, nullable: bool) -> str:
    """One ``JsonField`` entry of a layout's JSON table, leaving out trailing defaults."""
    element = fld.type.struct_name or (fld.type.element.kind if fld.type.element else "")
    default = "None"
    if mode == "tagged":
        default = default_expr(fld)
        if default.endswith("()"):
            default = default_constant(fld) if fld.type.kind == "struct" else "[]"
    args = [f'"{fld.attr}"', f'"{fld.json_key}"', f"_{mode.upper()}", f'"{fld.type.kind}"']
    optional = [f'"{element}"', str(nullable), child or "None", default]
    trailing_defaults = ['""', "False", "None", "None"]
    while optional and optional[-1] == trailing_defaults[len(optional) - 1]:
        optional.pop()
    return f"_F({', '.join(args + optional)})"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        extensions=["jinja2.ext.do"],
    )
    env.globals.update(
        annotation=annotation,
        init_default=init_default,
        kind_name=kind_name,
        docstring=docstring,
        default_expr=default_expr,
        json_field=json_field,
        generator_version=GENERATOR_VERSION,
    )
    return env


def _spec_type_line(spec: MessageSpec) -> str:
    if spec.type in ("request", "response"):
        return f"The {spec.type} of API key {spec.api_key} ({spec.name[: -len(spec.type)]})."
    if spec.type == "metadata":
        return f"KRaft metadata record type {spec.api_key}."
    if spec.type in ("coordinator-key", "coordinator-value"):
        return f"The {spec.type.split('-')[1]} of coordinator record type {spec.api_key}."
    return f"A {spec.type} message."


def render_module(spec: MessageSpec, env: jinja2.Environment | None = None) -> str:
    env = env or _environment()
    plan = plan_message(spec)
    defaults = sorted(
        {
            fld.type.struct_name
            for sp in plan.structs
            for fld in sp.struct.fields
            if fld.type.kind == "struct" and not fld.default_is_null
        }
    )
    source = env.get_template("module.py.j2").render(
        spec=spec, plan=plan, default_constants=defaults, spec_type_line=_spec_type_line(spec)
    )
    return source


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


def generate_package(specs: list[MessageSpec], package: str, jobs: int | None = None) -> list[GeneratedFile]:
    """Every file of the package, in a stable order: modules, runtime files and ``__init__.py``."""
    real = [spec for spec in specs if not spec.is_placeholder]
    jobs = jobs or min(len(real), os.cpu_count() or 1)
    if jobs > 1 and len(real) > 8:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            modules = list(pool.map(_render_and_format, real, chunksize=4))
    else:
        modules = [_render_and_format(spec) for spec in real]
    runtime = [
        GeneratedFile(path.name, path.read_text(encoding="utf-8"))
        for path in sorted(RUNTIME.glob("*.py"))
    ]
    init = _environment().get_template("package_init.py.j2").render(
        package=package, specs=sorted(specs, key=lambda s: s.stem), count=len(specs)
    )
    init_file = GeneratedFile("__init__.py", format_source(init, "__init__"))
    return sorted(modules + runtime, key=lambda f: f.name) + [init_file]


def write_package(files: list[GeneratedFile], out_dir: Path) -> None:
    """Replace ``out_dir``'s Python files with ``files`` (stale modules of removed specs go away)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = {f.name for f in files}
    for old in out_dir.glob("*.py"):
        if old.name not in wanted:
            old.unlink()
    cache = out_dir / "__pycache__"
    if cache.is_dir():
        shutil.rmtree(cache)
    for f in files:
        target = out_dir / f.name
        if not target.exists() or target.read_text(encoding="utf-8") != f.text:
            target.write_text(f.text, encoding="utf-8")
