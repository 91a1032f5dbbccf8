"""Header version rules and whole request/response frames."""

from __future__ import annotations

import pytest

import kraftwire.generated as kw
from kraftwire.generated import DecodeError, UnsupportedVersionError
from kraftwire.generated.api_versions_response import ApiVersion, ApiVersionsResponse
from kraftwire.generated.request_header import RequestHeader
from kraftwire.generated.vote_request import VoteRequest
from streams import check_stream, decoder_from_reader


@pytest.mark.parametrize(
    "api_key, version, request_header, response_header",
    [
        (18, 0, 1, 0),  # ApiVersions
        (18, 3, 2, 0),  # flexible body, but the response header stays v0 (KIP-511)
        (52, 0, 2, 1),  # Vote is flexible from v0
        (52, 2, 2, 1),
        (53, 0, 1, 0),  # BeginQuorumEpoch v0 is not flexible
        (53, 1, 2, 1),
        (1, 11, 1, 0),  # Fetch classic
        (1, 12, 2, 1),  # Fetch flexible
        (1, 18, 2, 1),
    ],
)
def test_header_versions(api_key, version, request_header, response_header):
    assert kw.request_header_version(api_key, version) == request_header
    assert kw.response_header_version(api_key, version) == response_header


def test_header_versions_with_all_upstream_apis(upstream):
    assert upstream.request_header_version(80, 1) == 2 and upstream.response_header_version(80, 1) == 1
    for removed in (4, 5, 6, 7):
        with pytest.raises(upstream.UnsupportedVersionError, match="was removed"):
            upstream.request_header_version(removed, 0)
    with pytest.raises(upstream.UnsupportedVersionError, match="unknown API key 95"):
        upstream.response_header_version(95, 0)


def test_request_header_bytes_match_kafka():
    # docs/wire-format.md §8: v2 {apiKey 52, ver 1, corr 7, clientId "raft-client-1"}
    header = RequestHeader(request_api_key=52, request_api_version=1, correlation_id=7, client_id="raft-client-1")
    assert header.encode(2).hex() == "0034000100000007000d" + b"raft-client-1".hex() + "00"
    header.client_id = None
    assert header.encode(1).hex() == "003400010000000" + "7ffff"


def test_request_frame_round_trip():
    body = VoteRequest(cluster_id="c", voter_id=3)
    frame = kw.encode_request(body, 2, correlation_id=99, client_id="node-1")
    payload, end = kw.read_frame(frame)
    assert end == len(frame)
    request = kw.decode_request(payload)
    assert (request.api_key, request.api_version, request.correlation_id, request.client_id) == (52, 2, 99, "node-1")
    assert request.body == body


def test_api_versions_response_always_uses_header_v0():
    body = ApiVersionsResponse(api_keys=[ApiVersion(api_key=52, min_version=0, max_version=2)])
    frame = kw.encode_response(body, 3, correlation_id=5)
    payload, _ = kw.read_frame(frame)
    assert payload[:4] == b"\x00\x00\x00\x05" and payload[4:6] == b"\x00\x00"  # no tag byte after it
    response = kw.decode_response(payload, 18, 3)
    assert response.correlation_id == 5 and response.body == body


def test_frames_read_however_the_stream_is_cut():
    frames = [kw.encode_request(VoteRequest(voter_id=i), 0, i) for i in range(3)]
    payloads = [frame[4:] for frame in frames]
    check_stream(decoder_from_reader(kw.read_frame), b"".join(frames), payloads, trailing=frames[0][:-1])
    check_stream(decoder_from_reader(kw.read_frame), b"".join(frames), payloads, trailing=frames[0][:3])


def test_bad_sizes():
    frame = kw.encode_request(VoteRequest(), 0, 1)
    with pytest.raises(DecodeError, match="frame size -1"):
        kw.read_frame(b"\xff\xff\xff\xff")
    with pytest.raises(DecodeError, match="outside"):
        kw.read_frame(b"\x7f\xff\xff\xff", max_size=1024)
    payload, _ = kw.read_frame(frame)
    with pytest.raises(DecodeError, match="left over"):
        kw.decode_request(payload + b"\x00")


