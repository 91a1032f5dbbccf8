"""``tests/corpus/record.py`` (``make corpus``) replaces the committed corpus: an argument given by
mistake is refused with its usage line before anything is started or written."""

from __future__ import annotations

import pytest

import record


@pytest.mark.parametrize("argv", [["--bogus"], ["tests/corpus/data"]])
def test_record_refuses_an_argument_before_recording(argv, monkeypatch, capsys):
    def never(*_: object) -> None:
        raise AssertionError("started a recording")

    monkeypatch.setattr(record, "record", never)
    monkeypatch.setattr(record, "install", never)
    with pytest.raises(SystemExit) as exit_:
        record.main(argv)
    assert exit_.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err
