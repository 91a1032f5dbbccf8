"""Kafka frames (``int32 size`` + payload) out of one direction's reassembled byte stream.

``FrameReader`` is a reassembly sink (``data`` / ``gap``) and hands each complete frame to a callback
with the number of the packet that brought its first byte and of the one that completed it (tshark's
frame number for the PDU) and that packet's timestamp. After a gap, or at a mid-stream start, it
resynchronises: it looks for the next offset where a frame plausibly starts, as judged by the
``plausible(buf, pos, packet_starts)`` function of its direction (True, False, or None when more bytes
are needed to tell). A frame that a gap or the snaplen
cut through is still handed on, marked ``gap`` / ``truncated``, so its header can be reported.
A stream whose first bytes are a TLS handshake record header (content type 0x16, version 0x03xx,
then a ClientHello or ServerHello) is encrypted: the reader notes where (``tls_at``) and reads no frames from it, rather than garbage. No
Kafka frame starts so (its size would be over 360 MB).
"""

from __future__ import annotations

import struct
from typing import Callable, Final

from .headers import Plausible
from .reassembly import TRUNCATED, StreamSink

MAX_FRAME: Final = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
_SIZE: Final = struct.Struct(">i")
# Bound once: compiled, ``_SIZE.unpack_from(...)`` would look the method up on every call.
_unpack_size: Final = _SIZE.unpack_from
_TLS_HANDSHAKE: Final = 0x16  # a TLS record's content type for handshake messages
_PACKET_START: Final = frozenset({0})  # where packets start in a buffer holding one packet's bytes
# Whether this module runs compiled: then a payload's frame sizes are read with librt's typed
# reader (see ``pipeline.COMPILED``).
COMPILED: Final = not __file__.endswith((".py", ".pyc"))
if COMPILED:
    from librt.strings import read_i32_be


class Frame:
    """One Kafka frame as a direction's reader found it. A class, not a NamedTuple: compiled, it is
    one object with its numbers held as machine integers, where a NamedTuple built from a tuple
    took two tuples and a Python int for each number, and its readers (``exchanges``) read fields
    straight from it."""

    __slots__ = ("payload", "size", "first_packet", "last_packet", "ts_ns", "damage")

    def __init__(
        self,
        payload: bytes,
        size: int,
        first_packet: int,
        last_packet: int,
        ts_ns: int,
        damage: str | None,
    ) -> None:
        self.payload = payload  # without the size prefix; shorter than ``size`` when damaged
        self.size = size
        self.first_packet = first_packet  # the packet that brought its first byte
        self.last_packet = last_packet  # the packet that completed it (tshark's frame number)
        self.ts_ns = ts_ns  # that packet's timestamp
        self.damage = damage  # None, "gap" or "truncated"

    def fields(self) -> tuple[bytes, int, int, int, int, str | None]:
        return (
            self.payload,
            self.size,
            self.first_packet,
            self.last_packet,
            self.ts_ns,
            self.damage,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frame) and self.fields() == other.fields()

    def __repr__(self) -> str:
        return f"Frame{self.fields()!r}"


def opens_tls(data: bytes) -> bool:
    """Whether ``data`` starts with a TLS record carrying a ClientHello or ServerHello: content type
    0x16, version 0x0300-0x0304, a length a record may have (2^14 + 2048), handshake type 1 or 2."""
    if len(data) < 6 or data[0] != _TLS_HANDSHAKE or data[1] != 3 or data[2] > 4:
        return False
    return (data[3] << 8 | data[4]) <= 18432 and data[5] in (1, 2)


