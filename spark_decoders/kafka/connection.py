"""One TCP connection: its two streams, their frame readers, and the exchange matcher.

Which side is the client is decided on the connection's first segment: the SYN's sender; else the side
talking to a configured server port (default 9092 and 9093); else the sender of a payload that
starts like a request; else the side with the higher port. ``conn_id`` is a hash of the endpoints and
the time of the connection's first packet, so every reader of the same packets (local or Spark, whole
file or split) names the connection the same way.
"""

from __future__ import annotations

import hashlib
from typing import Callable, Final

from .bodies import BodyDecoder
from .exchanges import Endpoints, Matcher
from .framing import FrameReader
from .headers import plausible_request, plausible_response, request_check, request_in_rules
from ..packets.layers import ACK, RST, SYN, Segment
from ..packets.reassembly import TcpStream
from .rows import Row

DEFAULT_SERVER_PORTS: Final = frozenset({9092, 9093})
# The API keys of each codec package in use, found once (a package is a module: kept for good).
_API_KEYS: Final[dict[object, frozenset[int]]] = {}


def codec_api_keys(bodies: BodyDecoder) -> frozenset[int]:
    """The API keys ``bodies``' codec set knows (kraftwire's ReadOffset, 1000, among them)."""
    package = bodies.package
    keys = _API_KEYS.get(package)
    if keys is None:
        keys = _API_KEYS[package] = frozenset(getattr(package, "APIS", {}))
    return keys


def client_side(seg: Segment, server_ports: frozenset[int]) -> bool:
    """Whether the sender of ``seg``, the first segment seen of its connection, is the client."""
    if seg.flags & SYN:
        return not seg.flags & ACK
    if (seg.dport in server_ports) != (seg.sport in server_ports):
        return seg.dport in server_ports
    if seg.payload:
        return bool(plausible_request(seg.payload, 0))
    return seg.sport > seg.dport


def connection_id(client: tuple[str, int], server: tuple[str, int], first_ts_ns: int) -> str:
    text = f"{client[0]}|{client[1]}|{server[0]}|{server[1]}|{first_ts_ns}"
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class Connection:
    def __init__(
        self,
        seg: Segment,
        ts_ns: int,
        capture_files: tuple[str, ...],
        bodies: BodyDecoder,
        server_ports: frozenset[int],
        emit: Callable[[Row], None],
    ) -> None:
        sender_is_client = client_side(seg, server_ports)
        sender, receiver = (seg.src, seg.sport), (seg.dst, seg.dport)
        self.client, self.server = (sender, receiver) if sender_is_client else (receiver, sender)
        self._client_ip, self._client_port = self.client
        self.conn_id = connection_id(self.client, self.server, ts_ns)
        endpoints = Endpoints(capture_files, self.conn_id, *self.client, *self.server)
        self.matcher = Matcher(endpoints, bodies, emit)
        self.requests = FrameReader(
            self.matcher.request,
            request_check(codec_api_keys(bodies)),
            in_rules=request_in_rules,
        )
        self.responses = FrameReader(
            self.matcher.response, plausible_response(self.matcher.pending)
        )
        self.to_server = TcpStream(self.requests)
        self.to_client = TcpStream(self.responses)
        self.client_isn: int | None = seg.seq if seg.flags & SYN and sender_is_client else None
        self.reset = False
        self.finished = False  # ``finish`` ran: the connection takes no more segments

    def is_new_connection(self, seg: Segment) -> bool:
        """A fresh SYN from the client after this connection closed (or with another ISN): port reuse."""
        if not seg.flags & SYN or seg.flags & ACK or (seg.src, seg.sport) != self.client:
            return False
        if self.client_isn is None:
            return self.to_server.started
        return seg.seq != self.client_isn and (self.closed or self.to_server.started)

    @property
    def closed(self) -> bool:
        return self.reset or (self.to_server.fin and self.to_client.fin)

    def segment(self, seg: Segment, packet: int, ts_ns: int) -> None:
        from_client = seg.sport == self._client_port and seg.src == self._client_ip
        if seg.flags & RST:
            self.reset = True
        if seg.flags & SYN and from_client and self.client_isn is None:
            self.client_isn = seg.seq
        self.carry(
            from_client, seg.seq, seg.ack, seg.flags, seg.payload, seg.missing, packet, ts_ns
        )

    def carry(
        self,
        from_client: bool,
        seq: int,
        ack: int,
        flags: int,
        payload: bytes,
        missing: int,
        packet: int,
        ts_ns: int,
    ) -> None:
        """What a segment brings to the streams, once ``segment`` has seen its SYN and RST.
        ``pipeline``'s fast path calls this directly for segments with neither."""
        stream, other = (
            (self.to_server, self.to_client) if from_client else (self.to_client, self.to_server)
        )
        if flags & ACK:  # first: the sender had these bytes before it sent this segment
            other.peer_ack(ack)
        stream.segment(seq, flags, payload, missing, packet, ts_ns)

    def finish(self) -> None:
        for stream, reader in ((self.to_server, self.requests), (self.to_client, self.responses)):
            stream.finish()
            reader.finish(stream.fin)
        tls = self.requests.tls_at or self.responses.tls_at
        if tls is not None:
            self.matcher.tls(*tls)
        self.matcher.finish()
        self.finished = True
