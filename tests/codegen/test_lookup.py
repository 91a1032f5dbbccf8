"""lookup() and the frame encoders refuse what they cannot serve, with typed errors that say why."""

from __future__ import annotations

import pytest

import kraftwire.generated as kw
from kraftwire.generated import EncodeError, ProtocolError, UnknownSpecError
from kraftwire.generated.request_header import RequestHeader
from kraftwire.generated.vote_request import TopicData, VoteRequest
from kraftwire.generated.vote_response import VoteResponse


@pytest.mark.parametrize(
    "name, suggestion",
    [("VoteReqest", "'VoteRequest'"), ("voterequest", "'VoteRequest'"), ("FetchRequst", "'FetchRequest'")],
)
def test_unknown_spec_names_close_matches(name, suggestion):
    with pytest.raises(UnknownSpecError) as caught:
        kw.lookup(name)
    error = caught.value
    assert isinstance(error, ProtocolError) and isinstance(error, KeyError)  # old `except KeyError` still works
    assert str(error).startswith(f"no spec named {name!r} in kraftwire.generated")
    assert f"did you mean {suggestion}" in str(error)


def test_unknown_spec_without_a_close_match_says_so_plainly():
    with pytest.raises(UnknownSpecError, match=r"^no spec named 'Zzz' in kraftwire\.generated \(\d+ known\)$"):
        kw.lookup("Zzz")


def test_unknown_spec_in_all_upstream_specs(upstream):
    with pytest.raises(upstream.UnknownSpecError, match="did you mean 'FetchRequest'"):
        upstream.lookup("FetchRequst")
    with pytest.raises(upstream.UnknownSpecError, match="did you mean 'metadata'"):
        upstream.metadata_record_class(2, "metdata")
    assert issubclass(upstream.UnknownSpecError, upstream.ProtocolError)


def test_encode_request_refuses_a_response_naming_it(upstream):
    with pytest.raises(upstream.EncodeError, match=r"needs a request message, got MetadataResponse \(a response"):
        upstream.encode_request(upstream.lookup("MetadataResponse")(), 12, 1)


@pytest.mark.parametrize(
    "call, body, named",
    [
        (kw.encode_request, VoteResponse(), "VoteResponse (a response message)"),
        (kw.encode_request, RequestHeader(), "RequestHeader (a header message)"),
        (kw.encode_request, TopicData(), "TopicData (not a message class of an API)"),
        (kw.encode_request, b"\x00", "bytes (not a message class of an API)"),
        (kw.encode_response, VoteRequest(), "VoteRequest (a request message)"),
        (kw.encode_response, TopicData(), "TopicData (not a message class of an API)"),
    ],
)
def test_frame_encoders_refuse_the_wrong_side(call, body, named):
    side = "request" if call is kw.encode_request else "response"
    with pytest.raises(EncodeError) as caught:
        call(body, 1, 7)
    assert str(caught.value) == f"{call.__name__} needs a {side} message, got {named}"


def test_default_client_id_is_kafkas_empty_default():
    frame = kw.encode_request(VoteRequest(), 2, correlation_id=7)
    payload, _ = kw.read_frame(frame)
    assert payload is not None
    assert payload[8:10] == b"\x00\x00"  # an empty ClientId: int16 length 0 and no bytes
    assert kw.decode_request(payload).client_id == ""
    named = kw.decode_request(kw.read_frame(kw.encode_request(VoteRequest(), 2, 7, client_id="me"))[0])
    assert named.client_id == "me"
