"""``kraftwire codegen`` as a user meets it: no lost files, clear errors, --package, --check, progress."""

from __future__ import annotations

import importlib
import io
import sys
from pathlib import Path

import pytest

from kraftwire.cli import main
from kraftwire.codegen.cli import ProgressBar
from kraftwire.codegen.generate import package_name
from kraftwire.codegen.output import HEADER

REPO = Path(__file__).resolve().parents[2]


def codegen(capsys, *args: object) -> tuple[int, str]:
    status = main(["codegen", *map(str, args)])
    return status, capsys.readouterr().err


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_a_folder_of_the_users_files_is_refused_and_left_alone(capsys, small_specs, tmp_path):
    project = tmp_path / "userproj"
    project.mkdir()
    (project / "app.py").write_text("print('my app')\n")
    (project / "settings.py").write_text("DEBUG = True\n")
    status, err = codegen(capsys, "--schemas", small_specs, "--out", project)
    assert status == 2
    assert "app.py, settings.py" in one_line(err) and "--force" in err
    assert sorted(p.name for p in project.iterdir()) == ["app.py", "settings.py"]


def test_force_generates_beside_the_users_files_and_never_removes_them(
    capsys, small_specs, tmp_path
):
    project = tmp_path / "userproj"
    project.mkdir()
    (project / "app.py").write_text("print('my app')\n")
    (small_specs / "QuorumStateData.json").write_bytes(
        (REPO / "schemas/QuorumStateData.json").read_bytes()
    )
    status, _ = codegen(capsys, "--schemas", small_specs, "--out", project, "--force")
    assert status == 0
    assert (project / "quorum_state_data.py").read_text().startswith(HEADER)
    # A regeneration without QuorumStateData removes its stale module, and only that.
    (small_specs / "QuorumStateData.json").unlink()
    status, err = codegen(capsys, "--schemas", small_specs, "--out", project, "--force")
    assert status == 0, err
    assert not (project / "quorum_state_data.py").exists()
    assert (project / "app.py").read_text() == "print('my app')\n"
    assert (project / "vote_request.py").exists()


def test_a_file_of_ours_by_name_but_not_by_header_is_never_overwritten(
    capsys, small_specs, tmp_path
):
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "vote_request.py").write_text("# my own VoteRequest\n")
    status, err = codegen(capsys, "--schemas", small_specs, "--out", out, "--force")
    assert status == 2
    assert "refusing to overwrite vote_request.py" in one_line(err)
    assert (out / "vote_request.py").read_text() == "# my own VoteRequest\n"


def test_regenerating_our_own_package_needs_no_force(capsys, small_specs, tmp_path):
    out = tmp_path / "pkg"
    assert codegen(capsys, "--schemas", small_specs, "--out", out)[0] == 0
    (out / "_runtime.py").write_text("# edited by hand\n")  # a runtime copy: ours by name
    status, err = codegen(capsys, "--schemas", small_specs, "--out", out)
    assert status == 0, err
    assert "1 files written" in err
    assert (out / "_runtime.py").read_text() != "# edited by hand\n"


def test_a_missing_schemas_path_is_a_one_line_usage_error(capsys, tmp_path):
    status, err = codegen(capsys, "--schemas", tmp_path / "absent", "--out", tmp_path / "out")
    assert status == 2
    assert "--schemas" in one_line(err) and "no such file or folder" in err
    assert not (tmp_path / "out").exists()


