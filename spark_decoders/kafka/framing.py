"""Kafka frames (``int32 size`` + payload) out of one direction's reassembled byte stream.

``FrameReader`` is a reassembly sink (``data`` / ``gap``) and hands each complete frame to a callback
with the number of the packet that brought its first byte and of the one that completed it (tshark's
frame number for the PDU) and that packet's timestamp.

In sync, each frame's size says where the next one starts, and a frame is taken whatever its header
holds, as long as it keeps the rules every frame of its direction keeps (``in_rules``: for requests,
Kafka's rules for any request header, ``headers.request_in_rules``); a size no frame can have
(negative, or above ``max_frame``) or a frame that breaks those rules means the frame boundaries
were lost (a damaged size).
A gap whose length the stream knows (missing segments, bytes the snap length cut) inside a frame
leaves the reader in sync: it goes on at that frame's end. A gap of unknown length (a mid-stream
start), one that reaches past the frame's end, or a lost boundary make it resynchronise: it looks for
the next offset where a frame plausibly starts, as judged by the ``plausible(buf, pos,
packet_starts)`` function of its direction (True, False, or None when more bytes are needed to tell).

A frame that a gap, the snap length or the end of the capture cut through is still handed on, marked
``gap`` / ``truncated`` with a note saying which and how many bytes, so its header can be reported.

A stream whose first bytes are a TLS handshake record header (content type 0x16, version 0x03xx,
then a ClientHello or ServerHello) is encrypted: the reader notes where (``tls_at``) and reads no
frames from it, rather than garbage. No Kafka frame starts so (its size would be over 360 MB).
"""

from __future__ import annotations

import struct
from typing import Callable, Final

from .headers import MAX_FRAME, Plausible
from ..packets.reassembly import CAPTURE_END, CLOSED, TRUNCATED, StreamSink
from ..packets.typed_reads import i32_be

_SIZE: Final = struct.Struct(">i")
# Bound once: compiled, ``_SIZE.unpack_from(...)`` would look the method up on every call.
_unpack_size: Final = _SIZE.unpack_from
_TLS_HANDSHAKE: Final = 0x16  # a TLS record's content type for handshake messages
_PACKET_START: Final = frozenset({0})  # where packets start in a buffer holding one packet's bytes