class FrameReader(StreamSink):
    def __init__(
        self, on_frame: Callable[[Frame], None], plausible: Plausible, max_frame: int = MAX_FRAME
    ) -> None:
        self.on_frame = on_frame
        self.plausible = plausible
        self.max_frame = max_frame
        self.buf = bytearray()
        self.synced = True
        self.first_packet = 0  # packet that brought the buffer's first byte
        # (buffer offset, packet number) where each delivered packet's bytes begin
        self.packet_starts: list[tuple[int, int]] = []
        self.last_packet = 0
        self.last_ts = 0
        self.resyncs = 0
        self.fresh = True  # no byte of the stream seen yet
        self.tls_at: tuple[int, int] | None = None  # (packet, ts_ns) of a TLS stream's first record

    def data(self, payload: bytes, packet: int, ts_ns: int) -> None:
        if self.fresh:
            self.fresh = False
            if opens_tls(payload):
                self.tls_at = (packet, ts_ns)
        if self.tls_at is not None:
            return
        if not self.buf:
            if self.synced:
                self._whole_frames(payload, packet, ts_ns)
                return
            self.first_packet = packet
        self.packet_starts.append((len(self.buf), packet))
        self.buf += payload
        self.last_packet, self.last_ts = packet, ts_ns
        if not self.synced:
            self._resync()
        if self.synced:
            self._frames()

    def gap(self, kind: str) -> None:
        """Bytes are missing here: a frame in progress is damaged, and the next one must be found."""
        self.fresh = False
        if self.synced and len(self.buf) >= 4:
            (size,) = _unpack_size(self.buf, 0)
            if 0 <= size <= self.max_frame:
                damage = "truncated" if kind == TRUNCATED else "gap"
                self.on_frame(
                    Frame(
                        bytes(self.buf[4:]),
                        size,
                        self.first_packet,
                        self.last_packet,
                        self.last_ts,
                        damage,
                    )
                )
        self.buf.clear()
        self.packet_starts.clear()
        self.synced = False

    def finish(self) -> None:
        """The stream ended; a frame in progress is reported as cut off by the end of the capture."""
        if self.buf and self.synced:
            self.gap(TRUNCATED)
        self.buf.clear()

    def _frames(self) -> None:
        buf = self.buf
        pos, end = 0, len(buf)
        starts = self._starts()
        while end - pos >= 4:
            (size,) = _unpack_size(buf, pos)
            verdict = self.plausible(buf, pos, starts) if size <= self.max_frame else False
            if verdict is None:
                break  # too few bytes yet to judge this frame's header
            if not verdict:  # lost the frame boundaries (a damaged size): find them again
                self._trim(pos)
                self.synced = False
                self._resync(skip_first=True)
                return
            stop = pos + 4 + size
            if stop > end:
                break
            first = self.first_packet if pos == 0 else self._packet_at(pos)
            payload = bytes(buf[pos + 4 : stop])
            self.on_frame(Frame(payload, size, first, self.last_packet, self.last_ts, None))
            pos = stop
        self._trim(pos)

    def _whole_frames(self, payload: bytes, packet: int, ts_ns: int) -> None:
        """``data`` into an empty buffer, the common case: the loop of ``_frames`` over the payload
        itself, so frames that lie wholly in it are sliced straight from it and only a remainder is
        copied into the buffer. Verdicts are the same, the packet's one start being offset 0."""
        self.last_packet, self.last_ts = packet, ts_ns
        pos, end = 0, len(payload)
        max_frame, plausible, on_frame = self.max_frame, self.plausible, self.on_frame
        verdict: bool | None = True
        size: int
        while end - pos >= 4:
            if COMPILED:
                size = int(read_i32_be(payload, pos))
            else:
                (size,) = _unpack_size(payload, pos)
            verdict = plausible(payload, pos, _PACKET_START) if size <= max_frame else False
            stop = pos + 4 + size
            if not verdict or stop > end:
                break
            on_frame(Frame(payload[pos + 4 : stop], size, packet, packet, ts_ns, None))
            pos = stop
        if pos == end:
            return
        self.buf += payload[pos:] if pos else payload
        self.first_packet = packet
        self.packet_starts.append((0, packet))
        if verdict is False:  # lost the frame boundaries: find them again, past this start
            self.synced = False
            self._resync(skip_first=True)

    def _starts(self) -> "_Offsets":
        return _Offsets(self.packet_starts)

    def _packet_at(self, pos: int) -> int:
        """The packet that brought byte ``pos`` of the buffer."""
        for offset, packet in reversed(self.packet_starts):
            if offset <= pos:
                return packet
        return self.first_packet

    def _trim(self, pos: int) -> None:
        if not pos:
            return
        first = self._packet_at(pos) if pos < len(self.buf) else self.last_packet
        del self.buf[:pos]
        kept = [(offset - pos, packet) for offset, packet in self.packet_starts if offset > pos]
        self.packet_starts = [(0, first)] + kept
        self.first_packet = first

    def _resync(self, skip_first: bool = False) -> None:
        """Find the first plausible frame start; one still undecided (needing more bytes) keeps the
        buffer from there, but a decided start after it wins (it answers a pending request)."""
        buf = bytes(self.buf)
        starts = self._starts()
        pos = 1 if skip_first else 0
        undecided = None
        while pos + 4 <= len(buf):
            verdict = self.plausible(buf, pos, starts)
            if verdict:
                self.resyncs += 1
                self._trim(pos)
                self.synced = True
                return
            if verdict is None and undecided is None:
                undecided = pos
            pos += 1
        self._trim(pos if undecided is None else undecided)


class _Offsets:
    """The buffer offsets where packets start, as a set built only if a check asks."""

    __slots__ = ("starts", "_set")

    def __init__(self, starts: list[tuple[int, int]]) -> None:
        self.starts = starts
        self._set: frozenset[object] | None = None

    def __contains__(self, offset: object) -> bool:
        if self._set is None:
            self._set = frozenset(start for start, _ in self.starts)
        return offset in self._set
