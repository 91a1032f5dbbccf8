"""Captures for comparing the pure and the compiled decoders (``test_native_differential``).

Every link type and IP version, both pcap byte orders and resolutions, pcapng with several sections
and interfaces, hostile TCP (reordering, duplicates, losses, mid-stream starts, tiny segments, IP
fragments, snaplen cuts) and corrupt files (byte flips, truncation, garbage, a damaged block, not a
capture at all), each built from the codecs with a fixed seed, plus the captures in ../shared.
"""

from __future__ import annotations

import random
from pathlib import Path

from captures import T0, conversation, fragmented, pcap_of, two_pcapng_sections
from kraftwire.spark_decoders.packets.layers import (
    LINK_ETHERNET,
    LINK_LOOP,
    LINK_NULL,
    LINK_RAW,
    LINK_SLL,
    LINK_SLL2,
)
from kraftwire.synthetic_capture import link_frame, pcapng_section
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

LINKS = [
    (LINK_ETHERNET, ()),
    (LINK_ETHERNET, (300,)),
    (LINK_ETHERNET, (10, 20)),
    (LINK_SLL, ()),
    (LINK_SLL2, ()),
    (LINK_RAW, ()),
    (LINK_NULL, ()),
    (LINK_LOOP, ()),
]


def write_corpus(directory: Path, shared_captures: list[Path]) -> list[Path]:
    """Write the corpus into ``directory``; returns every capture path, the shared ones included."""
    files: dict[str, bytes] = {}
    for index, (linktype, vlans) in enumerate(LINKS):
        for ipv6 in (False, True):
            ends = (("fd00::1", 40001), ("fd00::2", 9093)) if ipv6 else None
            conv = conversation(
                kraft_exchanges(6, seed=index),
                *(ends or ()),
                ipv6_extension=ipv6,
                ip_options=b"" if ipv6 else b"\x01\x01\x01\x00",
            )
            files[f"link{linktype}-{len(vlans)}-{ipv6}.pcap"] = pcap_of(
                conv.packets, linktype, vlans
            )
    for endian in "<>":
        for nanosecond in (False, True):
            conv = conversation(kraft_exchanges(4, seed=9), t0=T0 + 123_456_789)
            files[f"order{endian == '<'}-{nanosecond}.pcap"] = pcap_of(
                conv.packets, endian=endian, nanosecond=nanosecond
            )
    files["sections.pcapng"] = _pcapng_sections()
    for seed in range(12):
        files[f"hostile{seed}.pcap"] = _hostile(seed)
    rng = random.Random(5)
    packets, _ = fragmented(conversation(kraft_exchanges(5, seed=5)).packets, 64, rng)
    files["fragments.pcap"] = pcap_of(packets)
    files["snaplen.pcap"] = pcap_of(
        conversation(kraft_exchanges(8, seed=6), mss=300).packets, snaplen=120
    )
    for seed in range(16):
        files[f"flips{seed}.pcap"] = _flipped(seed)
    whole = pcap_of(conversation(kraft_exchanges(10, seed=7)).packets)
    for cut in (30, len(whole) // 3, len(whole) - 7):
        files[f"cut{cut}.pcap"] = whole[:cut]
    files["garbage.pcap"] = _with_garbage(whole, random.Random(8))
    files["damaged.pcapng"] = _damaged_pcapng()
    files["text.pcap"] = b"hello, this is not a capture\n"
    paths = []
    for name, data in files.items():
        path = directory / name
        path.write_bytes(data)
        paths.append(path)
    return paths + [path for path in shared_captures if path.is_file()]


def _pcapng_sections() -> bytes:
    a = conversation(kraft_exchanges(4, seed=1))
    b = conversation(
        kraft_exchanges(4, seed=2, first_correlation_id=100),
        client=("fd00::5", 40002),
        server=("fd00::6", 9092),
        t0=T0 + 7,
    )
    simple = pcapng_section(
        [(LINK_ETHERNET, None)],
        [(0, ts, link_frame(LINK_ETHERNET, ip)) for ts, ip in a.packets],
        simple=True,
    )
    return two_pcapng_sections(a, b) + simple


def _hostile(seed: int) -> bytes:
    """Tiny segments, reordered in small windows, some sent twice, some lost, and from seed 6 on
    a capture that starts mid-stream."""
    rng = random.Random(seed)
    conv = conversation(kraft_exchanges(10, seed=seed), mss=rng.choice([7, 19, 50, 300]))
    packets = list(conv.packets)
    out = []
    for start in range(0, len(packets), 4):
        window = packets[start : start + 4]
        rng.shuffle(window)
        for packet in window:
            draw = rng.random()
            if draw < 0.05:
                continue  # lost by the capture
            out.append(packet)
            if draw > 0.9:
                out.append(packet)  # a retransmission
    if seed >= 6:
        out = out[rng.randrange(3, 30) :]
    return pcap_of(out)


def _flipped(seed: int) -> bytes:
    rng = random.Random(seed)
    data = bytearray(pcap_of(conversation(kraft_exchanges(12, seed=seed), mss=200).packets))
    for _ in range(rng.randint(3, 20)):
        data[rng.randrange(24, len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def _with_garbage(data: bytes, rng: random.Random) -> bytes:
    for _ in range(5):
        pos = rng.randrange(24, len(data))
        data = (
            data[:pos] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))) + data[pos:]
        )
    return data


def _damaged_pcapng() -> bytes:
    conv = conversation(kraft_exchanges(7, seed=6))
    packets = [(0, ts, link_frame(LINK_ETHERNET, ip)) for ts, ip in conv.packets]
    good = pcapng_section([(LINK_ETHERNET, None)], packets)
    tail = pcapng_section([(LINK_ETHERNET, None)], packets[:1])[-100:]
    return good[: len(good) // 2] + b"\xde\xad\xbe\xef" * 3 + good[len(good) // 2 :] + tail
