"""The per-packet and per-frame fast paths give exactly what the general code gives.

Each fast path is a shortcut for the common case (untagged Ethernet + IPv4 without options, a frame
that starts a fresh buffer, an in-order segment); these tests build the common case and its near
misses and compare the shortcut with the general code it stands for, and check the shortcut is taken.
"""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.spark_decoders.packets import layers
from kraftwire.spark_decoders.kafka.framing import Frame, FrameReader
from kraftwire.spark_decoders.kafka.headers import (
    plausible_request,
    plausible_response,
    read_correlation_id,
    read_request_head,
)
from kraftwire.spark_decoders.kafka.bodies import _field_kinds
from kraftwire.spark_decoders.kafka.jsonview import dumps, json_view
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET, tcp_segment
from kraftwire.spark_decoders.packets.reassembly import TcpStream
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges


def _ethernet_ipv4_tcp(
    version_ihl: int,
    total: int,
    frag: int,
    proto: int,
    data_offset: int,
    flags: int,
    body: bytes,
) -> bytes:
    ip = struct.pack(
        ">BBHHHBBH4s4s",
        version_ihl,
        0,
        total,
        7,
        frag,
        64,
        proto,
        0,
        bytes([10, 0, 0, 1]),
        bytes([10, 0, 0, 2]),
    )
    options = b"\x00" * 4 * ((version_ihl & 0x0F) - 5) if version_ihl & 0x0F > 5 else b""
    tcp = struct.pack(
        ">HHIIBBHHH", 40001, 9092, 0xFFFFFFF0, 12345, data_offset << 4, flags, 0, 0, 0
    )
    tcp += b"\x01" * max(0, (data_offset - 5) * 4)
    return b"\x02" * 12 + b"\x08\x00" + ip + options + tcp + body


packets = st.builds(
    _ethernet_ipv4_tcp,
    version_ihl=st.sampled_from([0x45, 0x45, 0x46, 0x44, 0x65]),
    total=st.one_of(st.integers(0, 2000), st.just(0)),
    frag=st.sampled_from([0, 0x4000, 0x2000, 0x2001, 0x0005]),
    proto=st.sampled_from([6, 6, 17]),
    data_offset=st.integers(0, 15),
    flags=st.integers(0, 255),
    body=st.binary(max_size=300),
)


@settings(max_examples=400, deadline=None)
@given(packet=packets, cut=st.integers(0, 400), extra=st.integers(0, 3000))
def test_ethernet_ipv4_fast_path_equals_the_general_path(packet, cut, extra):
    """Whatever the header says (options, fragments, other protocols, bogus lengths, TSO's total
    length 0) and however the snaplen cut it, the one-unpack path agrees with the layered one."""
    data = packet[: max(0, len(packet) - cut)]
    orig_len = len(packet) + extra
    assert tcp_segment(LINK_ETHERNET, data, orig_len) == layers._ipv4(data, 14, orig_len)
    # compiled, bytes are read with librt's readers and a view with struct: the same segment
    assert tcp_segment(LINK_ETHERNET, memoryview(data), orig_len) == layers._ipv4(
        data, 14, orig_len
    )


def test_common_packet_takes_the_fast_path(monkeypatch):
    def general(*args):
        raise AssertionError("the common case went through the layered path")

    monkeypatch.setattr(layers, "_ipv4", general)
    packet = _ethernet_ipv4_tcp(0x45, 20 + 20 + 5, 0x4000, 6, 5, 0x18, b"hello")
    seg = tcp_segment(LINK_ETHERNET, packet, len(packet))
    assert seg == ("10.0.0.1", 40001, "10.0.0.2", 9092, 0xFFFFFFF0, 12345, 0x18, b"hello", 0, False)
    assert type(seg) is layers.Segment and seg.payload == b"hello"


