"""A small blocking Kafka client for the command-line tools and tests: one connection, ApiVersions
first, then requests at the highest version both sides support.

A tool process talks to one cluster with one set of client settings (its ``--command-config``), so
the TLS context is set once for the process with :func:`use_tls`; every connection made after that runs
the TLS handshake first."""

from __future__ import annotations

import socket
import ssl
import struct
from typing import Any

from kraftwire.generated import APIS, ProtocolError
from kraftwire.node.core.messages import api_versions_request

from .wire import FrameError, frame_request, parse_response

_SIZE = struct.Struct(">i")


class ClientError(Exception):
    """The node could not be reached or answered something unreadable."""


_tls: ssl.SSLContext | None = None


def use_tls(context: ssl.SSLContext | None) -> ssl.SSLContext | None:
    """Connect with ``context`` from now on (None: plaintext); returns the previous one."""
    global _tls
    previous, _tls = _tls, context
    return previous


class KafkaConnection:
    def __init__(
        self, host: str, port: int, timeout_s: float = 10.0, client_id: str = "kraftwire-tool"
    ) -> None:
        self.address = f"{host}:{port}"
        self.client_id = client_id
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise ClientError(f"cannot connect to {self.address}: {exc.strerror or exc}") from None
        if _tls is not None:
            try:
                self.sock = _tls.wrap_socket(self.sock, server_hostname=host)
            except (ssl.SSLError, ssl.CertificateError, OSError) as exc:
                self.sock.close()
                reason = getattr(exc, "verify_message", None) or getattr(exc, "reason", None)
                raise ClientError(
                    f"cannot connect to {self.address}: TLS handshake failed: {reason or exc}"
                ) from None
        self._next_id = 0
        self.versions: dict[int, tuple[int, int]] = {}
        answer = self.call(api_versions_request(), 3)
        if answer.error_code != 0:
            raise ClientError(f"{self.address} answered ApiVersions with error {answer.error_code}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}

    def version_for(self, api_key: int) -> int:
        if api_key not in self.versions:
            raise ClientError(f"{self.address} does not serve API key {api_key}")
        low, high = self.versions[api_key]
        version: int = min(high, APIS[api_key].highest_version)
        if version < max(low, APIS[api_key].lowest_version):
            raise ClientError(f"{self.address} and kraftwire share no version of API key {api_key}")
        return version

    def call(self, request: Any, version: int | None = None) -> Any:
        """Send ``request`` and return the decoded response body."""
        version = self.version_for(request.API_KEY) if version is None else version
        self.send(request, version)
        return self.receive(request.API_KEY, version)

    def send(self, request: Any, version: int) -> int:
        self._next_id += 1
        try:
            self.sock.sendall(frame_request(request, version, self._next_id, self.client_id))
        except OSError as exc:
            raise ClientError(f"{self.address}: {exc.strerror or exc}") from None
        return self._next_id

    def receive(self, api_key: int, version: int) -> Any:
        payload = self._read(_SIZE.unpack(self._read(4))[0])
        try:
            correlation_id, body = parse_response(payload, api_key, version)
        except (FrameError, ProtocolError) as exc:
            raise ClientError(f"{self.address}: unreadable response: {exc}") from None
        if correlation_id != self._next_id:
            raise ClientError(
                f"{self.address}: response to request {correlation_id}, expected {self._next_id}"
            )
        return body

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            try:
                chunk = self.sock.recv(min(left, 1 << 20))
            except OSError as exc:
                raise ClientError(f"{self.address}: {exc.strerror or exc}") from None
            if not chunk:
                raise ClientError(f"{self.address} closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "KafkaConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
