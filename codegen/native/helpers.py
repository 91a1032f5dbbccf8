"""The typed helpers of the native modules, each emitted only into a module that calls it.

A compiled codec that called the package's pure ``_runtime`` for a varint, a string or a uuid would
leave C for the interpreter on every such value. These helpers are the same reads and writes as typed
code that mypyc compiles into the module itself, so the readers, writers and JSON views call them as C
functions. They keep no error detail: on anything the runtime's function of the same job refuses (and
on the rare forms that would need its detail) they raise ``_Invalid`` or let Python's own error
through, and the class method hands the input to the pure twin, which raises the exact error.

``used_helpers`` picks the helpers a module's body names, with the helpers those name in turn; the
prelude emits them in this file's order, so a module holds no function it never calls.
"""

from __future__ import annotations

import re

# name -> source, in the order they are emitted (a helper may call the ones before it)
HELPERS: dict[str, str] = {}


def _helper(source: str) -> None:
    """Add the function (or the constant) that ``source`` defines, after its comment if any."""
    name = re.search(r"^(?:def )?(\w+)[(:]", source, re.MULTILINE)
    assert name is not None
    HELPERS[name.group(1)] = source.strip("\n")


# -- fixed-width values -------------------------------------------------------------------------------

_helper("""
def _i8(byte: int) -> int:
    return byte - 256 if byte > 127 else byte
""")

_helper("""
def _put_i8(w: BytesWriter, value: int) -> None:
    if value < -128 or value > 127:
        raise _Invalid()
    w.append(value & 0xFF)
""")

_helper("""
def _put_u16(w: BytesWriter, value: int) -> None:
    if value < 0 or value > 0xFFFF:
        raise _Invalid()
    write_i16_be(w, value - 0x10000 if value > 0x7FFF else value)
""")

_helper("""
def _put_u32(w: BytesWriter, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise _Invalid()
    write_i32_be(w, value - 0x100000000 if value > 0x7FFFFFFF else value)
""")

# -- varints, lengths and counts --------------------------------------------------------------------

_helper('''
def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint of one to five bytes below 2**31, and the position after it.

    The runtime's read_uvarint reads the larger ones as negative ints, which every caller refuses
    (as a length, a count, a tag or a marker); here they are refused at once, and so are padded
    varints (a last group of zero) and ones longer than five bytes.
    """
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    value = byte & 0x7F
    shift = 7
    while True:
        pos += 1
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if byte == 0 or value > 0x7FFFFFFF:
                raise _Invalid()
            return value, pos + 1
        shift += 7
        if shift > 28:
            raise _Invalid()
''')

_helper('''
def _read_array_count(buf: bytes, pos: int) -> tuple[int, int]:
    """A classic array's count (int32; -1 for null), no more than the bytes that remain."""
    count = int(read_i32_be(buf, pos))
    pos += 4
    if count < -1 or count > len(buf) - pos:
        raise _Invalid()
    return count, pos
''')

_helper('''
def _read_compact_array_count(buf: bytes, pos: int) -> tuple[int, int]:
    """A compact array's count (a varint of count + 1; -1 here for its null, 0), no more than the
    bytes that remain."""
    count, pos = _read_uvarint(buf, pos)
    count -= 1
    if count > len(buf) - pos:
        raise _Invalid()
    return count, pos
''')

_helper('''
def _read_tag_count(buf: bytes, pos: int) -> tuple[int, int]:
    """The number of fields of a tagged section: each takes two bytes at least."""
    count, pos = _read_uvarint(buf, pos)
    if count > (len(buf) - pos) >> 1:
        raise _Invalid()
    return count, pos
''')

_helper('''
def _read_tag_size(buf: bytes, pos: int) -> tuple[int, int]:
    """The size of a tagged field's value, no more than the bytes that remain."""
    size, pos = _read_uvarint(buf, pos)
    if size > len(buf) - pos:
        raise _Invalid()
    return size, pos
''')

_helper("""
def _put_uvarint(w: BytesWriter, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise _Invalid()
    while value >= 0x80:
        w.append((value & 0x7F) | 0x80)
        value >>= 7
    w.append(value)
""")

# -- strings and bytes ------------------------------------------------------------------------------
# A reader returns None for a null; the caller of a field that is not nullable refuses it.

