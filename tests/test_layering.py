"""The import layering of node/ and the records runtime: no import circles, every import at the top.

Walks the sources with ``ast`` (see ``import_graph.py``). For each package: no two of its modules reach
each other through imports (``TYPE_CHECKING`` ones included: a module annotated with a class from a
module above it depends on that module all the same), and every import of our own modules sits at the
top of its module, where a reader finds it, not at the bottom or inside a function, which is how a
circle is usually hidden (an ``if TYPE_CHECKING:`` block at the top is fine). Across node/'s packages no
circle either. In node/core, only ``core`` may import the dispatch table, the pollers, startup and
delivery: the handlers below never drive the replica themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from import_graph import ImportGraph

NODE = ImportGraph(Path("node"))
RUNTIME = ImportGraph(Path("codegen/runtime"))

PACKAGES = [
    pytest.param(NODE, "node", id="node"),
    pytest.param(NODE, "node.core", id="node.core"),
    pytest.param(NODE, "node.simulation", id="node.simulation"),
    pytest.param(RUNTIME, "runtime", id="codegen.runtime"),
]


def layering_problems(graph: ImportGraph, package: str) -> list[str]:
    """Every import circle (as a path) and every misplaced import of ``package``'s own modules."""
    problems = [
        f"import circle of {len(members)} modules ({', '.join(members)}), e.g. {' -> '.join(cycle)}"
        for members, cycle in zip(graph.components(package), graph.cycles(package))
    ]
    problems += [
        f"import not at the top of its module: {edge}" for edge in graph.misplaced(package)
    ]
    return problems


@pytest.mark.parametrize(("graph", "package"), PACKAGES)
def test_package_is_layered(graph: ImportGraph, package: str) -> None:
    assert graph.modules_of(package), f"no modules found for {package}"
    problems = layering_problems(graph, package)
    assert not problems, f"{package}:\n" + "\n".join(problems)


def test_no_circle_across_node_packages() -> None:
    circles = NODE.cross_package_cycles()
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


CORE_LAYERS = [
    ["core"],
    ["dispatch", "poll", "startup", "delivery"],
    ["vote", "quorum_epoch", "fetch_leader", "fetch_follower", "snapshots", "describe"]
    + ["voter_changes", "voter_client", "kraft_upgrade", "read_offset"],
    ["common"],
    ["transitions"],
    ["leader_ops"],
    ["replica"],
    ["leader"],
    ["states", "voters", "requests", "outbox", "log_ops", "messages", "responses", "memory", "reads"],
    ["api"],
    ["config", "storage"],
    ["values"],
]
"""node/core from the top down (core.py's docstring names the layers). A module imports
only modules of lower layers: the handlers do not import each other, nothing imports upward."""


def test_node_core_imports_only_downward() -> None:
    layer = {f"node.core.{m}": i for i, names in enumerate(CORE_LAYERS) for m in names}
    modules = set(NODE.modules_of("node.core")) - {
        "node.core"
    }  # the package face re-exports the top
    assert sorted(modules - set(layer)) == [], "a new module needs a place in CORE_LAYERS"
    wrong = [
        f"{s} (layer {layer[s]}) imports {t} (layer {layer[t]})"
        for s, t in sorted(NODE.arrows("node.core"))
        if s in layer and t in layer and layer[t] <= layer[s]
    ]
    assert not wrong, "\n".join(wrong)


def test_only_the_core_drives_the_replica() -> None:
    drivers = {"node.core.dispatch", "node.core.poll", "node.core.startup", "node.core.delivery"}
    importers = sorted({e.source for e in NODE.edges if e.target in drivers})
    assert importers == ["node.core.core"], importers
    assert not [
        e for e in NODE.edges if e.target == "node.core.core" and e.source.startswith("node.core.")
    ]


# -- the walker itself ---------------------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> ImportGraph:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return ImportGraph(root / "pkg", root)


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
    problems = layering_problems(graph, "pkg")
    assert problems == [
        "import circle of 3 modules (pkg.a, pkg.b, pkg.c), e.g. pkg.a -> pkg.b -> pkg.c -> pkg.a"
    ], problems
    assert graph.back_edges("pkg") == [("pkg.c", "pkg.a")]


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
    assert [str(e) for e in graph.misplaced("pkg")] == [
        "pkg.a:4 -> pkg.b (bottom)",
        "pkg.b:2 -> pkg.c (nested)",
    ]
    assert layering_problems(graph, "pkg.sub") == []
    assert sorted((e.source, e.target) for e in graph.edges if e.source == "pkg.sub.d") == [
        ("pkg.sub.d", "pkg.a"),
        ("pkg.sub.d", "pkg.c"),
    ]


def test_walker_reports_circles_across_packages(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "top.py": "from .sub import low\n",
            "sub/__init__.py": "",
            "sub/low.py": "from .. import top\n",
        },
    )
    assert layering_problems(graph, "pkg") == [] and layering_problems(graph, "pkg.sub") == []
    assert graph.cross_package_cycles() == [["pkg.sub.low", "pkg.top", "pkg.sub.low"]]
