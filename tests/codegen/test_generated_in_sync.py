"""generated/ is exactly the generator's output for schemas/, and generation is deterministic."""

from __future__ import annotations

import difflib
from pathlib import Path

from kraftwire.codegen.emit import generate_package
from kraftwire.codegen.generate import load_spec_set

REPO = Path(__file__).resolve().parents[2]


def test_generated_matches_a_fresh_generation():
    specs, facts = load_spec_set([REPO / "schemas"])
    files = generate_package(specs, "kraftwire.generated", facts=facts)
    committed = {p.name for p in (REPO / "generated").iterdir() if p.suffix == ".py" or p.name == "py.typed"}
    fresh = {f.name for f in files}
    assert committed == fresh, f"missing {fresh - committed}, stale {committed - fresh}; run `make generate`"
    for f in files:
        current = (REPO / "generated" / f.name).read_text(encoding="utf-8")
        if current != f.text:
            diff = "".join(
                list(difflib.unified_diff(current.splitlines(True), f.text.splitlines(True), f.name, "fresh"))[:40]
            )
            raise AssertionError(f"generated/{f.name} is out of date; run `make generate`\n{diff}")


def test_two_runs_give_identical_bytes():
    specs, facts = load_spec_set([REPO / "schemas"])
    first = generate_package(specs, "kraftwire.generated", jobs=1, facts=facts)
    again, facts_again = load_spec_set([REPO / "schemas"])
    second = generate_package(again, "kraftwire.generated", jobs=2, facts=facts_again)
    assert [(f.name, f.text) for f in first] == [(f.name, f.text) for f in second]


def test_generated_package_needs_only_the_standard_library():
    import ast
    import sys

    allowed = set(sys.stdlib_module_names)
    optional = {"cramjam", "crc32c", "google_crc32c"}  # lazy imports of the records layer
    optional.add("librt")  # mypyc's runtime: imported by a module only when it runs compiled
    for path in (REPO / "generated").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in allowed or top in optional, f"{path.name} imports {name}"


def test_the_bundled_runtime_lives_once_in_codegen():
    """generated/ links its runtime modules to codegen/'s (one copy in the repository); a package
    generated anywhere else gets copies, so that it stands on its own."""
    from kraftwire.codegen.emit import NATIVE_LOADER, RUNTIME

    sources = [*RUNTIME.glob("*.py"), NATIVE_LOADER]
    assert len(sources) > 20
    for source in sources:
        bundled = REPO / "generated" / source.name
        assert bundled.is_symlink(), f"generated/{source.name} is a copy, not a link to {source}"
        assert bundled.resolve() == source.resolve()


def test_a_package_generated_elsewhere_holds_copies_of_the_runtime(tmp_path):
    from kraftwire.codegen.emit import RUNTIME
    from kraftwire.codegen.generate import generate

    out = tmp_path / "kw"
    generate([REPO / "schemas" / "VoteRequest.json", REPO / "schemas" / "VoteResponse.json"], out)
    for source in RUNTIME.glob("*.py"):
        copy = out / source.name
        assert not copy.is_symlink() and copy.read_bytes() == source.read_bytes()
