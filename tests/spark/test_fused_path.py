"""The fused path (``pipeline.feed_file``: one loop over either reader's ``packets``, common
packets straight to ``FlowTable.common_packet``) gives exactly the rows and stats of
the general path it stands for: ``segments`` (capture records, link layers, IP fragments) feeding
``FlowTable.segment``.

Captures are drawn by hypothesis: several connections (IPv4, IPv4 with options, IPv6; some reusing
the same ports), their packets reordered, retransmitted, lost, fragmented, VLAN-tagged, cut by the
snaplen, with garbage between records and a cut-off end; pcapng files also in a second section of
another byte order and interface order, with a timestamp offset and damaged blocks. Every table is
compared.
"""

from __future__ import annotations

import re
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kraftwire.spark_decoders as decoders
from captures import T0, conversation
from kraftwire.spark_decoders.decode import pipeline
from kraftwire.spark_decoders.spark.shards import decode_shard
from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.spark_decoders.packets.capture import CaptureError, CaptureStats
from kraftwire.spark_decoders.kafka.connection import DEFAULT_SERVER_PORTS
from kraftwire.spark_decoders.kafka.exchanges import packet_ref
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET, LINK_SLL2
from kraftwire.synthetic_capture import ip_fragments, link_frame
from kraftwire.spark_decoders.output.tables import CONNECTIONS, EXCHANGES, FRAMES, sort_key
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(300)

EXCHANGES_POOL = kraft_exchanges(8, seed=21, first_correlation_id=500)
ENDPOINTS = [
    (("10.0.0.1", 40001), ("10.0.0.2", 9093)),
    (("10.0.0.3", 40002), ("10.0.0.2", 9092)),
    (("fd00::1", 40003), ("fd00::2", 9093)),
    # the first one mirrored: its addresses the other way round, its ports not
    (("10.0.0.2", 40001), ("10.0.0.1", 9093)),
]


def _bundled_bodies() -> BodyDecoder:
    import kraftwire.generated as package

    return BodyDecoder(package)


@st.composite
def conversations(draw) -> list[tuple[int, bytes]]:
    """``(ts_ns, ip packet)`` of one to three connections, interleaved in time."""
    packets: list[tuple[int, bytes]] = []
    for number in range(draw(st.integers(1, 3))):
        client, server = draw(st.sampled_from(ENDPOINTS))
        exchanges = draw(st.lists(st.sampled_from(EXCHANGES_POOL), min_size=1, max_size=4))
        conv = conversation(
            exchanges,
            client,
            server,
            t0=T0 + number * draw(st.sampled_from([0, 700_000, 10**9])),
            handshake=draw(st.booleans()) or number > 0,
            close=draw(st.booleans()),
            mss=draw(st.sampled_from([9, 100, 1460])),
            client_isn=draw(st.sampled_from([1000, 0xFFFFFF00])) + number,
            ip_options=b"" if ":" in client[0] else draw(st.sampled_from([b"", b"", b"\x01"])),
        )
        packets += conv.packets
    packets.sort(key=lambda item: item[0])  # stable: a connection's own order is kept
    return packets


# What happens to a packet on its way into the capture ("sll2": pcapng only, the packet comes
# through a second interface of another link type).
# "trailer" and "overrun", pcapng only: the block's closing length disagrees with its opening one,
# or its captured length runs past the block (damage either way).
FATES = ["keep"] * 12 + [
    "twice",
    "lost",
    "swap",
    "fragment",
    "vlan",
    "cut",
    "garbage",
    "sll2",
    "trailer",
    "overrun",
]


