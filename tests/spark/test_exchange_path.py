"""The per-exchange path's shortcuts give what the general code they stand for gives."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.spark_decoders.headers import (
    read_request_head,
    request_body_start,
    request_body_start_after,
)

# Request headers: API key, version and correlation id, then a client id of any length (null,
# invalid negative, ASCII, UTF-8 text, any bytes; sometimes longer than what follows), then a
# tagged-field count of zero or anything.
_client_ids = st.one_of(
    st.text(max_size=12).map(str.encode),
    st.binary(max_size=12),
    st.sampled_from([b"consumer-1", b"raft-client-2", b""]),
)
request_headers = st.one_of(
    st.builds(
        lambda fixed, client_id, cut, rest: fixed
        + struct.pack(">h", len(client_id))
        + client_id[: len(client_id) - cut]
        + rest,
        st.binary(min_size=8, max_size=8),
        _client_ids,
        st.integers(0, 2),
        st.one_of(st.just(b"\x00"), st.binary(max_size=8)),
    ),
    st.builds(
        lambda fixed, length, rest: fixed + struct.pack(">h", length) + rest,
        st.binary(min_size=8, max_size=8),
        st.integers(-(2**15), -1) | st.just(-1),
        st.binary(max_size=6),
    ),
    st.binary(max_size=16),
)


@settings(max_examples=800, deadline=None)
@given(payload=request_headers, header_version=st.integers(0, 3))
def test_body_start_after_a_read_head_equals_reading_the_header_again(payload, header_version):
    """The exchange path reads a request's head once: where its body starts is then found from
    that head, as ``request_body_start`` finds it from the payload alone."""
    head = read_request_head(payload)
    if head is not None:
        expected = request_body_start(payload, header_version)
        assert request_body_start_after(head, payload, header_version) == expected
