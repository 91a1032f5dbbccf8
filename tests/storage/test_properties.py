"""Properties files read by java.util.Properties.load's rules: separators, continuations, comments
and escapes as Kafka accepts them, and a file that is not UTF-8 named with where it goes wrong."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwire.node.runtime.config import ConfigError, load_config
from kraftwire.node.storage.properties import decode_properties, parse_properties


@pytest.mark.parametrize(
    "text, expected",
    [
        ("node.id: 1\n", {"node.id": "1"}),
        ("process.roles   controller\n", {"process.roles": "controller"}),
        ("process.roles\tcontroller", {"process.roles": "controller"}),
        ("a = = b", {"a": "= b"}),  # one separator only; the second '=' starts the value
        ("a==b", {"a": "=b"}),
        ("a :b", {"a": "b"}),
        ("flag\n", {"flag": ""}),
        ("flag   \n", {"flag": ""}),
        ("a=b   \n", {"a": "b   "}),  # trailing white space is the value's
        ("   \t a=b", {"a": "b"}),
        ("list=x,\\\n    y,\\\n\ty\n", {"list": "x,y,y"}),
        ("a=b\\\n\nc=d", {"a": "b", "c": "d"}),  # an empty continuation line ends the line
        ("a=b\\", {"a": "b"}),  # a continuation at the end of the file
        ("a=b\\\\\nc=d", {"a": "b\\", "c": "d"}),  # an even run of backslashes continues nothing
        ("a=\\\n# not a comment", {"a": "# not a comment"}),
        ("# comment \\\na=b", {"a": "b"}),  # a comment continues nothing
        ("! comment\n  # indented comment\na=b", {"a": "b"}),
        ("key\\=x = a\\tb\\nc\\u0041\\:\\z", {"key=x": "a\tb\ncA:z"}),
        ("with\\ space=1", {"with space": "1"}),
        ("a=1\r\nb=2\rc=3", {"a": "1", "b": "2", "c": "3"}),
        ("a=1\na=2", {"a": "2"}),
        ("a\\\n  b=c", {"ab": "c"}),
        ("\f\n\n  \n", {}),
    ],
)
def test_java_properties_rules(text, expected):
    assert parse_properties(text, "x.properties") == expected


def test_a_malformed_unicode_escape_is_named_with_its_line():
    with pytest.raises(ValueError, match=r"^x.properties:3: malformed \\uxxxx escape: \\u00g1"):
        parse_properties("a=1\n\nb=\\u00g1\n", "x.properties")
    with pytest.raises(ValueError, match=r"x.properties:1: malformed"):
        parse_properties("b=\\u00", "x.properties")


def test_a_file_that_is_not_utf8_names_the_file_line_and_byte(tmp_path):
    path = tmp_path / "node.properties"
    path.write_bytes(b"node.id=1\nprocess.roles=contr\xf4ller\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert str(caught.value) == (
        f"{path}:2: byte 0xf4 at offset 29 is not UTF-8 (properties files are read as UTF-8)"
    )


def test_kafka_forms_configure_a_node(tmp_path):
    path = tmp_path / "node.properties"
    path.write_text(
        "! Kafka's controller.properties, in the forms Properties.load accepts\n"
        "node.id: 3\n"
        "process.roles   controller\n"
        "listeners=CONTROLLER://127.0.0.1:19093\n"
        "controller.listener.names = CONTROLLER   \n"
        "controller.quorum.bootstrap.servers=127.0.0.1:19093,\\\n"
        "    127.0.0.1:19094\n"
        "metadata.log.dir /tmp/kraft\\u002dmeta\n"
    )
    config = load_config(str(path))
    assert config.node_id == 3 and config.log_dir == "/tmp/kraft-meta"
    assert [e.port for e in config.bootstrap_servers] == [19093, 19094]
    assert config.listener_name == "CONTROLLER"


# -- any map, written as Properties.store would (with a choice of forms), reads back the same --------

_SEPARATORS = ["=", ":", " ", " = ", "\t:  ", "  "]


def _escape(text: str, is_key: bool) -> list[str]:
    """``text`` as escaped tokens: a continuation may go between any two of them."""
    tokens = []
    for char in text:
        if char in "\\=:#! " or (is_key and char in "\t\f"):
            tokens.append("\\" + char)
        elif char in "\t\n\r\f":
            tokens.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[char])
        elif not char.isprintable() or ord(char) > 0x7E:
            tokens.append(f"\\u{ord(char):04x}" if ord(char) < 0x10000 else char)
        else:
            tokens.append(char)
    return tokens


@st.composite
def _files(draw):
    text_chars = st.characters(blacklist_categories=("Cs",))
    entries = draw(
        st.dictionaries(
            st.text(text_chars, max_size=8), st.text(text_chars, max_size=12), max_size=6
        )
    )
    lines = []
    for key, value in entries.items():
        if draw(st.booleans()):
            lines.append(
                draw(st.sampled_from(["#", "!", "  # "]))
                + draw(st.text(text_chars, max_size=5)).replace("\n", " ").replace("\r", " ")
            )
        if key:
            tokens = _escape(key, True) + [draw(st.sampled_from(_SEPARATORS))]
        else:  # an empty key: the line starts with its separator
            tokens = [draw(st.sampled_from(["=", ":"]))]
        value_tokens = _escape(value, False)
        for token in value_tokens:
            if draw(st.integers(0, 4)) == 0:
                tokens.append(
                    "\\"
                    + draw(st.sampled_from(["\n", "\r\n", "\r"]))
                    + draw(st.sampled_from(["", " ", "\t  "]))
                )
            tokens.append(token)
        lines.append(draw(st.sampled_from(["", " ", "\t"])) + "".join(tokens))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return entries, ending.join(lines) + draw(st.sampled_from(["", ending]))


@given(_files())
def test_what_is_written_reads_back(case):
    entries, text = case
    assert parse_properties(text, "p") == entries


@given(st.binary(max_size=40))
def test_decoding_either_gives_the_text_or_names_where(data):
    try:
        text = decode_properties(data, "p")
    except ValueError as exc:
        assert str(exc).startswith("p:") and "at offset" in str(exc)
    else:
        assert text.encode("utf-8") == data