@st.composite
def captures(draw) -> bytes:
    """A pcap file (microsecond or nanosecond, either byte order) or a pcapng section (an
    Ethernet and an SLL2 interface) of drawn traffic and damage."""
    pcapng = draw(st.booleans())
    nanosecond, endian = draw(st.booleans()), draw(st.sampled_from("<<>"))
    packets = draw(conversations())
    records: list[tuple[int, bytes, int, bytes]] = []  # ts, frame, bytes cut off, junk before
    index = 0
    while index < len(packets):
        ts, ip = packets[index]
        fate = draw(st.sampled_from(FATES))
        if fate == "swap" and index + 1 < len(packets):
            packets[index], packets[index + 1] = packets[index + 1], packets[index]
            ts, ip = packets[index]
        pieces = [ip]
        if fate == "fragment" and len(ip) > 60:
            pieces = ip_fragments(ip, draw(st.sampled_from([16, 48])), index + 1)
        vlans = draw(st.sampled_from([(5,), (5, 7)])) if fate == "vlan" else ()
        sll2 = fate == "sll2" and pcapng
        for piece in pieces if fate != "lost" else []:
            frame = (
                link_frame(LINK_SLL2, piece) if sll2 else link_frame(LINK_ETHERNET, piece, vlans)
            )
            cut = draw(st.integers(1, 30)) if fate == "cut" else 0
            junk = draw(st.binary(min_size=1, max_size=20)) if fate == "garbage" else b""
            damaged = fate if fate in ("trailer", "overrun") and pcapng else ""
            records.append((ts, frame, min(cut, len(frame) - 1), junk, damaged))
            if fate == "twice":
                records.append((ts + 10, frame, 0, b"", ""))
        index += 1
    tail = draw(st.sampled_from([0, 0, 0, 5, 30]))
    if pcapng:
        # A second section from a drawn record on, in a drawn byte order; interface 0 may carry
        # a timestamp offset (if_tsoffset, whole seconds).
        second = draw(st.one_of(st.none(), st.integers(0, len(records))))
        endians = (endian, draw(st.sampled_from("<>")))
        offset = draw(st.sampled_from([0, 0, 3600, -2]))
        return _pcapng(records, endians, second, offset, tail)
    return _pcap(records, nanosecond, endian, tail)


def _pcapng(records, endians: tuple[str, str], second: int | None, offset: int, tail: int) -> bytes:
    """Sections of two interfaces, Ethernet (microseconds, ``offset`` seconds added) and SLL2
    (nanoseconds), in that order in the first section and the other way round in a second one
    (from record ``second`` on, in ``endians[1]``); each packet in an enhanced packet block on the
    interface its frame's link type needs."""
    out = bytearray()
    for index, (ts, frame, cut, junk, damaged) in enumerate(records):
        if index == 0 or index == second:
            swapped = index == second
            endian = endians[swapped]
            out += _section_start(endian, offset, swapped)
        sll2 = frame[:2] in (b"\x08\x00", b"\x86\xdd")  # SLL2 starts with the protocol
        ticks = ts if sll2 else ts // 1000
        kept = frame[: len(frame) - cut]
        claimed = len(kept) + 64 if damaged == "overrun" else len(kept)
        body = struct.pack(
            endian + "IIIII", sll2 != swapped, ticks >> 32, ticks & 0xFFFFFFFF, claimed, len(frame)
        )
        block = _block(endian, 6, body + kept + b"\0" * (-len(kept) % 4))
        if damaged == "trailer":
            block = block[:-4] + struct.pack(endian + "I", len(block) + 4)
        out += junk + block
    if not records or second == len(records):
        out += _section_start(endians[bool(records)], offset, bool(records))
    return bytes(out[: len(out) - tail])


def _section_start(endian: str, offset: int, swapped: bool) -> bytes:
    """A section header block and the section's two interface description blocks."""
    tsoffset = struct.pack(endian + "HHq", 14, 8, offset) if offset else b""
    interfaces = [
        _block(endian, 1, struct.pack(endian + "HHI", LINK_ETHERNET, 0, 0) + tsoffset),
        _block(endian, 1, struct.pack(endian + "HHIHHB3x", LINK_SLL2, 0, 0, 9, 1, 9)),
    ]
    shb = _block(endian, 0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    return shb + b"".join(interfaces[::-1] if swapped else interfaces)


def _block(endian: str, kind: int, body: bytes) -> bytes:
    length = len(body) + 12
    return struct.pack(endian + "II", kind, length) + body + struct.pack(endian + "I", length)


def _pcap(records, nanosecond: bool, endian: str, tail: int) -> bytes:
    magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    out = bytearray(struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 65535, LINK_ETHERNET))
    for ts, frame, cut, junk, _ in records:
        frac = ts % 10**9 if nanosecond else ts % 10**9 // 1000
        kept = frame[: len(frame) - cut]
        out += junk + struct.pack(endian + "IIII", ts // 10**9, frac, len(kept), len(frame)) + kept
    return bytes(out[: len(out) - tail])


def _general_decode(path: str, table: str) -> tuple[list[dict], CaptureStats]:
    """``decode_files`` of one file as it was before the fused loop."""
    rows: list[dict] = []
    flows = pipeline.FlowTable(
        (path,), _bundled_bodies(), rows.append, pipeline.DecodeOptions(table=table)
    )
    stats = CaptureStats()
    buf = pipeline.map_file(path)
    with pipeline.CollectorPaused():
        for number, ts_ns, seg in pipeline.segments(buf, None, len(buf), stats):
            flows.segment(seg, packet_ref(0, number), ts_ns)
        flows.finish()
    rows.sort(key=sort_key(table))
    return rows, stats


def _fused_decode(path: str, table: str) -> tuple[list[dict], CaptureStats]:
    options = pipeline.DecodeOptions(table=table)
    rows, stats = pipeline.decode_files([path], _bundled_bodies(), options)
    return rows, stats[path]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data=captures(),
    table=st.sampled_from([EXCHANGES, EXCHANGES, FRAMES, CONNECTIONS]),
    shards=st.integers(1, 3),
)
def test_fused_loop_equals_the_general_path(tmp_path_factory, data, table, shards):
    """Local mode, and the data source's shards together (each fusing only its own
    connections' packets), give the general path's rows; local mode its stats too."""
    path = str(tmp_path_factory.mktemp("fused") / "capture")
    with open(path, "wb") as handle:
        handle.write(data)
    fused, general = _fused_decode(path, table), _general_decode(path, table)
    assert fused[0] == general[0]
    assert fused[1] == general[1]
    sharded = [
        row
        for shard in range(shards)
        for row in decode_shard([path], None, DEFAULT_SERVER_PORTS, shard, shards, table)
    ]
    assert sorted(sharded, key=sort_key(table)) == general[0]


