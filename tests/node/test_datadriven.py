"""The datadriven runner itself: a differing block fails with both outputs shown, and ``--rewrite``
writes the actual output over the expected blocks, keeping commands, comments and blank lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_datadriven import Command, run_file

TRANSCRIPT = """# Echoes its arguments.

echo a b
----
stale line
another stale line

# a comment between blocks
echo c
----
c

echo
----
"""


def echo(cmd: Command) -> str:
    return "\n".join(cmd.args)


def test_a_differing_block_fails_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text(TRANSCRIPT)
    with pytest.raises(AssertionError) as failure:
        run_file(path, echo)
    message = str(failure.value)
    assert "t.txt:3: echo a b" in message and "stale line" in message and "\na\nb" in message
    assert path.read_text() == TRANSCRIPT  # nothing written without --rewrite


def test_rewrite_replaces_only_the_expected_blocks(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text(TRANSCRIPT)
    run_file(path, echo, rewrite=True)
    assert path.read_text() == TRANSCRIPT.replace("stale line\nanother stale line", "a\nb")
    run_file(path, echo)  # and the rewritten file now passes


def test_the_rewrite_option_is_registered_and_off_by_default(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.getoption("rewrite") is False