@pytest.mark.parametrize("cut", [1, 5])
def test_fast_path_reports_what_the_snaplen_cut(cut):
    packet = _ethernet_ipv4_tcp(0x45, 20 + 20 + 5, 0, 6, 5, 0x18, b"hello")
    seg = tcp_segment(LINK_ETHERNET, packet[:-cut], len(packet))
    assert seg.payload == b"hello"[:-cut] and seg.missing == cut


def test_compiled_json_view_equals_the_codec_to_json_on_every_vector(upstream):
    """Every one of Kafka's 6,144 vectors, decoded: the compiled view is the codec's ``to_json``,
    key order included, and ``dumps`` writes what ``json.dumps`` with the same options writes."""
    from shared import shared_path
    from vectors import load_vectors

    checked = 0
    for vector in load_vectors(shared_path("kafka-vectors")):
        message = upstream.lookup(vector.spec).decode(vector.data, vector.version)
        expected = message.to_json(vector.version)
        view = json_view(message, vector.version)
        assert view == expected, vector.name
        text = json.dumps(expected, ensure_ascii=False, separators=(",", ":"))
        assert dumps(view) == text, vector.name
        if "float64" not in _field_kinds(type(message)):  # as BodyDecoder writes its bodies
            assert dumps(view, may_hold_floats=False) == text, vector.name
        checked += 1
    assert checked == 6144


def test_json_view_of_a_version_the_message_lacks_raises_the_codec_error(upstream):
    message = upstream.lookup("VoteRequest")()
    with pytest.raises(upstream.UnsupportedVersionError):
        json_view(message, 99)


def _general_data(reader: FrameReader, payload: bytes, packet: int, ts_ns: int) -> None:
    """``reader.data`` as it was before the fresh-buffer shortcut: every payload goes into the
    buffer. (Written beside the reader, not as a subclass: the compiled FrameReader has none.)"""
    if reader.buf or not reader.synced:
        reader.data(payload, packet, ts_ns)
        return
    reader.first_packet = packet
    reader.packet_starts.append((0, packet))
    reader.buf += payload
    reader.last_packet, reader.last_ts = packet, ts_ns
    reader._frames()


EXCHANGES = kraft_exchanges(12, seed=5, first_correlation_id=1000)


@st.composite
def damaged_streams(draw, side: str) -> tuple[list[bytes | None], set[int]]:
    """Frames of one direction, some cut short or preceded by junk, cut into packets, with gaps."""
    frames = [e.request if side == "request" else e.response for e in EXCHANGES]
    data = bytearray()
    for frame in draw(st.lists(st.sampled_from(frames), min_size=1, max_size=10)):
        junk = draw(st.sampled_from([b"", b"", b"", b"\x00\x00", b"\xff" * 5, b"\x00\x00\x01\x00"]))
        data += junk + frame[: draw(st.sampled_from([len(frame), len(frame), 7, 2]))]
    chunks: list[bytes | None] = []
    pos = 0
    while pos < len(data):
        size = draw(st.sampled_from([1, 3, 17, 100, 1460, 100_000]))
        chunks.append(bytes(data[pos : pos + size]))
        pos += size
        if draw(st.integers(0, 9)) == 0:
            chunks.append(None)  # a gap
    pending = set(draw(st.sets(st.sampled_from([e.correlation_id for e in EXCHANGES]))))
    return chunks, pending


def _feed(general: bool, chunks, side: str, pending: set[int]):
    frames: list[Frame] = []
    check = plausible_request if side == "request" else plausible_response(pending)
    reader = FrameReader(frames.append, check)
    for number, chunk in enumerate(chunks, 1):
        if chunk is None:
            reader.gap("gap")
        elif general:
            _general_data(reader, chunk, number, number * 10)
        else:
            reader.data(chunk, number, number * 10)
    state = (
        bytes(reader.buf),
        reader.synced,
    )  # finish() reports a frame in progress with its packets
    reader.finish()
    return frames, state


@pytest.mark.parametrize("side", ["request", "response"])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_frame_reader_shortcut_equals_the_general_path(side, data):
    chunks, pending = data.draw(damaged_streams(side))
    assert _feed(False, chunks, side, pending) == _feed(True, chunks, side, pending)


