"""The records text writer's shortcuts (``_v2_text``): a header key's text and a control record's
text are each made once per distinct bytes. Either way the text is the view's, character for
character (the pure module, run here, is what the compiled build is made from)."""

from __future__ import annotations

import orjson
import pytest

import kraftwire.generated as package
from kraftwire.generated import _v2_text
from kraftwire.records import batches_to_json, encode_batch, encode_control_batch


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)


def _text(data: bytes) -> str:
    writer = _Writer()
    _v2_text.write_batches_json_text(writer, data, package)
    return "".join(writer.parts)


def _view_text(data: bytes) -> str:
    return orjson.dumps(batches_to_json(data, package=package)).decode()


@pytest.mark.parametrize(
    "key", ["source", "", 'quo"te', "back\\slash", "tab\tkey", "del\x7fkey", "ü-key", "x\x00"]
)
def test_header_keys_are_written_as_the_view_writes_them(key):
    data = encode_batch([(b"k", b"v", [(key, b"1"), ("plain", None)], 1_700_000_000_000)])
    assert _text(data) == _view_text(data)


def test_a_control_record_s_text_is_made_once_per_distinct_bytes(monkeypatch):
    _v2_text._CONTROL_TEXTS.clear()
    calls = []
    decode = _v2_text.decode_control_record

    def counted(key, value, *, package=None):
        calls.append((key, value))
        return decode(key, value, package=package)

    monkeypatch.setattr(_v2_text, "decode_control_record", counted)
    markers = encode_control_batch([(1, 3)] * 4 + [(0, 3)], timestamp=1, package=package)
    data = markers + encode_control_batch([(1, 3)] * 3, timestamp=1, package=package)
    assert _text(data) == _view_text(data)
    assert len(calls) == 2  # a COMMIT and an ABORT, each decoded once for its eight records


def test_a_header_key_s_text_is_made_once_per_distinct_bytes(monkeypatch):
    _v2_text._HEADER_KEY_TEXTS.clear()
    calls = []
    dumps = _v2_text._dumps

    def counted(value):
        calls.append(value)
        return dumps(value)

    monkeypatch.setattr(_v2_text, "_dumps", counted)
    records = [(b"k", b"v", [('quo"te', b"1"), ("tab\tkey", b"2")], 1) for _ in range(4)]
    data = encode_batch(records) + encode_batch(records, base_offset=4)
    assert _text(data) == _view_text(data)
    assert calls == ['quo"te', "tab\tkey"]  # each escaped once for its eight records


def test_a_header_key_that_is_not_utf8_is_left_to_the_view_every_time():
    _v2_text._HEADER_KEY_TEXTS.clear()
    data = encode_batch([(b"k", b"v", [(b"\xff-key".decode("utf-8", "surrogateescape"), b"1")], 1)])
    for _ in range(2):  # not remembered as written: the second time raises as the first did
        with pytest.raises(UnicodeError):
            _text(data)
    assert _v2_text._HEADER_KEY_TEXTS == {}