_helper('''
def _read_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    """A classic string: int16 length (-1 for null), then UTF-8 (malformed raises)."""
    size = int(read_i16_be(buf, pos))
    pos += 2
    if size < 0:
        if size != -1:
            raise _Invalid()
        return None, pos
    end = pos + size
    if end > len(buf):
        raise _Invalid()
    return buf[pos:end].decode(), end
''')

_helper('''
def _read_compact_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    """A compact string: varint length + 1 (0 for null, at most 0x7FFF bytes), then UTF-8."""
    size, pos = _read_uvarint(buf, pos)
    if size == 0:
        return None, pos
    end = pos + size - 1
    if size > 0x8000 or end > len(buf):
        raise _Invalid()
    return buf[pos:end].decode(), end
''')

_helper('''
def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    """Classic bytes: int32 length (-1 for null), then the bytes."""
    size = int(read_i32_be(buf, pos))
    pos += 4
    if size < 0:
        if size != -1:
            raise _Invalid()
        return None, pos
    end = pos + size
    if end > len(buf):
        raise _Invalid()
    return buf[pos:end], end
''')

_helper('''
def _read_compact_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    """Compact bytes: varint length + 1 (0 for null), then the bytes."""
    size, pos = _read_uvarint(buf, pos)
    if size == 0:
        return None, pos
    end = pos + size - 1
    if end > len(buf):
        raise _Invalid()
    return buf[pos:end], end
''')

_helper('''
def _put_string(w: BytesWriter, value: Any) -> None:
    """A classic string that is not null: int16 length, then UTF-8."""
    data: bytes = value.encode()
    size = len(data)
    if size > 0x7FFF:
        raise _Invalid()
    write_i16_be(w, size)
    w.write(data)
''')

_helper('''
def _put_compact_string(w: BytesWriter, value: Any) -> None:
    """A compact string that is not null: varint length + 1, then UTF-8."""
    data: bytes = value.encode()
    size = len(data)
    if size < 127:
        w.append(size + 1)
    elif size <= 0x7FFF:
        _put_uvarint(w, size + 1)
    else:
        raise _Invalid()
    w.write(data)
''')

_helper('''
def _put_bytes(w: BytesWriter, value: Any) -> None:
    """Classic bytes that are not null: int32 length, then the bytes (other bytes-like values are
    the runtime's to write)."""
    if type(value) is not bytes:
        raise _Invalid()
    write_i32_be(w, len(value))
    w.write(value)
''')

_helper('''
def _put_compact_bytes(w: BytesWriter, value: Any) -> None:
    """Compact bytes that are not null: varint length + 1, then the bytes."""
    if type(value) is not bytes:
        raise _Invalid()
    _put_uvarint(w, len(value) + 1)
    w.write(value)
''')

# -- uuids --------------------------------------------------------------------------------------------

_helper("""
# The same few ids (topics, directories) recur in every message: each is made once, by the runtime's
# uuid_from_wire, and kept here by its 16 bytes (bounded: cleared when full).
_UUIDS: Final[dict[bytes, Any]] = {}
""")

_helper('''
def _read_uuid(buf: bytes, pos: int) -> Any:
    """The UUID of the 16 bytes at ``pos`` (the runtime's ZERO_UUID for all zeros)."""
    raw = buf[pos : pos + 16]
    found = _UUIDS.get(raw)
    if found is None:
        if len(raw) != 16:
            raise _Invalid()
        found = _ZERO_UUID if raw == _ZERO_BYTES else _uuid_from_wire(raw)
        if len(_UUIDS) >= 4096:
            _UUIDS.clear()
        _UUIDS[raw] = found
    return found
''')

# -- JSON -----------------------------------------------------------------------------------------------

_helper("""
# uuid_to_json's text of the UUIDs met so far, by their int (a UUID's own hash runs in Python)
_UUID_TEXTS: Final[dict[int, str]] = {}
""")