class _Record:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def data(self, payload: bytes, packet: int, ts_ns: int) -> None:
        self.events.append(("data", payload, packet, ts_ns))

    def gap(self, kind: str) -> None:
        self.events.append(("gap", kind))


segment_plans = st.lists(
    st.tuples(
        # offset from the stream's start, or None: right after the previous segment (in order)
        st.one_of(st.none(), st.none(), st.integers(-40, 120)),
        st.integers(0, 30),  # payload length
        st.sampled_from([0x10, 0x18, 0x18, 0x19, 0x02, 0x04, 0x11]),  # ACK, PSH, FIN, SYN, RST
        st.sampled_from([0, 0, 0, 3]),  # bytes the snaplen cut off
        st.one_of(st.none(), st.integers(-10, 150)),  # the peer's acknowledgement, if any
    ),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(plan=segment_plans, isn=st.sampled_from([0, 0xFFFFFFF0, 12345]), syn=st.booleans())
def test_tcp_stream_shortcut_equals_the_general_path(plan, isn, syn):
    """In order, out of order, overlapping, retransmitted, wrapped, cut or flagged: the in-order
    shortcut hands the sink exactly what the general path hands it."""
    data = bytes(range(256))
    outcomes = []
    for general in (False, True):
        sink = _Record()
        stream = TcpStream(sink)
        # the general path takes every segment: no in-order or bare-acknowledgement shortcut
        segment = stream._any_segment if general else stream.segment
        if syn:  # else the stream starts mid-way, at whatever comes first
            segment(isn, 0x02, b"", 0, 0, 0)
        cursor = 0
        for number, (offset, length, flags, missing, peer_ack) in enumerate(plan, 1):
            offset = cursor if offset is None else offset
            cursor = offset + length + missing
            if peer_ack is not None:
                stream.peer_ack((isn + 1 + peer_ack) & 0xFFFFFFFF)
            seq = (isn + 1 + offset) & 0xFFFFFFFF
            payload = data[offset % 200 : offset % 200 + length]
            segment(seq, flags, payload, missing, number, number * 10)
        stream.finish()
        outcomes.append((sink.events, stream.next_seq, stream.fin, stream.retransmits, stream.gaps))
    assert outcomes[0] == outcomes[1]


@settings(max_examples=500, deadline=None)
@given(acks=st.lists(st.integers(0, 0xFFFFFFFF) | st.sampled_from([0, 1, 0x7FFFFFFF, 0x80000000])))
def test_peer_ack_keeps_the_furthest_acknowledgement_modulo_2_32(acks):
    from kraftwire.spark_decoders.packets.reassembly import seq_diff

    stream, expected = TcpStream(_Record()), None
    for ack in acks:
        stream.peer_ack(ack)
        if expected is None or seq_diff(ack, expected) > 0:
            expected = ack
        assert stream.peer_acked == expected


def _twin_module(module):
    """A second instance of a generated spec module: classes of other identities that share the
    first module's JSON layout tables (their defaults the first module's objects), as the compiled
    (native) classes share the pure ones' (``_native_loader.install``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(module.__name__ + "_twin", module.__file__)
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)
    for name, value in vars(module).items():
        if isinstance(value, type) and "_JSON" in vars(value):
            getattr(twin, name)._JSON = value._JSON
    return twin


def _as_twin(value, twin):
    """``value`` rebuilt from the twin module's classes (what the native loader's conversion does)."""
    cls = getattr(twin, type(value).__name__, None) if hasattr(value, "_KINDS") else None
    if cls is not None:
        made = object.__new__(cls)
        for name in [*type(value)._KINDS, "unknown_tagged_fields"]:
            setattr(made, name, _as_twin(getattr(value, name), twin))
        return made
    if isinstance(value, list):
        return [_as_twin(item, twin) for item in value]
    return value


def test_json_view_of_twin_class_objects_equals_the_pure_to_json(upstream):
    """Tagged struct fields (Fetch's replicaState, divergingEpoch, currentLeader, snapshotId) are
    left out at their default also when the value is another class's object than the default, as
    every compiled value is: the view of the twin objects is the pure ``to_json``, on every Fetch
    vector and on one whose tagged structs are set."""
    import sys

    from shared import shared_path
    from vectors import load_vectors

    checked = 0
    for spec_name in ("FetchRequest", "FetchResponse"):
        pure_class = upstream.lookup(spec_name)
        twin = _twin_module(sys.modules[pure_class.__module__])
        for vector in load_vectors(shared_path("kafka-vectors")):
            if vector.spec != spec_name:
                continue
            message = pure_class.decode(vector.data, vector.version)
            twin_message = _as_twin(message, twin)
            assert type(twin_message) is not pure_class
            assert json_view(twin_message, vector.version) == message.to_json(vector.version)
            checked += 1
    request = upstream.lookup("FetchRequest")()
    request.replica_state.replica_id = 3
    twin_request = _as_twin(request, _twin_module(sys.modules[type(request).__module__]))
    view = json_view(twin_request, 15)
    assert view == request.to_json(15) and view["replicaState"]["replicaId"] == 3
    assert checked > 20


def test_bundled_codecs_views_equal_their_to_json(monkeypatch):
    """The bundled package's classes (the compiled ones when ``make native`` built them): view and
    ``to_json`` agree on every vector of a spec the bundled set has."""
    import kraftwire.generated as bundled
    from shared import shared_path
    from vectors import load_vectors

    checked = 0
    for vector in load_vectors(shared_path("kafka-vectors")):
        try:
            cls = bundled.lookup(vector.spec)
            message = cls.decode(vector.data, vector.version)
        except (KeyError, bundled.UnsupportedVersionError):
            continue
        assert json_view(message, vector.version) == message.to_json(vector.version), vector.name
        checked += 1
    assert checked > 100, bundled.CODEC_IMPLEMENTATION


# Every text, lone surrogates (what surrogateescape makes of bytes that were not UTF-8) included.
any_text = st.text(max_size=10) | st.text(st.characters(codec=None), max_size=10)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | any_text,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(view=st.dictionaries(any_text, json_values, max_size=6))
def test_dumps_writes_what_json_dumps_writes(view):
    """The once-built C encoder gives json.dumps's text with the same options: non-ASCII kept,
    NaN and infinities, big integers, nesting."""
    assert dumps(view) == _json_dumps_text(view)


def _json_dumps_text(view: dict) -> str:
    """What ``dumps`` must write: json.dumps's compact text, non-ASCII kept unless the view holds
    lone surrogates (which UTF-8 cannot hold): then all of it escaped."""
    text = json.dumps(view, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(view, separators=(",", ":"))
    return text


float_free_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)  # past 64 bits orjson refuses: the standard encoder writes it
    | any_text,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(any_text, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(view=st.dictionaries(any_text, float_free_values, max_size=6))
def test_dumps_of_a_float_free_view_writes_what_json_dumps_writes(view):
    """The faster writer (orjson) of views without floats: the same text, escapes, control
    characters and non-ASCII included; what it refuses falls back to the standard encoder."""
    assert dumps(view, may_hold_floats=False) == _json_dumps_text(view)


def test_dumps_of_a_view_nested_past_orjson_depth_limit():
    view: dict = {"a": []}
    for _ in range(300):
        view = {"a": [view]}
    assert dumps(view, may_hold_floats=False) == json.dumps(
        view, ensure_ascii=False, separators=(",", ":")
    )


header_payloads = st.one_of(
    st.binary(max_size=40),
    st.builds(
        lambda head, client_id, rest: head + struct.pack(">h", len(client_id)) + client_id + rest,
        st.binary(min_size=8, max_size=8),
        st.one_of(st.text(max_size=12).map(str.encode), st.binary(max_size=12)),
        st.one_of(st.just(b"\x00"), st.binary(max_size=12)),
    ),
    st.builds(
        lambda head, rest: head + b"\xff\xff" + rest,
        st.binary(min_size=8, max_size=8),
        st.binary(max_size=6),
    ),
)


@settings(max_examples=500, deadline=None)
@given(payload=header_payloads, header_version=st.integers(0, 3))
def test_request_body_start_is_where_the_header_codec_stops(upstream, payload, header_version):
    """The shortcut past a request header either declines (None) or names the offset where the
    codec's own header reader stops; the headers it declines are the ones the codec may reject."""
    from kraftwire.spark_decoders.kafka.headers import request_body_start

    start = request_body_start(payload, header_version)
    if start is not None:
        _, end = upstream.lookup("RequestHeader").read(payload, 0, header_version)
        assert start == end


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=12), header_version=st.integers(0, 2))
def test_response_body_start_is_where_the_header_codec_stops(upstream, payload, header_version):
    from kraftwire.spark_decoders.kafka.headers import response_body_start

    start = response_body_start(payload, header_version)
    if start is not None:
        _, end = upstream.lookup("ResponseHeader").read(payload, 0, header_version)
        assert start == end


