"""The import layering of every package kraftwire installs: no import circles, one way down, imports at
the top.

Walks the sources with ``ast`` (see ``import_graph.py``): every module of every package pyproject.toml
installs, by its installed name. An edge is anything loading a module makes Python run: its imports
wherever they sit (``TYPE_CHECKING`` blocks and function bodies included: hiding an import there hides a
circle, it does not remove it), the ``__init__`` of each package such an import enters, and
``importlib`` imports of names written in the module. Checked:

* no import circle anywhere, within a package or across packages (strongly connected components of the
  whole graph);
* data flows one way: ``codegen`` -> ``generated`` -> {``node``, ``spark_decoders``} -> the command line
  (``kraftwire/*.py``). ``generated`` imports none of the others; ``node`` and ``spark_decoders`` do not
  import each other; nothing but the command line imports the command line;
* imports of our own modules sit at the top of their module, except the few in ``LATE_IMPORTS``, each
  with its reason (they still count as edges for the circles);
* in node/core, only ``core`` drives the replica, and the modules import only downward (``CORE_LAYERS``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from import_graph import Edge, ImportGraph, listed_packages

GRAPH = ImportGraph()

MAY_IMPORT = {
    "root": set(),
    "shared": {"root"},
    # The codec-package cache (``package_cache``) hands out the bundled package when no specs are
    # given: the generator's layer names its own output, which never imports it back.
    # The shared layer's leaves import nothing of ours; the generator's render workers leave Ctrl-C
    # to the command as every other worker pool does (``worker_interrupts``).
    "codegen": {"root", "shared", "generated"},
    "generated": {"root"},
    # ``kraftwire dump-log --schemas`` and ``kraftwire decode --schemas`` generate codecs for the
    # specs they are given (``codegen.package_cache``); the decoders also build their own compiled
    # modules with the generator's native builder.
    "node": {"root", "shared", "generated", "codegen"},
    "spark_decoders": {"root", "shared", "generated", "codegen"},
    "command line": {"root", "shared", "codegen", "generated", "node", "spark_decoders"},
}
"""Layer -> the other layers its modules may import (each layer imports itself too)."""


SHARED = {"kraftwire.synthetic_capture", "kraftwire.worker_interrupts"}
"""Modules beside the command line that import nothing of kraftwire's and serve every layer: the
capture writer the node (``--capture``) and the decoders' tests share (neither may import the other),
and the Ctrl-C handling of the worker pools of the generator, the simulator and the decoders."""


def layer_of(module: str) -> str:
    """``root`` is kraftwire/__init__ (every module runs it: it imports nothing of ours). The modules
    beside it are the command line and the public re-exports for users (``kraftwire.records``): the
    layers below import what those re-export from where it lives (``kraftwire.generated.records``).
    """
    if module == "kraftwire":
        return "root"
    if module in SHARED:
        return "shared"
    part = module.split(".")[1]
    return part if part in MAY_IMPORT and part != "root" else "command line"


LATE_IMPORTS = {
    (
        "kraftwire.cli",
        "",
    ): "each subcommand's module is imported when its command runs (start-up time: `kraftwire node` "
    "does not load the generator, the simulator or Spark)",
    (
        "kraftwire.specs",
        "kraftwire.codegen.check",
    ): "only `kraftwire specs check` needs the generator's validation (jsonschema)",
    (
        "kraftwire.inspect",
        "kraftwire.generated",
    ): "the codec package is named on the command line (--package) and imported by that name",
    (
        "kraftwire.cli_input",
        "kraftwire.generated",
    ): "the codec package is named on the command line (--package) and imported by that name",
    (
        "kraftwire.demo",
        "",
    ): "`make demo` runs the node throughout (imported at the top); the generator is loaded when its "
    "step starts (first), the decoders when theirs does (last)",
    (
        "kraftwire.codegen.cli",
        "kraftwire.codegen.native.build",
    ): "the native build needs mypyc, an optional extra: its absence is reported as one line",
    (
        "kraftwire.codegen.cli",
        "kraftwire.codegen",
    ): "the generator (jinja2, black) is loaded when a command generates, not to parse arguments",
    (
        "kraftwire.node.runtime.cli_node",
        "kraftwire.node.runtime.metrics",
    ): "the Prometheus endpoint needs prometheus-client, an optional extra (--metrics-port)",
    (
        "kraftwire.codegen.package_cache",
        "kraftwire.codegen",
    ): "the generator (jinja2, black) and mypyc are loaded only when specs are generated or compiled "
    "for the first time: a Spark query's planning process and `dump-log` read the cache without them",
    (
        "kraftwire.codegen.package_cache",
        "kraftwire.generated",
    ): "a cached package is imported by its generated name; the bundled one by name when no specs "
    "are given",
    (
        "kraftwire.spark_decoders",
        "kraftwire.spark_decoders.api",
    ): "the compiled or pure decoders are chosen (native.implementation) before any decoder module "
    "is imported",
    (
        "kraftwire.spark_decoders",
        "kraftwire.spark_decoders.spark.reading",
    ): "register/read_exchanges need pyspark, an optional extra that takes seconds to import: served "
    "through the package's __getattr__",
    (
        "kraftwire.spark_decoders.cli",
        "kraftwire.spark_decoders.spark.reading",
    ): "only `kraftwire decode --spark` needs pyspark",
}
"""(importing module, imported module or package prefix) -> why the import may sit below the top."""


def circle_problems(graph: ImportGraph) -> list[str]:
    problems = []
    for members, cycle in zip(graph.components(), graph.cycles()):
        packages = sorted({graph.package_of(m) for m in members})
        where = f"within {packages[0]}" if len(packages) == 1 else "across " + ", ".join(packages)
        problems.append(
            f"import circle {where} of {len(members)} modules ({', '.join(members)}), "
            f"e.g. {' -> '.join(cycle)}"
        )
    return problems


def upward_arrows(graph: ImportGraph) -> list[str]:
    return [
        f"{e}: {layer_of(e.source)} may not import {layer_of(e.target)}"
        for e in graph.edges
        if e.how != "parent"
        and layer_of(e.target) != layer_of(e.source)
        and layer_of(e.target) not in MAY_IMPORT[layer_of(e.source)]
    ]


def _allowed(edge: Edge) -> bool:
    return any(
        edge.source == source and (edge.target + ".").startswith(prefix and prefix + ".")
        for source, prefix in LATE_IMPORTS
    )


def late_imports(graph: ImportGraph) -> list[Edge]:
    return [e for e in graph.late() if not _allowed(e)]


def test_every_installed_package_is_walked_and_listed() -> None:
    """pyproject.toml installs every folder of modules (a subpackage missing from its list is left
    out of a wheel), and the walk finds modules in each listed package (but the template folder)."""
    listed = set(listed_packages())
    folders = {GRAPH.package_of(m) for m in GRAPH.files}
    assert sorted(folders - listed) == [], "folders of modules pyproject.toml does not install"
    assert sorted(listed - folders) == ["kraftwire.codegen.templates"]


def test_no_import_circles() -> None:
    problems = circle_problems(GRAPH)
    assert not problems, "\n".join(problems)


def test_imports_flow_one_way() -> None:
    problems = upward_arrows(GRAPH)
    assert not problems, "\n".join(problems)


def test_own_imports_sit_at_the_top() -> None:
    late = late_imports(GRAPH)
    assert not late, f"{len(late)} imports below the top of their module:\n" + "\n".join(
        map(str, late)
    )


def test_every_allowed_late_import_is_still_there() -> None:
    stale = [
        key
        for key in LATE_IMPORTS
        if not any(
            e.source == key[0] and (e.target + ".").startswith(key[1] and key[1] + ".")
            for e in GRAPH.late()
        )
    ]
    assert not stale, f"LATE_IMPORTS entries that match no import: {stale}"


CORE_LAYERS = [
    ["core"],
    ["dispatch", "poll", "startup", "delivery"],
    ["vote", "quorum_epoch", "fetch_leader", "fetch_client", "fetch_follower", "snapshots"]
    + ["describe"]
    + ["voter_changes", "voter_client", "kraft_upgrade", "read_offset"],
    ["common"],
    ["transitions"],
    ["leader_ops"],
    ["replica"],
    ["leader"],
    [
        "states",
        "voters",
        "requests",
        "outbox",
        "log_ops",
        "messages",
        "responses",
        "memory",
        "reads",
    ],
    ["api"],
    ["config", "storage", "batches"],
    ["values"],
]
"""node/core from the top down (core.py's docstring names the layers). A module imports
only modules of lower layers: the handlers do not import each other, nothing imports upward."""

CORE = "kraftwire.node.core"


def test_node_core_imports_only_downward() -> None:
    layer = {f"{CORE}.{m}": i for i, names in enumerate(CORE_LAYERS) for m in names}
    modules = set(GRAPH.modules_of(CORE)) - {CORE}  # the package face re-exports the top
    assert sorted(modules - set(layer)) == [], "a new module needs a place in CORE_LAYERS"
    wrong = [
        f"{s} (layer {layer[s]}) imports {t} (layer {layer[t]})"
        for s, t in sorted(GRAPH.arrows(CORE))
        if s in layer and t in layer and layer[t] <= layer[s]
    ]
    assert not wrong, "\n".join(wrong)


def test_only_the_core_drives_the_replica() -> None:
    drivers = {f"{CORE}.{m}" for m in ("dispatch", "poll", "startup", "delivery")}
    importers = sorted({e.source for e in GRAPH.edges if e.target in drivers})
    assert importers == [f"{CORE}.core"], importers
    assert not [
        e for e in GRAPH.edges if e.target == f"{CORE}.core" and e.source.startswith(f"{CORE}.")
    ]


# -- the walker itself ---------------------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str], package: str = "pkg") -> ImportGraph:
    for name, text in files.items():
        path = root / package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return ImportGraph({package: root / package})


def test_walker_reports_a_circle_with_its_path(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": '"""doc"""\nfrom . import b\n',
            "b.py": "from .c import thing\n",
            "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\nthing = 1\n",
            "d.py": "from . import a\n",
        },
    )
    assert circle_problems(graph) == [
        "import circle within pkg of 3 modules (pkg.a, pkg.b, pkg.c), e.g. pkg.a -> pkg.b -> pkg.c -> pkg.a"
    ]
    assert graph.back_edges() == [("pkg.c", "pkg.a")]


def test_walker_reports_imports_below_the_top(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "import json\n\nX = 1\nfrom . import b  # noqa: E402\n",
            "b.py": "def f():\n    from .c import y\n    import json\n    return y\n",
            "c.py": "y = 2\n",
            "sub/__init__.py": "",
            "sub/d.py": "from ..c import y\nfrom pkg import a\nfrom kraftwire.node.core import api\n",
        },
    )
    assert [str(e) for e in graph.late()] == [
        "pkg.a:4 -> pkg.b (bottom)",
        "pkg.b:2 -> pkg.c (nested)",
    ]
    assert sorted((e.source, e.target) for e in graph.edges if e.source == "pkg.sub.d") == [
        ("pkg.sub.d", "pkg.a"),
        ("pkg.sub.d", "pkg.c"),
    ]


def test_walker_sees_the_package_init_an_import_runs(tmp_path: Path) -> None:
    """low imports core.api, which runs core/__init__, whose face imports core.top, which imports
    low: a circle although no module names another that names it."""
    graph = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "low.py": "from pkg.core.api import Thing\n",
            "core/__init__.py": "from .api import Thing\nfrom .top import Top\n",
            "core/api.py": "class Thing: ...\n",
            "core/top.py": "from .. import low\n",
        },
    )
    assert [str(e) for e in graph.edges if e.how == "parent"] == [
        "pkg.low:1 -> pkg.core (top, parent)"
    ]
    assert circle_problems(graph) == [
        "import circle across pkg, pkg.core of 3 modules (pkg.core, pkg.core.top, pkg.low), "
        "e.g. pkg.core -> pkg.core.top -> pkg.low -> pkg.core"
    ]


def test_walker_follows_importlib(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "lit.py": "import importlib\ndef f():\n    return importlib.import_module('pkg.sub.x')\n",
            "fstr.py": "import importlib\ndef f(n):\n    return importlib.import_module(f'pkg.sub.{n}')\n",
            "const.py": "import importlib\nNAME = 'pkg.lit'\nm = importlib.import_module(NAME)\n",
            "table.py": "import importlib\nT = {'x': 'pkg.fstr'}\n"
            "def f(k):\n    return importlib.import_module(T[k])\n",
            "rel.py": "import importlib\ndef f(n):\n    return importlib.import_module('.' + n, __package__)\n",
            "sub/__init__.py": "",
            "sub/x.py": "",
        },
    )
    assert sorted(str(e) for e in graph.edges) == [
        "pkg.const:3 -> pkg.lit (bottom, importlib)",
        "pkg.fstr:3 -> pkg.sub (nested, importlib)",
        "pkg.lit:3 -> pkg.sub (nested, parent)",
        "pkg.lit:3 -> pkg.sub.x (nested, importlib)",
        "pkg.table:4 -> pkg.fstr (nested, importlib)",
    ]


def test_walker_reports_upward_arrows(tmp_path: Path) -> None:
    files = {
        "__init__.py": "",
        "generated/__init__.py": "from kraftwire.node import x\n",
        "node/__init__.py": "",
        "node/x.py": "from kraftwire.generated import y\nfrom kraftwire.spark_decoders import z\n",
        "generated/y.py": "",
        "spark_decoders/__init__.py": "",
        "spark_decoders/z.py": "import kraftwire.cli\n",
        "cli.py": "from kraftwire.node import x\n",
    }
    graph = _tree(tmp_path, files, "kraftwire")
    assert upward_arrows(graph) == [
        "kraftwire.generated:1 -> kraftwire.node.x (top): generated may not import node",
        "kraftwire.node.x:2 -> kraftwire.spark_decoders.z (top): node may not import spark_decoders",
        "kraftwire.spark_decoders.z:1 -> kraftwire.cli (top): spark_decoders may not import command line",
    ]


def test_walker_holds_the_shared_modules_to_their_layer(tmp_path: Path) -> None:
    """Every layer may import the shared modules; they import nothing of ours above the root, not
    even from a function body or a ``TYPE_CHECKING`` block."""
    files = {
        "__init__.py": "",
        "codegen/__init__.py": "",
        "codegen/emit.py": "from kraftwire.worker_interrupts import leave_interrupts_to_parent\n",
        "node/__init__.py": "from kraftwire import synthetic_capture\n",
        "worker_interrupts.py": "import kraftwire\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kraftwire.node import x\n",
        "synthetic_capture.py": "def f():\n    from kraftwire.codegen import emit\n",
    }
    graph = _tree(tmp_path, files, "kraftwire")
    assert {
        layer_of(m) for m in ("kraftwire.worker_interrupts", "kraftwire.synthetic_capture")
    } == {"shared"}
    assert upward_arrows(graph) == [
        "kraftwire.synthetic_capture:2 -> kraftwire.codegen.emit (nested): "
        "shared may not import codegen",
        "kraftwire.worker_interrupts:4 -> kraftwire.node (type_checking): "
        "shared may not import node",
    ]


@pytest.mark.parametrize(
    ("edge", "allowed"),
    [
        (Edge("kraftwire.cli", "kraftwire.node.runtime.cli_node", 1, "nested"), True),
        (Edge("kraftwire.codegen.cli", "kraftwire.codegen.generate", 1, "nested"), True),
        (Edge("kraftwire.specs", "kraftwire.codegen.checker", 1, "nested"), False),
        (Edge("kraftwire.node.runtime.node", "kraftwire.node.runtime.metrics", 1, "nested"), False),
    ],
)
def test_the_allowlist_matches_whole_module_names(edge: Edge, allowed: bool) -> None:
    assert _allowed(edge) is allowed
