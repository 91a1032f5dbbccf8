"""``kraftwire specs check``: a folder that holds no spec is an error, not a pass (a mistyped path
must not read as "checked, no errors")."""

from __future__ import annotations

from pathlib import Path

from kraftwire.cli import main

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def test_a_folder_without_specs_fails_the_check(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.txt").write_text("no specs here\n")
    assert main(["specs", "check", str(tmp_path / "empty"), str(tmp_path / "notes")]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"{tmp_path / 'empty'}: no spec (*.json) found",
        f"{tmp_path / 'notes'}: no spec (*.json) found",
    ]
    assert err == "0 files, 2 errors\n"


def test_a_folder_of_specs_beside_it_still_names_the_empty_one(tmp_path, capsys):
    assert main(["specs", "check", str(SCHEMAS), str(tmp_path)]) == 1
    out, _ = capsys.readouterr()
    assert out.splitlines() == [f"{tmp_path}: no spec (*.json) found"]


def test_a_folder_of_specs_passes(capsys):
    assert main(["specs", "check", str(SCHEMAS)]) == 0
    assert capsys.readouterr().err.endswith(" errors\n")
