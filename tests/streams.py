"""One check for every stream reader: fed whole, byte by byte, in every two pieces and with trailing
data, it must decode the same things and hand back what it could not use yet.

A reader is seen as a *decoder*: a callable that takes the bytes buffered so far and returns what it
could decode from their start plus the bytes that remain (an incomplete unit, never an error). That is
how a socket reader, a file tailer or a Spark partition reader drives it: append the next chunk to
the remainder and call again. Adapt a reader to that shape once (see :func:`decoder_from_reader`)
and :func:`check_stream` runs it through every way of cutting the input.

    check_stream(decode_batches, one_batch + two_batches, expected, trailing=half_a_batch)
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

Decoder = Callable[[bytes], "tuple[Sequence[Any], bytes]"]
"""Buffered bytes -> (what was decoded, the bytes that remain undecoded)."""


def feed(decoder: Decoder, chunks: Iterable[bytes]) -> tuple[list[Any], bytes]:
    """Feed ``chunks`` in order, as a reader of a socket would: each chunk is appended to what the
    decoder left over last time. Returns everything decoded and the final remainder."""
    decoded: list[Any] = []
    rest = b""
    for chunk in chunks:
        items, rest = decoder(rest + chunk)
        decoded.extend(items)
    return decoded, bytes(rest)


def cuttings(data: bytes, max_two_piece_splits: int = 512) -> Iterator[tuple[str, list[bytes]]]:
    """The ways of cutting ``data`` that :func:`check_stream` tries, each with a name for failures:
    whole, byte by byte, and two pieces at (up to ``max_two_piece_splits`` evenly spread) offsets.
    """
    yield "whole", [data]
    yield "byte by byte", [data[i : i + 1] for i in range(len(data))]
    step = max(1, len(data) // max_two_piece_splits)
    for cut in range(1, len(data), step):
        yield f"two pieces cut at {cut}", [data[:cut], data[cut:]]


def check_stream(
    decoder: Decoder,
    data: bytes,
    expected: Sequence[Any],
    trailing: bytes,
    same: Callable[[Any, Any], bool] | None = None,
) -> None:
    """Assert that ``decoder`` turns ``data`` into ``expected`` however the input is cut, and that
    with ``trailing`` (an incomplete unit) appended it still decodes exactly ``expected`` and returns
    ``trailing`` as the remainder. ``same(got, want)`` compares one decoded item (default ``==``).
    """
    assert trailing, "trailing must be a non-empty incomplete unit"
    equal = same or (lambda got, want: got == want)
    for with_tail, stream, rest in ((False, data, b""), (True, data + trailing, trailing)):
        for how, chunks in cuttings(stream):
            label = f"{how}{' with trailing data' if with_tail else ''}"
            got, left = feed(decoder, chunks)
            assert len(got) == len(
                expected
            ), f"{label}: decoded {len(got)} items, not {len(expected)}"
            for i, (g, w) in enumerate(zip(got, expected)):
                assert equal(g, w), f"{label}: item {i} is {g!r}, expected {w!r}"
            assert left == rest, f"{label}: {len(left)} bytes left over, expected {len(rest)}"


def decoder_from_reader(
    read_one: Callable[[bytes, int], "tuple[Any | None, int]"],
) -> Decoder:
    """A :data:`Decoder` from a reader of one unit at a position (``read_frame`` style): it returns
    ``(unit, position after it)``, or ``(None, pos)`` while the unit is incomplete."""

    def decode(buffer: bytes) -> tuple[list[Any], bytes]:
        units, pos = [], 0
        while True:
            unit, end = read_one(buffer, pos)
            if unit is None:
                return units, buffer[pos:]
            units.append(unit)
            pos = end

    return decode
