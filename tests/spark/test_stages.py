"""The decoders' stages (``spark_decoders/__init__.py`` names them): each imports only the stages
before it, no import circle anywhere in the package, and every first-party import at the top of
its module except the few that must wait (named below, each with its reason).

Read from the sources with ``ast`` (``import_graph.py``): nothing is imported or run.
"""

from __future__ import annotations

from import_graph import ImportGraph, strongly_connected

PACKAGE = "kraftwire.spark_decoders"
GRAPH = ImportGraph()
FILES = [m for m in GRAPH.files if m == PACKAGE or m.startswith(PACKAGE + ".")]
EDGES = [e for e in GRAPH.edges if e.source in FILES and e.target in FILES]
# From the bottom up; the package's own modules (api, cli, report, extras) sit on top of all.
STAGES = ["native", "packets", "kafka", "output", "decode", "spark"]
# (importing module, imported module): the imports allowed below the top of a module.
LATE = {
    # The implementation is chosen before any decoder module is imported (native.implementation).
    (PACKAGE, f"{PACKAGE}.api"),
    # spark.reading imports pyspark, an optional extra (and seconds to import): the package offers
    # register/read_exchanges through a module __getattr__, and the command line only for --spark.
    (PACKAGE, f"{PACKAGE}.spark.reading"),
    (f"{PACKAGE}.cli", f"{PACKAGE}.spark.reading"),
}


def stage_of(module: str) -> int:
    first = module.removeprefix(PACKAGE + ".").split(".")[0]
    return STAGES.index(first) if module != PACKAGE and first in STAGES else len(STAGES)


def test_every_subpackage_is_a_known_stage() -> None:
    subpackages = {m.removeprefix(PACKAGE + ".").split(".")[0] for m in FILES if m.count(".") >= 3}
    assert subpackages == set(STAGES)


def test_no_import_circle_in_the_package() -> None:
    adjacency: dict[str, list[str]] = {}
    for edge in EDGES:
        adjacency.setdefault(edge.source, []).append(edge.target)
    assert strongly_connected(adjacency) == []


def test_each_stage_imports_only_the_stages_before_it() -> None:
    upward = [
        str(edge)
        for edge in EDGES
        if stage_of(edge.target) > stage_of(edge.source) and (edge.source, edge.target) not in LATE
    ]
    assert upward == []


def test_first_party_imports_are_at_the_top() -> None:
    late = [
        str(edge)
        for edge in EDGES
        if edge.where in ("bottom", "nested")
        and edge.how != "parent"
        and (edge.source, edge.target) not in LATE
    ]
    assert late == []