def test_plain_headers_take_the_shortcut():
    from kraftwire.spark_decoders.kafka.headers import request_body_start, response_body_start

    request = struct.pack(">hhih", 1, 17, 7, 3) + b"abc" + b"\x00" + b"body"
    assert [request_body_start(request, v) for v in (0, 1, 2)] == [None, 13, 14]
    assert request_body_start(struct.pack(">hhih", 1, 17, 7, -1) + b"\x00", 2) == 11
    assert request_body_start(struct.pack(">hhih", 1, 17, 7, 2) + "é".encode(), 1) == 12
    assert request_body_start(struct.pack(">hhih", 1, 17, 7, 2) + b"\xc3(", 1) is None
    assert request_body_start(request[:13] + b"\x01", 2) is None  # tagged fields: the codec's
    assert [response_body_start(b"\x00\x00\x00\x07\x00", v) for v in (0, 1)] == [4, 5]


def test_bare_segments_that_change_the_stream_are_not_skipped():
    """The bare-acknowledgement shortcut passes over nothing that matters: a bare FIN closes, a
    bare RST closes, and a bare ACK on a stream not started yet fixes where it starts."""
    for flags in (0x11, 0x14):
        stream = TcpStream(_Record())
        stream.segment(100, 0x02, b"", 0, 1, 1)
        stream.segment(101, flags, b"", 0, 2, 2)
        assert stream.fin
    stream = TcpStream(_Record())
    stream.segment(500, 0x10, b"", 0, 1, 1)
    assert stream.next_seq == 500