_helper('''
def _uuid_to_json(value: Any) -> str:
    """The runtime's uuid_to_json text (base64url, unpadded) of a UUID, without its Python steps
    (the ``bytes`` property, two base64 functions); anything else goes to that function itself."""
    if type(value) is not _UUID:
        found: str = _runtime_uuid_to_json(value)
        return found
    number: int = value.int
    text = _UUID_TEXTS.get(number)
    if text is None:
        encoded = b2a_base64(number.to_bytes(16, "big"), newline=False).decode("ascii")
        text = encoded[:22].replace("+", "-").replace("/", "_")
        if len(_UUID_TEXTS) >= 4096:
            _UUID_TEXTS.clear()
        _UUID_TEXTS[number] = text
    return text
''')

_helper('''
def _uuid_differs(value: Any, default: Any) -> bool:
    """``value != default`` for a uuid field's default, comparing ints when ``value`` is a UUID
    (UUID.__eq__ runs in Python); a read gives the default's own object for the zero uuid."""
    if value is default:
        return False
    if type(value) is _UUID:
        return bool(value.int != default.int)
    return bool(value != default)
''')

_helper('''
def _bytes_to_json(value: Any) -> str:
    """The runtime's bytes_to_json: what base64.b64encode calls, without its Python frame."""
    text: str = b2a_base64(value, newline=False).decode("ascii")
    return text
''')

# -- JSON text (texts.py): a value's text appended to a StringWriter, exactly as orjson writes the
# view's value; anything but the types a read gives raises, and the caller writes the view instead.

_helper("""
def _text_int(w: StringWriter, value: Any) -> None:
    if type(value) is int:
        w.write(str(value))
    elif value is None:
        w.write("null")
    else:  # a bool or an int subclass: the view's encoder decides
        raise _Invalid()
""")

_helper("""
def _text_bool(w: StringWriter, value: Any) -> None:
    if value is True:
        w.write("true")
    elif value is False:
        w.write("false")
    elif value is None:
        w.write("null")
    else:
        raise _Invalid()
""")

_helper("""
# the JSON text of the strings met so far (topic names, hosts, ids repeat in real traffic)
_STRING_TEXTS: Final[dict[str, str]] = {}
""")

_helper('''
def _text_str(w: StringWriter, value: Any) -> None:
    """A string as json.dumps(ensure_ascii=False) and orjson both write it (quotes, backslashes and
    control characters escaped, nothing else); a lone surrogate, which orjson refuses, raises."""
    if type(value) is not str:
        if value is None:
            w.write("null")
            return
        raise _Invalid()
    text = _STRING_TEXTS.get(value)
    if text is None:
        if not value.isascii():
            value.encode()  # UnicodeEncodeError on a lone surrogate
        text = _quote_json_string(value)
        if len(_STRING_TEXTS) >= 4096:
            _STRING_TEXTS.clear()
        _STRING_TEXTS[value] = text
    w.write(text)
''')

_helper("""
def _text_uuid(w: StringWriter, value: Any) -> None:
    if type(value) is _UUID:
        w.write('"')
        w.write(_uuid_to_json(value))
        w.write('"')
    elif value is None:
        w.write("null")
    else:
        raise _Invalid()
""")

_helper("""
def _text_bytes(w: StringWriter, value: Any) -> None:
    if type(value) is bytes:
        w.write('"')
        w.write(_bytes_to_json(value))
        w.write('"')
    elif value is None:
        w.write("null")
    else:  # a bytearray or memoryview: the view's converter decides
        raise _Invalid()
""")

# -- what names a records field's topic (texts.py): the decoders' test of each field

_helper("""
def _topic_by_name(value: Any, given: Any) -> Any:
    return value if isinstance(value, str) and value else given
""")

_helper("""
def _topic_by_id(value: Any, given: Any) -> Any:
    return value if isinstance(value, _UUID) and value.int else given
""")

_IDENTIFIER = re.compile(r"\b_?[A-Za-z]\w*\b")


def names_in(source: str) -> set[str]:
    """Every identifier in ``source`` (a superset of the names it uses: enough to select by)."""
    return set(_IDENTIFIER.findall(source))


def used_helpers(body: str) -> list[str]:
    """The helpers ``body`` names, with those they name in turn, in ``HELPERS`` order."""
    wanted = {name for name in names_in(body) if name in HELPERS}
    pending = list(wanted)
    while pending:
        for name in names_in(HELPERS[pending.pop()]):
            if name in HELPERS and name not in wanted:
                wanted.add(name)
                pending.append(name)
    return [name for name in HELPERS if name in wanted]
