"""Captures an attacker (or a broken disk) shaped, in pcapng: a 64-bit timestamp past the year 9999
and seeded random damage never fail the decode (found by mutating pcapng captures: a timestamp
beyond what a datetime holds raised OverflowError out of the whole job)."""

from __future__ import annotations

import random

import pytest

from captures import conversation, decode, write
from kraftwire.spark_decoders.packets.layers import LINK_ETHERNET
from kraftwire.synthetic_capture import link_frame, pcapng_section
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(300)

YEAR_146000_NS = (1 << 62) * 1000  # 2**62 microseconds after 1970, as a default-resolution EPB


def _pcapng(packets) -> bytes:
    frames = [(0, ts, link_frame(LINK_ETHERNET, ip)) for ts, ip in packets]
    return pcapng_section([(LINK_ETHERNET, None)], frames)


def test_a_timestamp_past_the_year_9999_leaves_the_time_columns_empty(tmp_path):
    exchanges = kraft_exchanges(4, seed=11)
    data = _pcapng(conversation(exchanges, t0=YEAR_146000_NS).packets)
    rows, _ = decode(write(tmp_path, "far-future.pcapng", data))
    assert [r["correlation_id"] for r in rows] == [e.correlation_id for e in exchanges]
    assert all(r["status"] == "ok" for r in rows)
    assert all(r["request_ts"] is None and r["response_ts"] is None for r in rows)
    assert all(r["latency_us"] == 500.0 for r in rows)  # from the raw nanoseconds, still exact
    assert all("past the year 9999" in r["decode_error"] for r in rows)


@pytest.mark.parametrize("seed", range(40))
def test_seeded_damage_to_a_pcapng_capture_never_fails(tmp_path, seed):
    rng = random.Random(seed)
    exchanges = kraft_exchanges(12, seed=seed)
    data = bytearray(_pcapng(conversation(exchanges, mss=300).packets))
    for _ in range(rng.choice((1, 4, 16))):
        at = rng.randrange(len(data))
        if rng.random() < 0.5:
            data[at] = rng.randrange(256)
        else:  # a whole word: block lengths, timestamps, sizes and counts
            data[at : at + 4] = rng.choice((b"\xff" * 4, b"\x7f\xff\xff\xff", b"\x00" * 4))
    rows, stats = decode(write(tmp_path, "damaged.pcapng", bytes(data)))
    assert stats  # the file was read; every row it gave has a status
    assert all(r["status"] for r in rows)
