"""The records' JSON views compiled (``kraftwire codegen --native``) against the pure ones.

Two copies of the bundled package are made: one with its ``_v2_view``, ``_logrecords``,
``_records_json`` and ``_v2_text`` compiled by mypyc, one left pure, so both run in this process.
For the same input they must give the same views, down to the JSON text (so the key order too), or
the same error (type name and text): the batch reader, the metadata-log value views and
``batches_to_json`` itself, on hypothesis' buffers and edits of them, on Kafka's vectors and on bad
options. The text written straight from the bytes (``write_batches_json_text``) must be the same
from both, and, where it is written, the text of ``batches_to_json``'s view. A build whose source
changed since, a source file posing as the extension, and ``KRAFTWIRE_PURE=1`` must leave the pure
module in charge. Without mypyc (or with KRAFTWIRE_PURE=1 set for the whole run) these tests skip.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given
from librt.strings import StringWriter
from hypothesis import strategies as st
from view_inputs import (
    BAD_OPTIONS,
    KNOWN,
    KNOWN_CORRUPTIONS,
    LIMIT,
    SETTINGS,
    buffers,
    edited,
    metadata_buffers,
    metadata_options,
    metadata_values,
    result,
    view_options,
)

import kraftwire.generated as bundled
from kraftwire.generated._native_loader import forced_pure
from kraftwire.records import encode_batch

COMPILED, PURE = "kwview_compiled", "kwview_pure"  # copies, so that the builds are this test's own
BUILT = ("_v2_view", "_logrecords", "_records_json", "_v2_text")


@pytest.fixture(scope="module")
def copies_root(tmp_path_factory) -> Path:
    """The folder holding both copies of the bundled package, the first one built."""
    pytest.importorskip("mypyc")
    if forced_pure():
        pytest.skip("KRAFTWIRE_PURE=1 forces the pure records views")
    from kraftwire.codegen.native.build import build_native

    root = tmp_path_factory.mktemp("compiled-views")
    for name in (COMPILED, PURE):
        (root / name).mkdir()
        for path in Path(bundled.__file__).parent.glob("*.py"):
            shutil.copyfile(path, root / name / path.name)
    build_native([], COMPILED, root / COMPILED)
    return root


def _is_compiled(function: object) -> bool:
    return not isinstance(function, types.FunctionType)  # an extension's function is a builtin


@pytest.fixture(scope="module")
def copies(copies_root):
    """``(compiled, pure)``: each copy's ``batches_to_json``, ``read_batch_views`` and
    ``metadata_value_view``, as a namespace."""
    sys.path.insert(0, str(copies_root))
    try:
        made = []
        for name in (COMPILED, PURE):
            chooser = importlib.import_module(f"{name}._view_reader")
            made.append(
                types.SimpleNamespace(
                    batches_to_json=importlib.import_module(f"{name}.records").batches_to_json,
                    read_batch_views=chooser.read_batch_views,
                    metadata_value_view=chooser.metadata_value_view,
                    write_batches_json_text=importlib.import_module(
                        f"{name}.records"
                    ).write_batches_json_text,
                )
            )
        compiled, pure = made
        assert all(_is_compiled(function) for function in vars(compiled).values())
        assert not any(_is_compiled(function) for function in vars(pure).values())
        yield compiled, pure
    finally:
        sys.path.remove(str(copies_root))


def _both(copies, data, **options) -> list[tuple[str, object]]:
    """What the compiled and the pure batches_to_json made of ``data``."""
    options = {"max_decompressed_bytes": LIMIT, "package": bundled, **options}
    return [result(lambda: side.batches_to_json(data, **options)) for side in copies]


# -- batches_to_json ----------------------------------------------------------------------------------


@SETTINGS
@given(data=buffers(), options=view_options, edit=st.data())
def test_compiled_views_equal_the_pure_ones(copies, data, options, edit):
    if edit.draw(st.booleans()):
        data = edit.draw(edited(data))
    compiled, pure = _both(copies, data, **options)
    assert compiled == pure


@SETTINGS
@given(options=metadata_options, edit=st.data())
def test_compiled_metadata_views_equal_the_pure_ones(copies, pkg, metadata_frames, options, edit):
    """Metadata-log values decoded (Kafka's, edited, reframed, arbitrary) into the same members."""
    data = edit.draw(metadata_buffers(metadata_frames))
    if edit.draw(st.integers(0, 3)) == 0:
        data = edit.draw(edited(data))
    compiled, pure = _both(copies, data, values="metadata", **{**options, "package": pkg})
    assert compiled == pure


@pytest.mark.parametrize("values", [None, "metadata", "coordinator"])
def test_compiled_views_of_the_vectors_equal_the_pure_ones(copies, vector_blobs, values):
    """Every records field of Kafka's vectors (written by its Java classes)."""
    for blob in vector_blobs:
        compiled, pure = _both(copies, blob, values=values)
        assert compiled == pure
        assert compiled[0] == "ok"


@pytest.mark.parametrize("edit", KNOWN_CORRUPTIONS)
def test_compiled_views_raise_the_pure_errors(copies, edit):
    compiled, pure = _both(copies, edit(encode_batch(KNOWN)))
    assert compiled == pure
    assert compiled[0] == "raised"


@pytest.mark.parametrize("data, options, error", BAD_OPTIONS)
def test_compiled_views_name_bad_options_as_the_pure_ones(copies, data, options, error):
    for side in copies:
        assert result(lambda: side.batches_to_json(data, **options)) == (
            "raised",
            tuple(error.split(": ", 1)),
        )


# -- the text of the view, written straight from the bytes ------------------------------------------


def _texts(copies, data, package, family) -> list[tuple[str, object]]:
    """What the compiled and the pure write_batches_json_text wrote of ``data`` (or raised)."""
    found = []
    for side in copies:
        w = StringWriter()
        try:
            side.write_batches_json_text(w, data, package, family)
        except Exception as exc:  # anything: the decoders then write the view
            found.append(("raised", type(exc).__name__))
        else:
            found.append(("ok", w.getvalue()))
    return found


def _view_text(copies, data, **options) -> str:
    view = copies[1].batches_to_json(data, **options)
    return json.dumps(view, ensure_ascii=False, separators=(",", ":"))


@SETTINGS
@given(data=buffers(), edit=st.data())
def test_compiled_text_equals_the_pure_text_and_the_view_s(copies, data, edit):
    changed = edit.draw(edited(data)) if edit.draw(st.booleans()) else data
    compiled, pure = _texts(copies, changed, bundled, None)
    assert compiled == pure
    if compiled[0] == "ok":
        assert compiled[1] == _view_text(copies, changed, package=bundled)
    elif changed is data:  # a buffer written whole is given up on only for a lone surrogate
        with pytest.raises(UnicodeEncodeError):
            _view_text(copies, changed, package=bundled).encode()


@SETTINGS
@given(edit=st.data())
def test_compiled_metadata_text_equals_the_pure_text_and_the_view_s(
    copies, pkg, metadata_frames, edit
):
    data = edit.draw(metadata_buffers(metadata_frames))
    if edit.draw(st.integers(0, 3)) == 0:
        data = edit.draw(edited(data))
    compiled, pure = _texts(copies, data, pkg, "metadata")
    assert compiled == pure
    if compiled[0] == "ok":
        options = {"values": "metadata", "family": "metadata", "package": pkg}
        assert compiled[1] == _view_text(copies, data, **options)


def test_compiled_text_of_the_vectors_is_the_view_s(copies, vector_blobs):
    for blob in vector_blobs:
        compiled, pure = _texts(copies, blob, bundled, None)
        assert compiled == pure == ("ok", _view_text(copies, blob, package=bundled))


# -- the parts it calls: the batch reader and the metadata value views ---------------------------------


@SETTINGS
@given(data=buffers(), raw=st.tuples(st.booleans(), st.booleans()), edit=st.data())
def test_compiled_reader_equals_the_pure_one(copies, data, raw, edit):
    """Same views, tail and handed-back records (or None for both) on valid and edited buffers."""
    changed = edit.draw(edited(data)) if edit.draw(st.booleans()) else data
    compiled, pure = (side.read_batch_views(changed, LIMIT, *raw) for side in copies)
    assert compiled == pure
    if changed is data:
        assert compiled is not None
    if compiled is not None:
        assert result(lambda: compiled[0]) == result(lambda: pure[0])  # key order too


@pytest.mark.parametrize("edit", KNOWN_CORRUPTIONS)
def test_compiled_reader_leaves_the_known_corruptions_to_the_object_path(copies, edit):
    data = edit(encode_batch(KNOWN))
    assert [side.read_batch_views(data, LIMIT, True, True) for side in copies] == [None, None]


@SETTINGS
@given(options=metadata_options, draw=st.data())
def test_compiled_metadata_value_view_equals_the_pure_one(
    copies, pkg, metadata_frames, options, draw
):
    """One view of each kind for many values (so its class cache is reused), bytes-like ones too."""
    compiled, pure = (side.metadata_value_view(pkg, options["family"]) for side in copies)
    message_view = options["message_view"]
    for value in draw.draw(st.lists(metadata_values(metadata_frames), min_size=1, max_size=8)):
        kinds = [value] if value is None else [value, bytearray(value), memoryview(value)]
        for given_value in kinds:
            expected = result(lambda: pure(given_value, message_view))
            assert result(lambda: compiled(given_value, message_view)) == expected


# -- which build is chosen ----------------------------------------------------------------------------


def _chosen(root: Path, **env: str) -> list[str]:
    """Which of the reader, the value views and batches_to_json a fresh interpreter takes compiled
    ("native") for the compiled copy in ``root``, after ``_view_reader.IMPLEMENTATION``."""
    script = (
        f"import types, {COMPILED}._view_reader as chooser, {COMPILED}.records as records\n"
        "functions = [chooser.read_batch_views, chooser.metadata_value_view, "
        "records.batches_to_json, records.write_batches_json_text]\n"
        "kinds = ['pure' if isinstance(f, types.FunctionType) else 'native' for f in functions]\n"
        "print(chooser.IMPLEMENTATION, *kinds)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.split()


def test_only_current_extensions_are_chosen(copies_root, tmp_path):
    assert _chosen(copies_root) == ["native"] * 5
    assert _chosen(copies_root, KRAFTWIRE_PURE="1") == ["pure"] * 5
    for index, module in enumerate(BUILT):
        expected = ["native"] * 5
        expected[1 + index] = "pure"
        if module in ("_v2_view", "_logrecords"):  # IMPLEMENTATION: the reader and value views
            expected[0] = "pure"
        stale = tmp_path / f"stale{module}"
        shutil.copytree(copies_root, stale)
        with open(stale / COMPILED / f"{module}.py", "a", encoding="utf-8") as source:
            source.write("# edited after the build\n")
        assert _chosen(stale) == expected, module
        impostor = tmp_path / f"impostor{module}"
        shutil.copytree(copies_root, impostor)
        for path in (impostor / COMPILED).glob(f"_native_{module}.*"):
            path.unlink()
        digest = hashlib.sha256((impostor / COMPILED / f"{module}.py").read_bytes()).hexdigest()
        (impostor / COMPILED / f"_native_{module}.py").write_text(
            f"from .{module} import *\nPURE_SOURCE_SHA256 = {digest!r}\n"
        )
        assert _chosen(impostor) == expected, module


def test_a_rebuild_leaves_a_loaded_build_running(copies_root, tmp_path):
    """The runtime imports a stale build to read its digest; rebuilding the package while that
    process runs (bench/decode.py does) must not rewrite the file it has mapped."""
    root = tmp_path / "rebuilt"
    shutil.copytree(copies_root, root)
    with open(root / COMPILED / "_v2_view.py", "a", encoding="utf-8") as source:
        source.write("# edited after the build\n")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kraftwire.codegen.native.build import build_native\n"
        "from kraftwire.records import encode_batch\n"
        f"import {COMPILED}._view_reader as chooser\n"
        f"old = sys.modules['{COMPILED}._native__v2_view']\n"
        f"build_native([], '{COMPILED}', Path('{COMPILED}'))\n"
        "data = encode_batch([(b'k', b'v', [], 1)] * 50)\n"
        "print(chooser.IMPLEMENTATION, len(old.read_batch_views(data, 1 << 20, True, True)[0]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (done.returncode, done.stdout.split()) == (0, ["pure", "1"]), done.stderr[-500:]
    assert _chosen(root) == ["native"] * 5  # and the new build is the one chosen afterwards
