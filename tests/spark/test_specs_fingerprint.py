"""The specs' fingerprint is remembered by their files' metadata, so a Spark query's planning does
not read and hash every spec file each query; an edited, added or removed spec still gives a new
fingerprint, and a file changed too recently for its metadata to be trusted is read again."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from kraftwire.codegen import package_cache as codecs
from kraftwire.codegen.package_cache import _files_under, specs_fingerprint
from shared import shared_path

MESSAGES = (
    shared_path("kafka-schemas") / "clients" / "src" / "main" / "resources" / "common" / "message"
)


@pytest.fixture()
def spec_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(codecs, "_FINGERPRINTS", {})
    target = tmp_path / "specs"
    target.mkdir()
    for name in ("RequestHeader", "ResponseHeader", "VoteRequest", "VoteResponse"):
        shutil.copy(MESSAGES / f"{name}.json", target)
    return target


@pytest.fixture()
def opened(monkeypatch):
    """The files the fingerprint reads (``codecs`` opens spec files only to hash them)."""
    paths: list[str] = []

    def recording_open(path, *args, **kwargs):
        paths.append(path)
        return open(path, *args, **kwargs)

    monkeypatch.setattr(codecs, "open", recording_open, raising=False)
    return paths


def _afresh(spec_dir) -> str:
    """The fingerprint computed from the files' contents, nothing remembered."""
    saved = dict(codecs._FINGERPRINTS)
    codecs._FINGERPRINTS.clear()
    try:
        return specs_fingerprint([spec_dir])
    finally:
        codecs._FINGERPRINTS.update(saved)


def _same_size_edit(path) -> None:
    """Change one byte of the file (the case of its first letter "y"), keeping its size and its
    modification time."""
    before = path.stat()
    text = path.read_text()
    at = text.lower().index("y")
    path.write_text(text[:at] + text[at].swapcase() + text[at + 1 :])
    assert len(path.read_text()) == len(text) and path.read_text() != text
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_remembered_until_a_spec_is_edited_added_or_removed(spec_dir, opened, monkeypatch):
    monkeypatch.setattr(codecs, "_RACY_NS", -(10**12))  # every file old enough to trust
    first = specs_fingerprint([spec_dir])
    assert opened, "the first fingerprint reads the files"
    opened.clear()
    assert specs_fingerprint([spec_dir]) == first and opened == []  # remembered, nothing read
    vote = spec_dir / "VoteRequest.json"
    vote.write_text(vote.read_text() + "\n")
    edited = specs_fingerprint([spec_dir])
    assert edited != first and edited == _afresh(spec_dir)
    shutil.copy(MESSAGES / "FetchRequest.json", spec_dir)
    added = specs_fingerprint([spec_dir])
    assert added not in (first, edited) and added == _afresh(spec_dir)
    (spec_dir / "FetchRequest.json").unlink()
    assert specs_fingerprint([spec_dir]) == edited


def test_a_same_size_edit_with_its_old_mtime_is_seen(spec_dir):
    """Size and modification time alike, the change time moves (and the files are new: racy)."""
    first = specs_fingerprint([spec_dir])
    _same_size_edit(spec_dir / "VoteRequest.json")
    assert specs_fingerprint([spec_dir]) != first


def test_recently_changed_files_are_read_again(spec_dir, monkeypatch):
    """Metadata that does not change at all: the memo must not answer for files changed within
    the racy window, and answers (by design: metadata is all it looks at) for old ones."""
    now = time.time_ns()
    for changed_at, remembered in ((now, False), (now - 10 * codecs._RACY_NS, True)):
        codecs._FINGERPRINTS.clear()
        monkeypatch.setattr(codecs, "_stamp", lambda path, at=changed_at: (path, 0, 0, 0, at, at))
        first = specs_fingerprint([spec_dir])
        _same_size_edit(spec_dir / "VoteResponse.json")
        assert (specs_fingerprint([spec_dir]) == first) is remembered


def test_files_under_lists_what_rglob_lists(tmp_path):
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a-b").mkdir()
    (root / "__pycache__").mkdir()
    (tmp_path / "elsewhere").mkdir()
    for name in (
        "x.json",
        "a/y.json",
        "a/b/z.json",
        "a-b/w.json",
        "__pycache__/c.json",
        "a/skip.txt",
        ".json",
        "a/b/n.JSON",
        "elsewhere.json",
    ):
        target = root / name if name != "elsewhere.json" else tmp_path / "elsewhere" / "e.json"
        target.write_text("{}")
    (root / "linked").symlink_to(tmp_path / "elsewhere")  # a folder: not entered
    (root / "a" / "link.json").symlink_to(root / "x.json")  # a file: listed
    (root / "a" / "broken.json").symlink_to(tmp_path / "nowhere.json")
    expected = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix == ".json" and "__pycache__" not in p.relative_to(root).parts
    )
    listed = _files_under(root, (".json",))
    assert [path for _, path in listed] == [str(p) for p in expected]
    assert (
        [relative for relative, _ in listed]
        == [str(p.relative_to(root)) for p in expected]
        == ["a/b/z.json", "a/link.json", "a/y.json", "a-b/w.json", "x.json"]
    )
