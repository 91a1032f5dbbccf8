"""The packet path's own state and objects: TCP streams' sequence state, frames, the pcap resync
window, pcapng timestamps worked out per second, and the flow table's linked directions.

The shortcuts are held to the general paths in ``test_hot_path.py`` and ``test_fused_path.py``;
these tests hold the state itself to what it must be, at the values a stand-in ("none yet" as -1, a
cached second, a remembered direction) could be confused with.
"""

from __future__ import annotations

import gc
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

import kraftwire.generated
from kraftwire.spark_decoders.kafka.bodies import BodyDecoder
from kraftwire.spark_decoders.packets.capture import PcapFile, PcapReader
from kraftwire.spark_decoders.kafka.framing import Frame
from kraftwire.spark_decoders.packets.pcapng import Interface, PcapngReader
from kraftwire.spark_decoders.decode.pipeline import FlowTable, reversed_endpoints
from kraftwire.spark_decoders.packets.reassembly import MIDSTREAM, TcpStream

ACK = 0x10
SYN = 0x02
# Sequence numbers at the edges of the 32-bit space, and ones a stand-in for "none" might take.
edge_sequences = st.sampled_from(
    [0, 1, 0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF, 0x80000000]
) | st.integers(0, 0xFFFFFFFF)


class _Record:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def data(self, payload: bytes, packet: int, ts_ns: int) -> None:
        self.events.append(("data", payload, packet))

    def gap(self, kind: str) -> None:
        self.events.append(("gap", kind))


@settings(max_examples=300, deadline=None)
@given(first=edge_sequences, sizes=st.lists(st.integers(1, 40), min_size=1, max_size=8))
def test_a_mid_stream_start_at_any_sequence_number_is_one_start(first, sizes):
    """A stream whose SYN was not captured starts at its first segment, whatever its sequence
    number (0 and 2**32 - 1 included): one mid-stream mark, then every byte once, in order."""
    sink = _Record()
    stream = TcpStream(sink)
    assert not stream.started
    seq, expected = first, []
    for number, size in enumerate(sizes, 1):
        payload = bytes([number]) * size
        stream.segment(seq, ACK, payload, 0, number, number)
        expected.append(("data", payload, number))
        seq = (seq + size) & 0xFFFFFFFF
    assert sink.events == [("gap", MIDSTREAM), *expected]
    assert stream.started and stream.next_seq == seq and stream.gaps == 1


@settings(max_examples=300, deadline=None)
@given(isn=edge_sequences, size=st.integers(1, 40))
def test_a_syn_at_any_sequence_number_starts_the_stream_after_it(isn, size):
    sink = _Record()
    stream = TcpStream(sink)
    stream.segment(isn, SYN, b"", 0, 1, 1)
    assert stream.started and stream.next_seq == (isn + 1) & 0xFFFFFFFF
    stream.segment((isn + 1) & 0xFFFFFFFF, ACK, b"x" * size, 0, 2, 2)
    assert sink.events == [("data", b"x" * size, 2)] and stream.gaps == 0


@settings(max_examples=300, deadline=None)
@given(first_ack=edge_sequences, behind=st.integers(1, 0x7FFFFFFF))
def test_the_first_acknowledgement_is_kept_whatever_its_value(first_ack, behind):
    """An acknowledgement behind the first one (by up to half the sequence space) never replaces it,
    so a hole the peer has not acknowledged keeps its bytes waiting."""
    stream = TcpStream(_Record())
    stream.peer_ack(first_ack)
    stream.peer_ack((first_ack - behind) & 0xFFFFFFFF)
    assert stream.peer_acked == first_ack


FRAME_FIELDS = (b"body", 4, 7 | 1 << 40, 9 | 1 << 40, 1_700_000_000_123_456_789, None, None)


def test_frames_are_equal_exactly_when_every_field_is():
    """The frame readers' equality tests (shortcut against general path) compare frames: a frame
    equals another only when all seven fields do, and never a plain tuple of them."""
    frame = Frame(*FRAME_FIELDS)
    assert frame == Frame(*FRAME_FIELDS) and frame.fields() == FRAME_FIELDS
    changed = (b"bodx", 5, 8, 10, 1, "gap", "3 bytes missing from the capture after its first 4")
    for index, value in enumerate(changed):
        other = list(FRAME_FIELDS)
        other[index] = value
        assert frame != Frame(*other), f"field {index} ignored"
    assert frame != FRAME_FIELDS
    assert repr(frame) == f"Frame{FRAME_FIELDS!r}"


def _pcap_record(sec: int, payload: bytes = b"\x00" * 60) -> bytes:
    return struct.pack("<IIII", sec, 0, len(payload), len(payload)) + payload


@settings(max_examples=200, deadline=None)
@given(
    sec=st.sampled_from([0, 1, 86400, 0xFFFFFFFF]) | st.integers(0, 0xFFFFFFFF),
    later=st.integers(0, 3 * 86400),
)
def test_a_record_start_is_plausible_only_within_a_day_of_the_last_record(sec, later):
    """Resynchronising after damage takes a record header as a start only when its timestamp is
    within a day of the last record read (also when that one's seconds are 0); before any record
    was read, any timestamp goes."""
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    first = _pcap_record(sec)
    candidate = (sec + later) & 0xFFFFFFFF
    buf = header + first + _pcap_record(candidate)
    reader = PcapReader(buf, PcapFile.parse(buf))
    assert reader.plausible(24 + len(first), chain=0)  # nothing read yet: no day to be within
    assert [packet.number for packet in reader.records(24, 25)] == [1]
    within = abs(candidate - sec) <= 86400
    assert reader.plausible(24 + len(first), chain=0) == within