def test_a_pcap_of_another_link_type_decodes_as_before(tmp_path):
    """Only Ethernet packets can be fused; an SLL2 pcap goes the general way, packet by packet."""
    from kraftwire.synthetic_capture import pcap_bytes

    conv = conversation(EXCHANGES_POOL[:3])
    path = str(tmp_path / "sll2.pcap")
    with open(path, "wb") as handle:
        handle.write(
            pcap_bytes([(ts, link_frame(LINK_SLL2, ip)) for ts, ip in conv.packets], LINK_SLL2)
        )
    fused, general = _fused_decode(path, EXCHANGES), _general_decode(path, EXCHANGES)
    assert fused == general and [row["status"] for row in fused[0]] == ["ok"] * 3


@pytest.mark.skipif(decoders.IMPLEMENTATION == "native", reason="compiled calls cannot be counted")
@pytest.mark.parametrize("pcapng", [False, True])
def test_common_packets_take_the_fused_path(tmp_path, monkeypatch, pcapng):
    """A plain connection: only its SYN and SYN-ACK go the general way (each teaches the table
    one direction); every packet after them, from the handshake's last ACK on, is fused."""
    general_calls = []
    general = pipeline._PacketPaths.general

    def counted(self, linktype, data, orig_len, ts_ns, ref):
        general_calls.append(ref)
        general(self, linktype, data, orig_len, ts_ns, ref)

    monkeypatch.setattr(pipeline._PacketPaths, "general", counted)
    conv = conversation(EXCHANGES_POOL[:4], close=False)
    records = [(ts, link_frame(LINK_ETHERNET, ip), 0, b"", "") for ts, ip in conv.packets]
    path = str(tmp_path / "plain")
    with open(path, "wb") as handle:
        handle.write(
            _pcapng(records, ("<", "<"), None, 0, 0) if pcapng else _pcap(records, False, "<", 0)
        )
    rows, _ = _fused_decode(path, EXCHANGES)
    assert [row["status"] for row in rows] == ["ok"] * 4
    assert general_calls == [packet_ref(0, 1), packet_ref(0, 2)]
    assert len(conv.packets) > 10


def test_a_reused_connection_is_not_fed_to_the_finished_one(tmp_path):
    """Port reuse: the same endpoints' second connection (a new SYN) gets its own rows, though
    the fused path had learnt those endpoint bytes for the first."""
    first = conversation(EXCHANGES_POOL[:2], client_isn=1000)
    second = conversation(EXCHANGES_POOL[2:4], t0=T0 + 10**9, client_isn=90_000)
    frames = [(ts, link_frame(LINK_ETHERNET, ip)) for ts, ip in first.packets + second.packets]
    path = str(tmp_path / "reuse.pcap")
    with open(path, "wb") as handle:
        handle.write(_pcap([(ts, f, 0, b"", "") for ts, f in frames], False, "<", 0))
    rows, _ = _fused_decode(path, EXCHANGES)
    assert [row["status"] for row in rows] == ["ok"] * 4
    assert len({row["conn_id"] for row in rows}) == 2
    assert rows == _general_decode(path, EXCHANGES)[0]


