"""Hypothesis strategies of link-layer packets: every link type the reader knows, IPv4 with and
without options, IPv6 with and without an extension header, IP fragments, damaged packets."""

from __future__ import annotations

from hypothesis import strategies as st

from kraftwire.spark_decoders.packets.layers import (
    LINK_ETHERNET,
    LINK_LOOP,
    LINK_NULL,
    LINK_RAW,
    LINK_SLL,
    LINK_SLL2,
)
from kraftwire.synthetic_capture import ip_fragments, link_frame, tcp_packet

ADDRESSES_V4 = ["10.0.0.1", "10.0.0.2", "192.168.7.9", "10.0.0.10"]
ADDRESSES_V6 = ["fd00::1", "fd00::2", "2001:db8::17"]
# Plain Ethernet (the case decided from raw bytes) drawn about half the time.
LINK_TYPES = [LINK_ETHERNET] * 5 + [LINK_SLL, LINK_SLL2, LINK_RAW, LINK_NULL, LINK_LOOP]


@st.composite
def ip_packets(draw) -> list[bytes]:
    """One TCP packet over IPv4 or IPv6 (options, extension header), or its fragments."""
    v6 = draw(st.booleans())
    pool = ADDRESSES_V6 if v6 else ADDRESSES_V4
    src, dst = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
    ip = tcp_packet(
        src,
        draw(st.sampled_from([9092, 9093, 40000, 40001, 65535])),
        dst,
        draw(st.sampled_from([9092, 9093, 40000, 40001, 1])),
        draw(st.integers(0, 2**32 - 1)),
        draw(st.integers(0, 2**32 - 1)),
        draw(st.integers(0, 0xFF)),
        draw(st.binary(max_size=64)),
        ip_options=b"" if v6 else draw(st.sampled_from([b"", b"", b"\x01\x01\x01\x00"])),
        ipv6_extension=v6 and draw(st.booleans()),
    )
    if draw(st.booleans()) and len(ip) > 56:
        return ip_fragments(ip, draw(st.integers(8, 48)), draw(st.integers(0, 0xFFFF)))
    return [ip]


@st.composite
def link_packets(draw) -> list[tuple[int, bytes]]:
    """``(linktype, frame)`` for each IP packet, some tagged, cut short or with bytes flipped."""
    linktype = draw(st.sampled_from(LINK_TYPES))
    vlans = draw(st.sampled_from([(), (), (), (5,), (5, 7)])) if linktype == LINK_ETHERNET else ()
    out = []
    for ip in draw(ip_packets()):
        frame = bytearray(link_frame(linktype, ip, vlans))
        damage = draw(st.sampled_from(["none", "none", "cut", "flip"]))
        if damage == "cut":
            del frame[draw(st.integers(0, len(frame))) :]
        elif damage == "flip":
            for _ in range(draw(st.integers(1, 3))):
                at = draw(st.integers(0, len(frame) - 1))
                frame[at] ^= draw(st.integers(1, 255))
        out.append((linktype, bytes(frame)))
    return out