NEAR_NOW_NS = 1_700_000_000_000_000_000
timestamps_ns = (
    st.integers(-(2**63), 2**64 * 1000)
    | st.integers(NEAR_NOW_NS - 2 * 10**9, NEAR_NOW_NS + 2 * 10**9)
    | st.sampled_from([0, -1, 999, 10**9 - 1, 10**9, 253_402_300_800 * 10**9 - 1])
)


@settings(max_examples=500, deadline=None)
@given(values=st.lists(timestamps_ns, max_size=30))
def test_timestamps_built_from_the_last_second_equal_the_epoch_arithmetic(values):
    """``rows.timestamp`` reuses the calendar fields of the second before; in any order, within
    one second and across, before 1970 and past 9999, it gives what epoch + timedelta gives."""
    import datetime as dt

    from kraftwire.spark_decoders.kafka.rows import timestamp

    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    for ts_ns in values:
        try:
            expected = epoch + dt.timedelta(microseconds=ts_ns // 1000)
        except OverflowError:
            expected = None
        got = timestamp(ts_ns)
        assert got == expected and repr(got) == repr(expected), ts_ns


@settings(max_examples=500, deadline=None)
@given(
    ids=st.lists(
        st.binary(max_size=80) | st.sampled_from([b"client-7", b"x\x00y", b"\x7f", b"~ "]),
        min_size=1,
        max_size=8,
    ),
    cut=st.integers(0, 90),
)
def test_memoised_client_id_verdicts_equal_the_rule(ids, cut):
    """Asked twice, as bytes or bytearray: the memo of plausible client ids (UTF-8 without
    control characters) answers as the rule would; and a request header whose client id goes on
    past the buffer's end is undecided."""
    from kraftwire.spark_decoders.kafka.headers import _plausible_client_id

    for client_id in ids * 2:
        buf = b"\x00" * 14 + client_id
        try:
            expected = all(ord(c) >= 0x20 and c != "\x7f" for c in client_id.decode())
        except UnicodeDecodeError:
            expected = False
        assert _plausible_client_id(buf, 14, len(buf)) == expected
        assert _plausible_client_id(bytearray(buf), 14, len(buf)) == expected
        request = struct.pack(">ihhih", 100, 1, 0, 5, len(client_id)) + client_id
        if cut < len(client_id):
            assert plausible_request(request[: 14 + cut], 0) is None


_json_keys = st.sampled_from(["errorCode", "errorCodes", "xerrorCode", "name", 'q"errorCode":7'])
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(['"errorCode":5', '\\"errorCode\\":6', "٣", "-"])
    | st.text(max_size=12)
)
json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_json_keys, inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=800, deadline=None)
@given(value=st.dictionaries(_json_keys, json_values, max_size=6))
def test_error_codes_read_what_the_regular_expression_finds(value):
    """``bodies.error_codes`` on any compact JSON text (error codes of any size and sign, null
    and non-integer values, the key's text inside strings, non-ASCII digits in strings) finds
    what ``re.findall(r'"errorCode":(-?\\d+)')`` finds, each as an int."""
    import re

    from kraftwire.spark_decoders.kafka.bodies import error_codes

    for ensure_ascii in (False, True):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=ensure_ascii)
        expected = [int(code) for code in re.findall(r'"errorCode":(-?\d+)', text)]
        assert error_codes(text) == expected, text


