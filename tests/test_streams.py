"""The shared stream check (tests/streams.py) catches the usual stream-reader bugs."""

from __future__ import annotations

import pytest

from streams import check_stream, cuttings, decoder_from_reader, feed


def read_line(buffer: bytes, pos: int) -> tuple[bytes | None, int]:
    """A correct reader of newline-terminated lines."""
    end = buffer.find(b"\n", pos)
    return (None, pos) if end < 0 else (buffer[pos:end], end + 1)


LINES = b"one\ntwo\nthree\n"
EXPECTED = [b"one", b"two", b"three"]


def test_a_correct_reader_passes() -> None:
    check_stream(decoder_from_reader(read_line), LINES, EXPECTED, trailing=b"fou")
    assert feed(decoder_from_reader(read_line), [b"on", b"e\ntw", b"o\n"]) == (
        [b"one", b"two"],
        b"",
    )


def test_cuttings_cover_whole_bytes_and_every_split() -> None:
    names = [name for name, _ in cuttings(b"abcd")]
    assert names == ["whole", "byte by byte"] + [f"two pieces cut at {i}" for i in (1, 2, 3)]
    assert all(b"".join(chunks) == b"abcd" for _, chunks in cuttings(b"abcd"))


def test_a_reader_that_drops_the_incomplete_rest_fails() -> None:
    def forgetful(buffer: bytes) -> tuple[list[bytes], bytes]:
        lines, _ = decoder_from_reader(read_line)(buffer)
        return lines, b""

    with pytest.raises(AssertionError, match="byte by byte"):
        check_stream(forgetful, LINES, EXPECTED, trailing=b"fou")


def test_a_reader_that_takes_a_partial_unit_as_complete_fails() -> None:
    def eager(buffer: bytes) -> tuple[list[bytes], bytes]:
        lines, rest = decoder_from_reader(read_line)(buffer)
        return (lines + [rest], b"") if rest else (lines, rest)

    with pytest.raises(AssertionError, match="byte by byte: decoded"):
        check_stream(eager, LINES, EXPECTED, trailing=b"fou")


def test_a_reader_that_raises_on_a_partial_unit_fails() -> None:
    def strict(buffer: bytes) -> tuple[list[bytes], bytes]:
        if not buffer.endswith(b"\n"):
            raise ValueError("truncated")
        return decoder_from_reader(read_line)(buffer)

    with pytest.raises(ValueError):
        check_stream(strict, LINES, EXPECTED, trailing=b"fou")