class Frame:
    """One Kafka frame as a direction's reader found it. A class, not a NamedTuple: compiled, it is
    one object with its numbers held as machine integers, where a NamedTuple built from a tuple
    took two tuples and a Python int for each number, and its readers (``exchanges``) read fields
    straight from it."""

    __slots__ = ("payload", "size", "first_packet", "last_packet", "ts_ns", "damage", "note")

    def __init__(
        self,
        payload: bytes,
        size: int,
        first_packet: int,
        last_packet: int,
        ts_ns: int,
        damage: str | None,
        note: str | None = None,
    ) -> None:
        self.payload = payload  # without the size prefix; shorter than ``size`` when damaged
        self.size = size
        self.first_packet = first_packet  # the packet that brought its first byte
        # The packet that completed it (tshark's frame number); of a damaged frame, which never
        # completed, the last packet that brought bytes of it.
        self.last_packet = last_packet
        self.ts_ns = ts_ns  # that packet's timestamp
        self.damage = damage  # None, "gap" or "truncated"
        self.note = note  # of a damaged frame: what cut it, and where

    def fields(self) -> tuple[bytes, int, int, int, int, str | None, str | None]:
        return (
            self.payload,
            self.size,
            self.first_packet,
            self.last_packet,
            self.ts_ns,
            self.damage,
            self.note,
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
        self,
        on_frame: Callable[[Frame], None],
        plausible: Plausible,
        max_frame: int = MAX_FRAME,
        in_rules: Plausible | None = None,
    ) -> None:
        self.on_frame = on_frame
        self.plausible = plausible  # where a frame may start, to find the frames again
        self.in_rules = in_rules  # what every frame keeps (None: any frame of a sane size)
        self.max_frame = max_frame
        self.buf = bytearray()
        self.synced = True
        # Bytes of a damaged frame still to pass over before the next frame starts (a gap of
        # known length inside it); while there are, ``synced`` is False and ``buf`` empty.
        self.skip = 0
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
            if self.skip:
                self._pass_over(payload, packet, ts_ns)
                return
            self.first_packet = packet
        self.packet_starts.append((len(self.buf), packet))
        self.buf += payload
        self.last_packet, self.last_ts = packet, ts_ns
        if not self.synced:
            self._resync()
        if self.synced:
            self._frames()

    def _pass_over(self, payload: bytes, packet: int, ts_ns: int) -> None:
        """Bytes that go on a damaged frame: passed over up to its end, frames read after it."""
        skip = self.skip
        self.last_packet, self.last_ts = packet, ts_ns
        if len(payload) < skip:
            self.skip = skip - len(payload)
            return
        self.skip = 0
        self.synced = True
        if len(payload) > skip:
            self._whole_frames(payload[skip:], packet, ts_ns)

    def gap(self, kind: str, missing: int = -1) -> None:
        """``missing`` bytes are missing here (-1: how many is not known): a frame in progress is
        damaged; the reader goes on at its end when the gap ends inside it, else finds the next
        frame by its plausibility."""
        self.fresh = False
        skip = self.skip
        if skip:  # another gap in the damaged frame, already handed on
            self.skip = skip - missing if 0 <= missing <= skip else 0
            self.synced = missing == skip
            return
        buf = self.buf
        if self.synced and len(buf) >= 4:
            (size,) = _unpack_size(buf, 0)
            if 0 <= size <= self.max_frame:  # always so in sync: a frame in progress
                left = 4 + size - len(buf)  # of the frame, from here
                note = _damage_note(kind, missing, left, len(buf) - 4, size)
                damage = "truncated" if kind in _CUTS else "gap"
                payload = bytes(buf[4:])
                self.on_frame(
                    Frame(
                        payload,
                        size,
                        self.first_packet,
                        self.last_packet,
                        self.last_ts,
                        damage,
                        note,
                    )
                )
                if 0 <= missing <= left:
                    buf.clear()
                    self.packet_starts.clear()
                    self.skip = left - missing
                    self.synced = self.skip == 0
                    return
        buf.clear()
        self.packet_starts.clear()
        self.synced = False

    def finish(self, closed: bool = False) -> None:
        """The stream ended (``closed``: the connection was closed, else the capture ended); a
        frame in progress is reported as cut off there."""
        if self.buf and self.synced:
            self.gap(CLOSED if closed else CAPTURE_END)
        self.buf.clear()

    def _frames(self) -> None:
        buf = self.buf
        pos, end = 0, len(buf)
        in_rules = self.in_rules
        while end - pos >= 4:
            (size,) = _unpack_size(buf, pos)
            verdict: bool | None = 0 <= size <= self.max_frame
            if verdict and in_rules is not None:
                verdict = in_rules(buf, pos, _PACKET_START)
            if verdict is None:
                break  # too few bytes yet to tell
            if not verdict:  # no frame is like this: the frame boundaries are lost
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
        copied into the buffer."""
        self.last_packet, self.last_ts = packet, ts_ns
        pos, end = 0, len(payload)
        max_frame, on_frame, in_rules = self.max_frame, self.on_frame, self.in_rules
        verdict: bool | None = True
        while end - pos >= 4:
            size = i32_be(payload, pos)
            verdict = 0 <= size <= max_frame
            if verdict and in_rules is not None:
                verdict = in_rules(payload, pos, _PACKET_START)
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


_CUTS: Final = frozenset({TRUNCATED, CAPTURE_END, CLOSED})  # kinds of gap that truncate a frame


def _damage_note(kind: str, missing: int, left: int, captured: int, size: int) -> str:
    """What cut a frame of ``size`` bytes after its first ``captured``, ``left`` bytes before its
    end: a gap of ``missing`` bytes (-1: unknown) of ``kind``."""
    if kind == CAPTURE_END:
        return f"the capture ended after its first {captured} of {size} bytes"
    if kind == CLOSED:
        return f"the connection closed after its first {captured} of {size} bytes"
    lost = f"{min(missing, left)} bytes" if missing >= 0 else "bytes"
    if kind == TRUNCATED:
        return f"the snap length cut {lost} after its first {captured}"
    return f"{lost} missing from the capture after its first {captured}"