def test_a_source_without_specs_is_an_error_not_zero_modules(capsys, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    status, err = codegen(capsys, "--schemas", empty, "--out", tmp_path / "out")
    assert status == 1
    assert "no spec" in one_line(err)
    assert not (tmp_path / "out").exists()


def test_placeholder_specs_are_listed_on_one_line(capsys, small_specs, tmp_path):
    status, err = codegen(capsys, "--schemas", small_specs, "--out", tmp_path / "pkg")
    assert status == 0
    [line] = [line for line in err.splitlines() if line.startswith("skipped")]
    assert "ControlledShutdownRequest, ControlledShutdownResponse" in line
    assert "generated 4 modules" in err


def test_out_under_a_file_is_a_one_line_error(capsys, small_specs, tmp_path):
    (tmp_path / "afile").write_text("x")
    status, err = codegen(capsys, "--schemas", small_specs, "--out", tmp_path / "afile" / "pkg")
    assert status == 2
    assert "is under" in one_line(err) and "afile" in err


def test_package_must_be_importable_as_the_out_folder(capsys, small_specs, tmp_path):
    status, err = codegen(
        capsys, "--schemas", small_specs, "--out", tmp_path / "kafka", "--package", "kafkagen"
    )
    assert status == 2
    assert "'kafka'" in one_line(err) and "kafkagen" in err
    status, err = codegen(capsys, "--schemas", small_specs, "--out", tmp_path / "my-codecs")
    assert status == 2
    assert "not a Python import name" in one_line(err)
    status, err = codegen(
        capsys, "--schemas", small_specs, "--out", tmp_path / "x" / "class", "--package", "x.class"
    )
    assert status == 2 and "'class'" in one_line(err)
    assert not (tmp_path / "kafka").exists()


def test_a_dotted_package_is_written_to_the_out_folder_and_imports_under_its_name(
    capsys, small_specs, tmp_path
):
    out = tmp_path / "src" / "myapp" / "kafka"
    (tmp_path / "src" / "myapp").mkdir(parents=True)
    (tmp_path / "src" / "myapp" / "__init__.py").write_text("")
    status, err = codegen(
        capsys, "--schemas", small_specs, "--out", out, "--package", "myapp.kafka"
    )
    assert status == 0, err
    sys.path.insert(0, str(tmp_path / "src"))
    try:
        package = importlib.import_module("myapp.kafka")
        assert package.__doc__.startswith("myapp.kafka:")
        assert package.lookup("VoteRequest").SPEC_NAME == "VoteRequest"
    finally:
        sys.path.remove(str(tmp_path / "src"))
        for name in [n for n in sys.modules if n == "myapp" or n.startswith("myapp.")]:
            del sys.modules[name]


def test_make_generate_keeps_its_package_name():
    assert package_name(REPO / "generated", "kraftwire.generated") == "kraftwire.generated"


def test_check_writes_nothing_and_lists_what_differs(capsys, small_specs, tmp_path):
    out = tmp_path / "pkg"
    status, err = codegen(capsys, "--schemas", small_specs, "--out", out, "--check")
    assert status == 1 and "vote_request.py" in err
    assert not out.exists()
    assert codegen(capsys, "--schemas", small_specs, "--out", out)[0] == 0
    status, err = codegen(capsys, "--schemas", small_specs, "--out", out, "--check")
    assert status == 0, err
    edited = (out / "vote_response.py").read_text() + "# local edit\n"
    (out / "vote_response.py").write_text(edited)
    status, err = codegen(capsys, "--schemas", small_specs, "--out", out, "--check")
    assert status == 1
    assert [line.strip() for line in err.splitlines()[1:]] == ["vote_response.py"]
    assert (out / "vote_response.py").read_text() == edited


@pytest.mark.parametrize("jobs", ["0", "abc"])
def test_jobs_must_be_positive(capsys, small_specs, tmp_path, jobs):
    with pytest.raises(SystemExit) as exit_info:
        main(
            ["codegen", "--schemas", str(small_specs), "--out", str(tmp_path / "p"), "--jobs", jobs]
        )
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--jobs" in err
    assert f"must be a whole number of at least 1, not {jobs!r}" in err  # as `kraftwire decode`


def test_jobs_give_the_same_output(capsys, small_specs, tmp_path):
    assert (
        codegen(capsys, "--schemas", small_specs, "--out", tmp_path / "one" / "pkg", "--jobs", "1")[
            0
        ]
        == 0
    )
    assert (
        codegen(capsys, "--schemas", small_specs, "--out", tmp_path / "two" / "pkg", "--jobs", "2")[
            0
        ]
        == 0
    )
    one = {p.name: p.read_bytes() for p in (tmp_path / "one" / "pkg").iterdir() if p.is_file()}
    two = {p.name: p.read_bytes() for p in (tmp_path / "two" / "pkg").iterdir() if p.is_file()}
    assert one == two


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_and_clears_itself():
    stream = _Terminal()
    bar = ProgressBar(stream)
    for done in range(1, 5):
        bar.update(done, 4)
    bar.close()
    text = stream.getvalue()
    assert "[" + "#" * 15 + "." * 15 + "] 2/4 modules" in text
    assert "4/4 modules" in text and text.endswith("\r")


def test_progress_is_silent_when_stderr_is_not_a_terminal(capsys, small_specs, tmp_path):
    status, err = codegen(capsys, "--schemas", small_specs, "--out", tmp_path / "pkg")
    assert status == 0 and "\r" not in err and "modules]" not in err
    stream = io.StringIO()
    ProgressBar(stream).update(1, 2)
    assert stream.getvalue() == ""