def _unpacked_head(payload: bytes):
    """A request header's fixed fields as ``struct`` reads them (signed, big-endian)."""
    if len(payload) < 10:
        return None
    api_key, api_version, correlation_id, length = struct.unpack_from(">hhih", payload)
    if length < 0:
        return (api_key, api_version, correlation_id, None, 10, length == -1)
    if 10 + length > len(payload):
        return None
    client_id = payload[10 : 10 + length]
    try:
        client_id.decode()
        plain = True
    except UnicodeDecodeError:
        plain = False
    return (
        api_key,
        api_version,
        correlation_id,
        client_id.decode("utf-8", "replace"),
        10 + length,
        plain,
    )


# Bytes heavy in 0x00, 0x7F, 0x80 and 0xFF, where signed and unsigned reads part.
_HEADER_BYTES = st.lists(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, 0x0A, 0x20]), max_size=40).map(
    bytes
) | st.binary(max_size=40)


@settings(max_examples=500, deadline=None)
@given(payload=_HEADER_BYTES, pos=st.integers(0, 30), pending=st.sets(st.integers(-3, 3)))
def test_header_reads_of_bytes_equal_struct_reads(payload, pos, pending):
    """Compiled, headers read bytes with librt's typed readers and anything else with ``struct``:
    both give the same fields, signs included, and the same verdicts."""
    head = read_request_head(payload)
    fields = head and (head.api_key, head.api_version, head.correlation_id, head.client_id)
    assert (head and (*fields, head.end, head.plain)) == _unpacked_head(payload)
    expected_id = struct.unpack_from(">i", payload)[0] if len(payload) >= 4 else None
    assert read_correlation_id(payload) == expected_id
    assert plausible_request(payload, pos) == plausible_request(bytearray(payload), pos)
    check = plausible_response(pending)
    starts = frozenset({pos, len(payload)})
    assert check(payload, pos, starts) == check(bytearray(payload), pos, starts)