resolutions = st.sampled_from(
    [1, 1000, 1_000_000, 1_000_000_000, 10**12, 2**10, 2**20, 2**30, 2**40]
)
interfaces = st.builds(
    Interface,
    linktype=st.just(1),
    units_per_second=resolutions,
    offset_ns=st.sampled_from([0, -(10**9), 3_600 * 10**9]) | st.integers(-(2**40), 2**40),
)
tick_steps = st.one_of(
    st.integers(0, 3),  # the same second, mostly
    st.integers(0, 2**20),
    st.integers(-(2**20), 0),  # back in time
    st.integers(0, 2**64 - 1).map(lambda t: ("jump", t)),
)


@settings(max_examples=400, deadline=None)
@given(
    ifaces=st.lists(interfaces, min_size=1, max_size=3),
    steps=st.lists(st.tuples(st.integers(0, 2), tick_steps), max_size=40),
)
def test_pcapng_timestamps_from_the_last_second_equal_the_interface_arithmetic(ifaces, steps):
    """``PcapngReader.timestamp_ns`` works from the last second it computed; whatever the order of
    ticks and interfaces (another resolution, another offset), it gives ``Interface.to_ns``."""
    reader = PcapngReader(b"")
    ticks = 1_700_000_000 * 1_000_000
    for which, step in steps:
        iface = ifaces[which % len(ifaces)]
        ticks = step[1] if isinstance(step, tuple) else max(ticks + step, 0)
        assert reader.timestamp_ns(iface, ticks) == iface.to_ns(ticks), (iface, ticks)


BODIES = BodyDecoder(kraftwire.generated)


def _endpoints(src: int, dst: int, sport: int, dport: int) -> bytes:
    return bytes([10, 0, 0, src, 10, 0, 0, dst]) + struct.pack(">HH", sport, dport)


# Two hosts and two ports: every endpoint run, its reverse, and its mirror (addresses swapped,
# ports kept) all come up.
endpoint_runs = st.builds(
    _endpoints,
    st.sampled_from([1, 2]),
    st.sampled_from([1, 2]),
    st.sampled_from([40001, 9093]),
    st.sampled_from([40001, 9093]),
)


@settings(max_examples=300, deadline=None)
@given(changes=st.lists(st.tuples(endpoint_runs, st.booleans()), max_size=30))
def test_directions_hold_their_endpoints_and_changes_forget_the_last_found(changes):
    """``FlowTable.directions``: each direction's numbers are its endpoint bytes and its reversed
    key theirs the other way round (a connection from a port to itself is its own reverse); any
    change forgets the directions ``common_packet`` remembered, whichever was replaced."""
    table = FlowTable(("capture",), BODIES, [].append)
    for endpoints, from_client in changes:
        found = table.directions.get(endpoints)
        table.last_found = table.last_reverse = found
        table.set_direction(endpoints, None, from_client)
        assert table.last_found is None and table.last_reverse is None
        for key, direction in table.directions.items():
            assert (direction.src, direction.dst, direction.ports) == struct.unpack(">iii", key)
            numbers = struct.unpack(">iii", key)
            assert direction.holds(*numbers)
            for index in range(3):  # each number counts
                other = [*numbers]
                other[index] ^= 1
                assert not direction.holds(*other)
            reverse = key[4:8] + key[:4] + key[10:] + key[8:10]
            assert direction.reversed_key == reverse
            assert direction.holds(*struct.unpack(">iii", reverse)) == (reverse == key)
    assert all(table.directions[e].from_client == c for e, c in dict(changes).items())


def test_a_decode_leaves_no_cycle_of_its_objects(tmp_path):
    """The decode runs with the collector off (``CollectorPaused``) on the promise that its objects
    make no reference cycles: anything in a cycle (a connection, and through it the rows it
    emitted) would stay until a full collection. After a decode of many connections, the collector
    finds none of the package's objects, and no row, unreachable."""
    from captures import conversation
    from kraftwire.spark_decoders.decode.pipeline import decode_files
    from kraftwire.synthetic_capture import link_frame, pcap_bytes
    from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

    exchanges = kraft_exchanges(6, seed=3)
    packets = []
    for index in range(8):
        client = (f"10.0.0.{index % 3 + 1}", 40000 + index)
        packets += conversation(exchanges, client, ("10.0.0.9", 9092), t0=1 + index).packets
    path = tmp_path / "many.pcap"
    path.write_bytes(pcap_bytes([(ts, link_frame(1, ip)) for ts, ip in sorted(packets)], 1))
    gc.collect()
    saved = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        rows, _ = decode_files([str(path)], BODIES)
        assert len(rows) == 48 and {row["status"] for row in rows} == {"ok"}
        del rows
        gc.collect()
        ours = [o for o in gc.garbage if type(o).__module__.startswith("kraftwire.spark_decoders")]
        rows_left = [o for o in gc.garbage if isinstance(o, dict) and "conn_id" in o]
    finally:
        gc.set_debug(saved)
        gc.garbage.clear()
    assert not ours and not rows_left