def test_mirrored_and_reused_endpoints_interleaved_packet_by_packet(tmp_path):
    """Two connections whose addresses are each other's the other way round (ports not), packet
    for packet, then a third reusing the first one's endpoints beside the second: the compiled
    fused path checks a packet against the last direction found and its reverse before the
    dictionary, and that must never take one connection's packets for another's."""
    mirrored = (("10.0.0.2", 40001), ("10.0.0.1", 9093))
    first = conversation(EXCHANGES_POOL[:3], client_isn=1000)  # closed after about 6 ms
    second = conversation(EXCHANGES_POOL * 2, *mirrored, client_isn=5000)  # about 25 ms
    reused = conversation(EXCHANGES_POOL[3:5], t0=T0 + 10**7, client_isn=90_000)
    packets = sorted(first.packets + second.packets + reused.packets, key=lambda p: p[0])
    frames = [(ts, link_frame(LINK_ETHERNET, ip), 0, b"", "") for ts, ip in packets]
    path = str(tmp_path / "mirrored.pcap")
    with open(path, "wb") as handle:
        handle.write(_pcap(frames, False, "<", 0))
    rows, _ = _fused_decode(path, EXCHANGES)
    assert rows == _general_decode(path, EXCHANGES)[0]
    assert [row["status"] for row in rows] == ["ok"] * 21
    assert len({row["conn_id"] for row in rows}) == 3


def _windowed_decode(data: bytes, table: str, chunk_bytes: int) -> tuple[list[dict], CaptureStats]:
    """``feed_file`` of ``data`` held as a bytearray, so that it is read a window of
    ``chunk_bytes`` at a time (a bytes buffer is one whole window)."""
    rows: list[dict] = []
    flows = pipeline.FlowTable(
        ("capture",), _bundled_bodies(), rows.append, pipeline.DecodeOptions(table=table)
    )
    stats = CaptureStats()
    with pipeline.CollectorPaused():
        pipeline.feed_file(flows, bytearray(data), 0, stats, chunk_bytes=chunk_bytes)
        flows.finish()
    rows.sort(key=sort_key(table))
    return rows, stats


def _whole_decode(data: bytes, table: str) -> tuple[list[dict], CaptureStats]:
    rows: list[dict] = []
    flows = pipeline.FlowTable(
        ("capture",), _bundled_bodies(), rows.append, pipeline.DecodeOptions(table=table)
    )
    stats = CaptureStats()
    with pipeline.CollectorPaused():
        pipeline.feed_file(flows, data, 0, stats)
        flows.finish()
    rows.sort(key=sort_key(table))
    return rows, stats


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data=captures(),
    table=st.sampled_from([EXCHANGES, FRAMES]),
    chunk_bytes=st.one_of(st.integers(1, 120), st.integers(121, 4000)),
)
def test_a_capture_read_in_small_windows_gives_the_rows_of_one_whole_window(
    data, table, chunk_bytes
):
    """Records and blocks straddle the windows' edges wherever the drawn chunk size puts them,
    in damaged captures too (garbage, bad blocks, a cut-off end): the rows and stats are those
    of the capture read as one window. A cut-off end within the file header leaves no capture:
    then both raise the same error."""
    try:
        whole = _whole_decode(data, table)
    except CaptureError as exc:
        with pytest.raises(CaptureError, match=re.escape(str(exc))):
            _windowed_decode(data, table, chunk_bytes)
        return
    assert _windowed_decode(data, table, chunk_bytes) == whole


@pytest.mark.parametrize("pcapng", [False, True])
def test_every_window_edge_within_a_record(pcapng):
    """Every chunk size from one byte to the whole file: the windows' edges fall at every offset
    of every record, and each record is read whole from a window that starts with it."""
    conv = conversation(EXCHANGES_POOL[:2], mss=100)
    records = [(ts, link_frame(LINK_ETHERNET, ip), 0, b"", "") for ts, ip in conv.packets]
    data = _pcapng(records, ("<", ">"), 3, 0, 0) if pcapng else _pcap(records, False, "<", 0)
    expected = _whole_decode(data, EXCHANGES)
    assert [row["status"] for row in expected[0]] == ["ok"] * 2
    assert expected[1].packets == len(records)
    for chunk_bytes in range(1, len(data) + 2):
        assert _windowed_decode(data, EXCHANGES, chunk_bytes) == expected, chunk_bytes


