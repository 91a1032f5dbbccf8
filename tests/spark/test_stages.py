"""The decoders' stages (``spark_decoders/__init__.py`` names them): each imports only the stages
before it, no import circle anywhere in the package, and every first-party import at the top of
its module except the few that must wait (named below, each with its reason).

Read from the sources with ``ast`` (``import_graph.py``): nothing is imported or run.
"""

from __future__ import annotations

import ast

from import_graph import ImportGraph, strongly_connected

from kraftwire.generated.framing import CLIENT_ID_LENGTH, REQUEST_HEAD, RESPONSE_HEAD
from kraftwire.spark_decoders.packets import typed_reads

PACKAGE = "kraftwire.spark_decoders"
GRAPH = ImportGraph()
FILES = [m for m in GRAPH.files if m == PACKAGE or m.startswith(PACKAGE + ".")]
EDGES = [e for e in GRAPH.edges if e.source in FILES and e.target in FILES]
# From the bottom up; the package's own modules (api, cli, report, extras) sit on top of all.
STAGES = ["native", "packets", "kafka", "output", "decode", "spark"]
# The stages where a module may know whether it runs compiled: the build, and the packet stage
# (its readers fork, and ``packets.typed_reads`` serves the stages above it).
FORKING_STAGES = ("native", "packets")
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


def forks(module: str) -> list[str]:
    """Where ``module`` defines or tests a ``COMPILED`` flag, or imports librt (whose typed readers
    only a compiled build has): ``"line N: what"``."""
    tree = ast.parse(GRAPH.files[module].read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "COMPILED":
            found.append(f"line {node.lineno}: COMPILED")
        elif isinstance(node, ast.Attribute) and node.attr == "COMPILED":
            found.append(f"line {node.lineno}: .COMPILED")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "librt":
            found.append(f"line {node.lineno}: from {node.module} import")
        elif isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "librt" for a in node.names
        ):
            found.append(f"line {node.lineno}: import librt")
    return found


def test_compiled_forks_only_in_the_packet_stage() -> None:
    outside = {
        module: found
        for module in FILES
        if module.removeprefix(PACKAGE + ".").split(".")[0] not in FORKING_STAGES
        if (found := forks(module))
    }
    assert outside == {}


def test_forks_check_sees_the_packet_stage_forks() -> None:
    # the check above reads what it should: the packet stage's own forks are found
    assert forks(f"{PACKAGE}.packets.layers") and forks(f"{PACKAGE}.packets.typed_reads")


def test_typed_reads_layouts_are_the_kafka_headers() -> None:
    """The Kafka stage reads its headers with the packet stage's several-field reads, named by
    layout: those layouts must be the header's (``kraftwire.generated.framing``)."""
    request_head = REQUEST_HEAD.format + CLIENT_ID_LENGTH.format[1:]
    assert typed_reads.I16_I16_I32_I16.format == request_head
    assert typed_reads.I32_I16_I16_I32_I16.format == ">i" + request_head[1:]
    assert typed_reads.I32_I32.format == ">i" + RESPONSE_HEAD.format[1:]


def test_typed_reads_agree_with_struct() -> None:
    data = bytes(
        [0x80, 0x01, 0xFF, 0xFE, 0x7F, 0xFF, 0xFF, 0xFF, 0x00, 0x02, 0xFF, 0xFF, 0x12, 0x34]
    )
    for buf in (data, bytearray(data)):
        assert typed_reads.i16_be(buf, 2) == -2
        assert typed_reads.i32_be(buf, 4) == 0x7FFFFFFF
        assert typed_reads.i32_i32_be(buf, 0) == (-0x7FFE0002, 0x7FFFFFFF)
        assert typed_reads.i16_i16_i32_i16_be(buf, 2) == (-2, 0x7FFF, -65534, -1)
        assert typed_reads.i32_i16_i16_i32_i16_be(buf, 0) == (
            -0x7FFE0002,
            0x7FFF,
            -1,
            0x0002FFFF,
            0x1234,
        )
