"""Properties files read as ``java.util.Properties.load`` reads them (Kafka loads its configs and
``meta.properties`` that way), so that every file Kafka accepts is read to the same keys and values.

The rules, from the documented behaviour of ``Properties.load(Reader)``:

- Natural lines end at ``\\n``, ``\\r`` or ``\\r\\n``. A line that ends in an odd number of
  backslashes continues on the next one; that backslash, the line end and the next line's leading
  white space (space, tab, form feed) are dropped. An empty continuation line ends the logical line.
- Leading white space is skipped; a line with nothing else is blank and ignored. A line whose first
  other character is ``#`` or ``!`` is a comment, up to its natural end (a backslash there continues
  nothing).
- The key runs to the first unescaped ``=``, ``:`` or white space; the white space after it, then at
  most one ``=`` or ``:``, then more white space, are the separator; the rest of the line is the
  value, trailing white space included. A line with a key only has the value "".
- In keys and values ``\\t``, ``\\n``, ``\\r``, ``\\f`` and ``\\uXXXX`` are escapes; a backslash before
  any other character stands for that character (``\\=``, ``\\:``, ``\\ ``, ``\\\\``).
- A key given twice keeps its last value.

Files are decoded as UTF-8 (which ASCII files, all Kafka writes, already are); a byte that is not
UTF-8 is named by file, line and byte offset.
"""

from __future__ import annotations

import re

__all__ = ["decode_properties", "parse_properties"]

_WHITE = " \t\f"
_LINE_END = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = frozenset("0123456789abcdefABCDEF")


def decode_properties(data: bytes, where: str) -> str:
    """``data`` as text; ``ValueError`` naming ``where``, the line and the byte offset when it is not
    UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{where}:{line}: byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8 "
            "(properties files are read as UTF-8)"
        ) from None


def parse_properties(text: str, where: str) -> dict[str, str]:
    """The keys and values of a properties file's text. Raises ``ValueError`` (naming ``where`` and
    the line) only for a malformed ``\\uXXXX`` escape, as Java does."""
    out: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, value = _split(line)
        try:
            out[_unescape(key)] = _unescape(value)
        except ValueError as exc:
            raise ValueError(f"{where}:{number}: {exc}") from None
    return out


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """``(number of its first natural line, text)`` of each logical line that is not blank or a
    comment, continuations joined."""
    natural = _LINE_END.split(text)
    lines: list[tuple[int, str]] = []
    index = 0
    while index < len(natural):
        number, line = index + 1, natural[index].lstrip(_WHITE)
        index += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line):
            line = line[:-1]
            if index == len(natural):
                break
            following = natural[index].lstrip(_WHITE)
            index += 1
            if not following:
                break
            line += following
        lines.append((number, line))
    return lines


def _continues(line: str) -> bool:
    """Whether ``line`` ends in an odd number of backslashes."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """The key and value of a logical line, both still escaped."""
    escaped = False
    end = len(line)
    value_start = end
    has_separator = False
    for position, char in enumerate(line):
        if not escaped and char in "=:":
            end, value_start, has_separator = position, position + 1, True
            break
        if not escaped and char in _WHITE:
            end, value_start = position, position + 1
            break
        escaped = char == "\\" and not escaped
    while value_start < len(line):
        char = line[value_start]
        if char not in _WHITE:
            if has_separator or char not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:end], line[value_start:]


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        position += 1
        if char != "\\" or position == len(text):
            out.append(char)
            continue
        char = text[position]
        position += 1
        if char == "u":
            digits = text[position : position + 4]
            if len(digits) < 4 or not _HEX.issuperset(digits):
                raise ValueError(f"malformed \\uxxxx escape: \\u{digits}")
            out.append(chr(int(digits, 16)))
            position += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out)
