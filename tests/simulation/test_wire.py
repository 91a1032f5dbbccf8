"""The simulator's wire path: frames are byte-identical to kraftwire.generated's, versions negotiate."""

from __future__ import annotations

import pytest

from kraftwire.generated import DecodeError, encode_request, encode_response
from kraftwire.node.core import ReplicaKey
from kraftwire.node.core import messages
from kraftwire.node.simulation.wire import CLIENT_ID, Envelope, WireCodec


def _vote() -> object:
    return messages.vote_request("c", ReplicaKey(2), 3, ReplicaKey(1), 2, 10, pre_vote=True)


def test_frames_match_the_generated_framing() -> None:
    codec = WireCodec()
    vote = _vote()
    frame = codec.pack_request(vote, 2, 7)
    assert frame == encode_request(vote, 2, 7, CLIENT_ID)
    body = codec.unpack_request(Envelope(1, 2, 1, 1, True, 52, 2, 7, frame))
    assert body == vote
    from kraftwire.node.core import responses

    resp = responses.api_versions_response(3, (0, 1))
    frame = codec.pack_response(resp, 3, 9)
    assert frame == encode_response(resp, 3, 9)
    assert codec.unpack_response(Envelope(2, 1, 1, 1, False, 18, 3, 9, frame)) == resp


def test_version_is_capped_by_the_peer() -> None:
    vote = _vote()
    assert WireCodec.request_version(vote, {}) == 2
    assert WireCodec.request_version(vote, {52: 1}) == 1
    assert WireCodec.request_version(vote, {1: 12}) == 2


def test_a_frame_cut_inside_its_request_header_is_a_decode_error() -> None:
    """Only the API key and version are read before the header: a frame of 8 to 11 bytes (key and
    version present, correlation id cut) is the header's DecodeError, not a struct error."""
    frame = WireCodec().pack_request(_vote(), 2, 7)
    for size in (8, 9, 10, 11):
        with pytest.raises(DecodeError):
            WireCodec().unpack_request(Envelope(1, 2, 1, 1, True, 52, 2, 7, frame[:size]))
