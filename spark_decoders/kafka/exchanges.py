"""Pairing the frames of one connection into exchanges, and the row of each exchange.

Requests wait by correlation id; a response takes the latest request with its id (ids may be reused,
as tshark also assumes). Pairing reads only the headers (``headers``), so a body that does not decode
keeps its pair. Produce with acks=0 gets no response and is reported at once. Bodies are decoded when
the row is built; of an exchange with a damaged frame (one that never completed), the other frame's
body still is, and the damaged frame has no frame number or time (no packet completed it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Final

from .bodies import BodyDecoder, Decoded
from .framing import Frame
from .headers import (
    PRODUCE,
    RequestHead,
    produce_acks,
    read_correlation_id,
    read_cut_request_head,
    read_request_head,
)
from ..packets.reassembly import GAP, TRUNCATED
from .rows import COLUMNS, Row, utc_datetime

# A packet reference is file_index << FILE_SHIFT | packet number in that file.
FILE_SHIFT: Final = 40
_NUMBER: Final = (1 << FILE_SHIFT) - 1


def packet_ref(file_index: int, number: int) -> int:
    return (file_index << FILE_SHIFT) | number


@dataclass(frozen=True)
class Endpoints:
    capture_files: tuple[str, ...]  # indexed by the file part of packet references
    conn_id: str
    client_ip: str
    client_port: int
    server_ip: str
    server_port: int


class Matcher:
    def __init__(
        self, endpoints: Endpoints, bodies: BodyDecoder, emit: Callable[[Row], None]
    ) -> None:
        self.endpoints = endpoints
        self.bodies = bodies
        self.emit = emit
        self.pending: dict[int, tuple[Frame, RequestHead]] = {}
        self.unreadable_frames = 0
        self._api_names: dict[int, str | None] = {}
        # Every column in order, the connection's own filled in: each row starts as a copy.
        self._blank_row: Row = dict.fromkeys(COLUMNS)
        self._blank_row.update(
            conn_id=endpoints.conn_id,
            client_ip=endpoints.client_ip,
            client_port=endpoints.client_port,
            server_ip=endpoints.server_ip,
            server_port=endpoints.server_port,
        )

    def request(self, frame: Frame) -> None:
        head = read_request_head(frame.payload)
        if head is None and frame.damage is not None:
            head = read_cut_request_head(frame.payload)  # its numbers pair it still
        if head is None:
            self.unreadable_frames += 1
            return
        if frame.damage is None and head.api_key == PRODUCE:
            flexible = self.bodies.request_flexible(head.api_key, head.api_version)
            if produce_acks(frame.payload, head, flexible) == 0:
                self.emit(self._row(frame, head, None, "acks0"))
                return
        # get and del, not pop: compiled, dict.pop is a method looked up by name on every call
        pending, correlation_id = self.pending, head.correlation_id
        earlier = pending.get(correlation_id)
        if earlier is not None:
            del pending[correlation_id]  # the new request goes to the end, as ``finish`` expects
            self.emit(self._row(earlier[0], earlier[1], None, "no_response"))
        pending[correlation_id] = (frame, head)

    def response(self, frame: Frame) -> None:
        correlation_id = read_correlation_id(frame.payload)
        if correlation_id is None:
            self.unreadable_frames += 1
            return
        waiting = self.pending.get(correlation_id)
        if waiting is None:
            self.emit(self._row(None, None, frame, "no_request", correlation_id))
        else:
            del self.pending[correlation_id]
            self.emit(self._row(waiting[0], waiting[1], frame, "ok"))

    def tls(self, packet: int, ts_ns: int) -> None:
        """The one row of a TLS-encrypted connection, at the packet that opened its first record."""
        row = self._blank_row.copy()
        row["capture_file"] = self.endpoints.capture_files[packet >> FILE_SHIFT]
        row["status"] = "tls"
        row["request_ts"] = utc_datetime(ts_ns)
        row["request_frame"] = packet & _NUMBER
        row["decode_error"] = "TLS-encrypted connection: its Kafka frames cannot be read"
        self.emit(row)

    def finish(self) -> None:
        for frame, head in sorted(self.pending.values(), key=lambda item: item[0].last_packet):
            self.emit(self._row(frame, head, None, "no_response"))
        self.pending.clear()

    def _row(
        self,
        request: Frame | None,
        head: RequestHead | None,
        response: Frame | None,
        status: str,
        correlation_id: int | None = None,
    ) -> Row:
        first = request if request is not None else response
        assert first is not None, "an exchange has a request or a response"
        row = self._blank_row.copy()
        capture_file = self.endpoints.capture_files[first.last_packet >> FILE_SHIFT]
        row["capture_file"] = capture_file
        row["capture_files"] = [capture_file]  # more when sightings merge (``sightings``)
        row["status"] = status
        problems: list[str] = []
        out_of_range = False  # a timestamp no datetime can hold
        if request is not None and head is not None:  # a request always comes with its head
            row["api_key"] = head.api_key
            row["api_name"] = self._api_name(head.api_key)
            row["api_version"] = head.api_version
            row["correlation_id"] = head.correlation_id
            row["client_id"] = head.client_id
            row["request_size"] = request.size
            if request.damage is None:
                request_ts = row["request_ts"] = utc_datetime(request.ts_ns)
                out_of_range = request_ts is None
                row["request_frame"] = request.last_packet & _NUMBER
        else:
            row["correlation_id"] = correlation_id
        if response is not None:
            row["response_size"] = response.size
            if response.damage is None:
                response_ts = row["response_ts"] = utc_datetime(response.ts_ns)
                out_of_range = out_of_range or response_ts is None
                row["response_frame"] = response.last_packet & _NUMBER
                if request is not None and request.damage is None:
                    row["latency_us"] = (response.ts_ns - request.ts_ns) / 1000.0
        if out_of_range:
            problems.append("a packet timestamp past the year 9999 (a damaged capture?) left out")
        request_damage = request.damage if request is not None else None
        response_damage = response.damage if response is not None else None
        if request_damage or response_damage:
            truncated = TRUNCATED in (request_damage, response_damage)
            row["status"] = TRUNCATED if truncated else GAP
            if request is not None and request_damage:
                problems.append(f"request frame incomplete: {request.note}")
            if response is not None and response_damage:
                problems.append(f"response frame incomplete: {response.note}")
            if head is not None:
                self._intact_bodies(row, problems, request, head, response)
        elif request is not None and head is not None:
            answer = response.payload if response is not None else None
            self.bodies.fill(row, problems, request.payload, head, answer)
        if problems:
            row["decode_error"] = "; ".join(problems)
        return row

    def _intact_bodies(
        self,
        row: Row,
        problems: list[str],
        request: Frame | None,
        head: RequestHead,
        response: Frame | None,
    ) -> None:
        """The bodies of the frames of a damaged exchange that did complete (the damaged one's
        header, intact, says which API and version they are)."""
        api_key, version = head.api_key, head.api_version
        if not self.bodies.knows(api_key, version):
            return
        if request is not None and request.damage is None:
            decoded = self.bodies.request(request.payload, api_key, version)
            row["request_json"] = decoded.json_text
            _note(problems, decoded)
        if response is not None and response.damage is None:
            decoded = self.bodies.response(response.payload, api_key, version)
            row["response_json"] = decoded.json_text
            row["error_code"] = decoded.error_code
            row["error_codes"] = decoded.error_codes
            row["throttle_time_ms"] = decoded.throttle_time_ms
            _note(problems, decoded)

    def _api_name(self, api_key: int) -> str | None:
        """``bodies.api_name``, asked once per API key of the connection."""
        names = self._api_names
        name = names.get(api_key)
        if name is None and api_key not in names:
            name = names[api_key] = self.bodies.api_name(api_key)
        return name


def _note(problems: list[str], decoded: Decoded) -> None:
    if decoded.message is not None:
        problems.append(decoded.message)
