"""MetadataClient against a scripted loopback server: a Produce whose answer never comes is reported
as an unknown outcome at once, on the one connection it was sent on (it is never resent and the
client does not go looking for another leader first), and a Fetch refusal is a FetchRefused."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from kraftwire.generated import api_versions_response as _avr
from kraftwire.generated import fetch_response as _fr
from kraftwire.node.core.api import METADATA_TOPIC_ID, Endpoint
from kraftwire.node.runtime.producer import FetchRefused, MetadataClient, OutcomeUnknown
from kraftwire.node.runtime.wire import frame_response

pytestmark = pytest.mark.timeout(60)

_HEAD = struct.Struct(">ihhi")  # size, api key, api version, correlation id
API_VERSIONS, PRODUCE, FETCH = 18, 0, 1
UNKNOWN_TOPIC_OR_PARTITION = 3

# Answers a request (api key, version, correlation id) with frame bytes, or None to hang up.
Script = Callable[[int, int, int], "bytes | None"]


def _api_versions(correlation_id: int) -> bytes:
    keys = [
        _avr.ApiVersion(api_key=key, min_version=0, max_version=high)
        for key, high in ((PRODUCE, 13), (FETCH, 17), (API_VERSIONS, 3))
    ]
    return frame_response(_avr.ApiVersionsResponse(api_keys=keys), 3, correlation_id)


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


@contextmanager
def scripted_server(script: Script) -> Iterator[tuple[Endpoint, list[int]]]:
    """A loopback server answering ApiVersions itself and everything else through ``script``; yields
    its endpoint and a list that counts the connections it accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    accepted: list[int] = []
    stopping = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            while (head := _read_exactly(conn, _HEAD.size)) is not None:
                size, api_key, version, correlation_id = _HEAD.unpack(head)
                if _read_exactly(conn, size - 8) is None:
                    return
                answer = (
                    _api_versions(correlation_id)
                    if api_key == API_VERSIONS
                    else script(api_key, version, correlation_id)
                )
                if answer is None:
                    return
                conn.sendall(answer)

    def accept_loop() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            accepted.append(1)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept_loop, daemon=True)
    acceptor.start()
    try:
        yield Endpoint("127.0.0.1", listener.getsockname()[1]), accepted
    finally:
        stopping.set()
        acceptor.join(5)
        listener.close()


def test_a_produce_left_unanswered_is_an_unknown_outcome_at_once():
    def hang_up_on_produce(api_key: int, version: int, correlation_id: int) -> None:
        return None

    with scripted_server(hang_up_on_produce) as (endpoint, accepted):
        client = MetadataClient(endpoint, deadline_s=3.0, timeout_s=2.0, pinned=True)
        with pytest.raises(OutcomeUnknown, match="outcome unknown"):
            client.produce([b"value"])
        client.close()
    # One connection: the request was not resent and no retry loop ran until the deadline.
    assert len(accepted) == 1


def test_a_refused_fetch_is_a_fetch_refusal_naming_its_error():
    def refuse_fetch(api_key: int, version: int, correlation_id: int) -> bytes:
        assert api_key == FETCH
        partition = _fr.PartitionData(partition_index=0, error_code=UNKNOWN_TOPIC_OR_PARTITION)
        topic = _fr.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=[partition])
        return frame_response(_fr.FetchResponse(responses=[topic]), version, correlation_id)

    with scripted_server(refuse_fetch) as (endpoint, accepted):
        client = MetadataClient(endpoint, deadline_s=3.0, timeout_s=2.0, pinned=True)
        with pytest.raises(FetchRefused, match="error 3") as refused:
            client.fetch_committed(0)
        client.close()
    assert refused.value.error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert len(accepted) == 1