def test_a_window_holds_at_most_its_chunk_or_the_one_record_that_needs_more():
    """Memory stays bounded: a window loads ``chunk_bytes`` (or the bytes one record needs)."""
    from kraftwire.spark_decoders.packets.capture import Window

    window = Window(bytearray(range(256)) * 40, chunk_bytes=100)
    window.load(50, 16)
    assert (window.base, window.limit, window.data) == (50, 150, bytes(range(50, 150)))
    window.load(10_200, 300)
    assert (window.base, window.limit) == (10_200, 10_240)  # all there is
    window.load(300, 1000)
    assert (window.base, window.limit, len(window.data)) == (300, 1300, 1000)
    whole = Window(b"abc", chunk_bytes=1)
    whole.load(2, 1)
    assert (whole.data, whole.base, whole.limit) == (b"abc", 0, 3)


@pytest.mark.skipif(decoders.IMPLEMENTATION == "native", reason="compiled calls cannot be counted")
@pytest.mark.parametrize("chunk_bytes", [1, 64, 200, 1 << 20])
def test_a_pcapng_block_a_window_cuts_is_read_from_the_next_window(monkeypatch, chunk_bytes):
    """Only the section and interface blocks take the reader's general way (``advance``): an
    enhanced packet block cut by the window's edge is read whole from a window moved to it."""
    from kraftwire.spark_decoders.packets.pcapng import PcapngReader

    blocks: list[bool] = []  # per block ``advance`` read: whether it held a packet
    advance = PcapngReader.advance

    def counted(self, view, pos, stop, number):
        next_pos, packet = advance(self, view, pos, stop, number)
        blocks.append(packet is not None)
        return next_pos, packet

    monkeypatch.setattr(PcapngReader, "advance", counted)
    conv = conversation(EXCHANGES_POOL[:2], mss=100)
    records = [(ts, link_frame(LINK_ETHERNET, ip), 0, b"", "") for ts, ip in conv.packets]
    data = _pcapng(records, ("<", "<"), None, 0, 0)
    rows, stats = _windowed_decode(data, EXCHANGES, chunk_bytes)
    assert [row["status"] for row in rows] == ["ok"] * 2 and stats.packets == len(records)
    assert blocks == [False] * 3  # the section header and its two interfaces


def test_every_module_reading_with_librt_knows_whether_it_runs_compiled():
    """``COMPILED`` picks librt's readers; it must say what the package chose, or the compiled
    build would run the interpreted reads (or the pure one call librt)."""
    from kraftwire.spark_decoders.packets import capture, layers, pcapng, typed_reads

    compiled = decoders.IMPLEMENTATION == "native"
    for module in (capture, layers, pcapng, typed_reads):
        assert module.COMPILED is compiled, module.__name__


def _packets(data, chunk_bytes: int) -> tuple[list[tuple], CaptureStats]:
    """What a reader's ``records`` yields (each packet's data as bytes), and its stats."""
    from kraftwire.spark_decoders.packets.readers import open_reader

    stats = CaptureStats()
    reader, start = open_reader(data, stats)
    packets = [
        (*packet[:3], bytes(packet.data), *packet[4:])
        for packet in reader.records(start, len(data), chunk_bytes=chunk_bytes)
    ]
    return packets, stats


def _pcapng_packets_block_by_block(data) -> tuple[list[tuple], CaptureStats]:
    """Every block of a pcapng read by ``advance``, the reader's general way (as ``records``
    read them all before enhanced packet blocks were read from a window)."""
    from kraftwire.spark_decoders.packets.pcapng import PcapngReader

    stats = CaptureStats()
    reader, view = PcapngReader(data, stats), memoryview(data)
    packets, pos, number = [], 0, 1
    while pos < len(data):
        pos, packet = reader.advance(view, pos, len(data), number)
        if packet is not None:
            packets.append((*packet[:3], bytes(packet.data), *packet[4:]))
            number += 1
        if pos < 0:
            break
    stats.packets += number - 1
    return packets, stats


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=captures(), chunk_bytes=st.one_of(st.integers(1, 120), st.integers(121, 4000)))
def test_records_read_in_small_windows_are_those_of_one_whole_window(data, chunk_bytes):
    """A reader's ``records`` (the general path, and Spark's splits) through small windows: the
    same packets, byte for byte, at the same offsets, and the same stats; for pcapng, those of
    reading every block the reader's general way."""
    whole = _packets(data, 1 << 20)
    assert _packets(bytearray(data), chunk_bytes) == whole
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        assert whole == _pcapng_packets_block_by_block(data)
