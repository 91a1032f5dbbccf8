"""Decode succeeded => encode gives back the same bytes, for any input (canonical decoding).

Kafka's readers accept forms its writers never produce (tags out of order or repeated, bool bytes
other than 0 and 1, padded varints...); kraftwire refuses them at decode with a DecodeError, so a
message that decodes always re-encodes byte for byte. See the docstring of the runtime module.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared import shared_path
from vectors import load_vectors


@pytest.fixture(scope="module")
def vectors():
    return list(load_vectors(shared_path("kafka-vectors")))


def _check(package, spec: str, version: int, data: bytes) -> bool:
    """True when ``data`` decodes (and then re-encodes to itself); False on a DecodeError."""
    cls = package.lookup(spec)
    try:
        message = cls.decode(data, version)
    except package.DecodeError:
        return False
    assert message.encode(version) == data, f"{spec} v{version} {data.hex()}"
    return True


@pytest.mark.parametrize(
    "spec, version, data, reason",
    [
        # two empty unknown tags numbered 3: a repeated tag
        ("DescribeProducersRequest", 0, "010203000300", "tagged field 3 repeats tagged field 3"),
        # tags 5 then 4: out of order
        ("DescribeProducersRequest", 0, "010205000400", "tagged field 4 comes after tagged field 5"),
        # a varint count padded with a zero group (0x81 0x00 is 1)
        ("DescribeProducersRequest", 0, "818000", "varint padded with a trailing zero group"),
        # topic name bytes ff fe are not UTF-8
        ("DescribeProducersRequest", 0, "0203fffe010000", "topics\\[0?\\]\\.name: string is not valid UTF-8"),
    ],
)
def test_non_canonical_forms_are_refused(upstream, spec, version, data, reason):
    with pytest.raises(upstream.DecodeError, match=reason):
        upstream.lookup(spec).decode(bytes.fromhex(data), version)


def test_a_bool_byte_other_than_0_or_1_is_refused():
    from kraftwire.generated import DecodeError
    from kraftwire.generated.vote_request import PartitionData, TopicData, VoteRequest

    partition = PartitionData(partition_index=0, replica_epoch=3, replica_id=1, pre_vote=True)
    data = bytearray(VoteRequest(topics=[TopicData(topic_name="t", partitions=[partition])]).encode(2))
    where = data.rindex(1, 0, len(data) - 2)  # pre_vote, just before the two empty tag sections
    data[where] = 2
    with pytest.raises(DecodeError, match=r"topics\[0\]\.partitions\[0\]\.pre_vote: bool byte 2 is neither 0 nor 1"):
        VoteRequest.decode(bytes(data), 2)


def test_a_known_tag_carrying_its_default_is_refused():
    from kraftwire.generated import DecodeError
    from kraftwire.generated.fetch_request import FetchRequest

    plain = FetchRequest().encode(18)
    assert plain[-1] == 0
    # tag 0 (cluster_id, default null) sent as a null compact string: one byte, 00
    with pytest.raises(DecodeError, match="tagged field 0 carries its default value"):
        FetchRequest.decode(plain[:-1] + bytes.fromhex("01000100"), 18)


@st.composite
def _mutations(draw, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["set", "insert", "delete", "flip"]))
        at = draw(st.integers(0, len(out)))
        if kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=3))
        elif at < len(out):
            if kind == "set":
                out[at] = draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
            elif kind == "delete":
                del out[at]
            else:
                out[at] ^= 1 << draw(st.integers(0, 7))
    return bytes(out)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_decode_then_encode_reproduces_any_input_that_decodes(upstream, vectors, data):
    vector = data.draw(st.sampled_from(vectors))
    mutated = data.draw(_mutations(vector.data))
    _check(upstream, vector.spec, vector.version, mutated)


def test_every_vector_with_every_single_byte_changed(upstream, vectors):
    """Exhaustive over one small flexible message: each byte set to each of a few hostile values."""
    decoded = 0
    for vector in vectors:
        if vector.spec != "FetchRequest" or vector.version != 18 or len(vector.data) > 400:
            continue
        for at in range(len(vector.data)):
            for value in (0, 1, 2, 0x7F, 0x80, 0xFF):
                mutated = bytearray(vector.data)
                mutated[at] = value
                decoded += _check(upstream, vector.spec, vector.version, bytes(mutated))
    assert decoded > 0
