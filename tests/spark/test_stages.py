"""The decoders' stages (``spark_decoders/__init__.py`` names them): each imports only the stages
before it, no import circle anywhere in the package, and every first-party import at the top of
its module except the few that must wait (named below, each with its reason).

Read from the sources with ``ast`` (``import_graph.py``): nothing is imported or run.
"""

from __future__ import annotations

from pathlib import Path

from import_graph import ImportGraph, strongly_connected

GRAPH = ImportGraph(Path("spark_decoders"))
PACKAGE = "spark_decoders"
# From the bottom up; the package's own modules (api, cli, report, extras) sit on top of all.
STAGES = ["native", "packets", "kafka", "output", "decode", "spark"]
# (importing module, imported module): the imports allowed below the top of a module.
LATE = {
    # The implementation is chosen before any decoder module is imported (native.implementation).
    ("spark_decoders", "spark_decoders.api"),
    # spark.reading imports pyspark, an optional extra (and seconds to import): the package offers
    # register/read_exchanges through a module __getattr__, and the command line only for --spark.
    ("spark_decoders", "spark_decoders.spark.reading"),
    ("spark_decoders.cli", "spark_decoders.spark.reading"),
}


def stage_of(module: str) -> int:
    parts = module.split(".")
    return STAGES.index(parts[1]) if len(parts) > 2 else len(STAGES)


def test_every_subpackage_is_a_known_stage() -> None:
    subpackages = {m.split(".")[1] for m in GRAPH.files if m.count(".") >= 2}
    assert subpackages == set(STAGES)


def test_no_import_circle_in_the_package() -> None:
    adjacency: dict[str, list[str]] = {}
    for edge in GRAPH.edges:
        adjacency.setdefault(edge.source, []).append(edge.target)
    assert strongly_connected(adjacency) == []


def test_each_stage_imports_only_the_stages_before_it() -> None:
    upward = [
        str(edge)
        for edge in GRAPH.edges
        if stage_of(edge.target) > stage_of(edge.source) and (edge.source, edge.target) not in LATE
    ]
    assert upward == []


def test_first_party_imports_are_at_the_top() -> None:
    late = [
        str(edge)
        for edge in GRAPH.edges
        if edge.where in ("bottom", "nested") and (edge.source, edge.target) not in LATE
    ]
    assert late == []
