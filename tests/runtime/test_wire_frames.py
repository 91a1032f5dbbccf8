"""frame_request / frame_response encode each header once per API version (and client id) and patch
the correlation id in: every API and version must still frame exactly as the generated header codec
writes it, and the patched correlation id must be each frame's own."""

from __future__ import annotations

import struct

from kraftwire.generated import (
    APIS,
    lookup,
    request_header_version,
    response_header_version,
)
from kraftwire.node.runtime.wire import frame_request, frame_response, parse_response


def _reference(header: bytearray, body, version: int) -> bytes:
    out = bytearray(4) + header
    body.write(out, version)
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


def test_every_api_and_version_frames_as_the_generated_headers_write():
    checked = 0
    for api in APIS.values():
        request, response = lookup(api.request)(), lookup(api.response)()
        for version in range(api.lowest_version, api.highest_version + 1):
            for correlation_id, client_id in ((7, "raft-client-1"), (-2, "raft-client-1"), (9, "")):
                header = bytearray()
                lookup("RequestHeader")(
                    request_api_key=api.api_key,
                    request_api_version=version,
                    correlation_id=correlation_id,
                    client_id=client_id,
                ).write(header, request_header_version(api.api_key, version))
                framed = frame_request(request, version, correlation_id, client_id)
                assert framed == _reference(header, request, version), (api.name, version)
                header = bytearray()
                lookup("ResponseHeader")(correlation_id=correlation_id).write(
                    header, response_header_version(api.api_key, version)
                )
                framed_response = frame_response(response, version, correlation_id)
                assert framed_response == _reference(header, response, version), (api.name, version)
                assert parse_response(bytes(framed_response[4:]), api.api_key, version)[0] == (
                    correlation_id
                )
                checked += 1
    assert checked > 100
