"""A split's cheap packet count is the count its full read numbers, and the splits add up."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from captures import conversation
from kraftwire.spark_decoders.capture import CaptureStats
from kraftwire.spark_decoders.fragments import ip_fragment
from kraftwire.spark_decoders.layers import LINK_ETHERNET, LINK_SLL2
from kraftwire.spark_decoders.pipeline import open_reader
from kraftwire.spark_decoders.splits import (
    _plainly_unfragmented,
    plan_splits,
    split_packet_count,
    split_segments,
)
from kraftwire.spark_decoders.synth import link_frame, pcap_bytes, pcapng_section
from kraftwire.spark_decoders.traffic import kraft_exchanges
from packet_strategies import link_packets

PACKETS = conversation(kraft_exchanges(6, seed=3), mss=200).packets


def _capture(pcapng: bool, linktype: int) -> bytes:
    frames = [(ts, link_frame(linktype, ip)) for ts, ip in PACKETS]
    if pcapng:
        return pcapng_section([(linktype, 9)], [(0, ts, frame) for ts, frame in frames])
    return pcap_bytes(frames, linktype)


@settings(max_examples=60, deadline=None)
@given(
    pcapng=st.booleans(),
    linktype=st.sampled_from([LINK_ETHERNET, LINK_SLL2]),
    split_bytes=st.integers(50, 4000),
    garbage=st.lists(st.tuples(st.integers(30, 10**6), st.binary(min_size=1, max_size=40))),
)
def test_split_counts_are_the_packets_each_split_numbers(pcapng, linktype, split_bytes, garbage):
    buf = _capture(pcapng, linktype)
    for at, junk in sorted(garbage, reverse=True):  # damage between (or inside) records
        at = min(at, len(buf))
        buf = buf[:at] + junk + buf[at:]
    whole = CaptureStats()
    reader, start = open_reader(buf, whole)
    assert sum(1 for _ in reader.records(start, len(buf))) == whole.packets
    counts = []
    for start, stop in plan_splits(len(buf), split_bytes):
        stats = CaptureStats()
        numbers = [number for number, _, _ in split_segments(buf, start, stop, stats)]
        count = split_packet_count(buf, start, stop)
        assert count == stats.packets and all(1 <= n <= count for n in numbers)
        counts.append(count)
    if not garbage:  # damage may make a split resynchronise differently from the whole read
        assert sum(counts) == whole.packets == len(PACKETS)


@settings(max_examples=300, deadline=None)
@given(packets=st.lists(link_packets(), min_size=1, max_size=12))
def test_the_lookback_skips_no_fragment(packets):
    """A split's lookback passes over packets from their raw bytes only when they are no fragment
    the reassembler would take; plain packets are passed over."""
    for linktype, frame in (p for group in packets for p in group):
        if _plainly_unfragmented(linktype, frame, 0, len(frame)):
            assert ip_fragment(linktype, frame) is None
    plain = link_frame(LINK_ETHERNET, PACKETS[5][1])
    assert _plainly_unfragmented(LINK_ETHERNET, plain, 0, len(plain))