def test_lookup_and_classes():
    assert kw.lookup("VoteRequest") is VoteRequest
    assert kw.request_class(52) is VoteRequest
    assert kw.response_class(18) is ApiVersionsResponse
    with pytest.raises(KeyError):
        kw.lookup("NoSuchSpec")
    with pytest.raises(UnsupportedVersionError):
        kw.request_class(3)  # Metadata is not in the bundled KRaft package


def test_record_families_follow_spec_directories(tmp_path):
    from kraftwire.codegen.generate import spec_families

    tree = {
        "metadata/src/main/resources/common/metadata/TopicRecord.json": "metadata",
        "storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json": "storage",
        "group-coordinator/src/main/resources/common/message/OffsetCommitKey.json": "group-coordinator",
    }
    paths = []
    for relative in tree:
        path = tmp_path / relative
        path.parent.mkdir(parents=True)
        path.write_text("{}")
        paths.append(path)
    assert {p.relative_to(tmp_path).as_posix(): f for p, f in spec_families(paths).items()} == tree
    single = spec_families(paths[:1])
    assert list(single.values()) == ["metadata"]


def test_whole_frames_decode_as_their_payloads():
    """What encode_request/encode_response return decodes directly, size prefix and all."""
    body = VoteRequest(cluster_id="c", voter_id=3)
    frame = kw.encode_request(body, 2, correlation_id=99, client_id="node-1")
    request = kw.decode_request(frame)
    assert (request.api_key, request.api_version, request.correlation_id) == (52, 2, 99)
    assert request.body == body and request == kw.decode_request(frame[4:])
    reply = ApiVersionsResponse(api_keys=[ApiVersion(api_key=52, min_version=0, max_version=2)])
    framed_reply = kw.encode_response(reply, 3, correlation_id=5)
    response = kw.decode_response(framed_reply, 18, 3)
    assert response.correlation_id == 5 and response.body == reply


def test_a_buffer_that_is_neither_payload_nor_frame_keeps_the_payload_error():
    payload = kw.encode_request(VoteRequest(), 2, correlation_id=1)[4:] + b"\x00"
    with pytest.raises(DecodeError, match="1 bytes left over"):
        kw.decode_request(payload)
    framed = len(payload).to_bytes(4, "big") + payload  # the prefix fits, the bytes after it do not
    with pytest.raises(DecodeError, match="1 bytes left over") as caught:
        kw.decode_request(framed)
    assert caught.value.offset == len(payload) - 1  # the frame's error, at its payload's offset


def test_frames_with_bytes_after_them_are_told_to_be_split_first():
    frames = kw.encode_request(VoteRequest(), 2, correlation_id=1) * 2
    with pytest.raises(UnsupportedVersionError, match="split it with read_frame"):
        kw.decode_request(frames)


def test_the_request_head_is_read_from_every_header_version_without_a_codec():
    from kraftwire.generated.framing import RequestHead, read_request_head

    for version in (0, 2):  # Vote's header v2 (flexible) and BeginQuorumEpoch v0's header v1
        body = VoteRequest() if version else kw.lookup("BeginQuorumEpochRequest")()
        frame = kw.encode_request(body, version, 1234, client_id="c")
        head = read_request_head(frame, 4)
        assert head == RequestHead(body.API_KEY, version, 1234)
        assert head == read_request_head(frame[4:])
        assert read_request_head(frame[4:11]) is None  # one byte short of the correlation id
    assert read_request_head(frame[4:12]) == head


def test_the_response_head_is_its_correlation_id():
    from kraftwire.generated.framing import read_response_head

    frame = kw.encode_response(kw.lookup("VoteResponse")(), 1, -7)
    assert read_response_head(frame, 4) == -7 and read_response_head(frame[4:]) == -7
    assert read_response_head(frame[4:7]) is None
