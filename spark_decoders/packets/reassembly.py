"""One direction of a TCP connection, put back in order.

``TcpStream`` is fed that direction's segments in capture order and the other direction's
acknowledgements; it hands its ``sink`` the payload bytes in sequence order exactly once:

* sequence numbers compare modulo 2**32 (wrap-around is ordinary);
* retransmissions and overlaps are cut to the bytes not yet delivered;
* segments from the future wait in a bounded buffer until the hole fills, the peer acknowledges past
  the hole (the capture missed those bytes, the receiver did not), the buffer is full, or the stream
  ends; then the hole is reported as a gap, with its length, and delivery resumes after it;
* bytes that wait for a hole are handed on, when the segment that fills it arrives, with that
  segment's packet number and time: the frames they complete were completed by it (as tshark's
  out-of-order reassembly has it);
* a stream whose SYN was not captured starts mid-stream (reported like a gap of unknown length: the
  sink resynchronises);
* bytes the snaplen cut off are reported as a ``truncated`` gap, with their count.

The sink has two methods: ``data(payload, packet_number, ts_ns)`` and ``gap(kind, missing)``, the
count of missing bytes -1 when it is not known. The package's own sinks derive from ``StreamSink``,
so that the compiled build calls them directly; any other object with ``data`` and ``gap(kind)`` is
wrapped (``_AnySink``).
"""

from __future__ import annotations

from typing import Final, Protocol

from .layers import FIN, RST, SYN

MAX_BUFFERED_SEGMENTS: Final = 256
MAX_BUFFERED_BYTES: Final = 8 * 1024 * 1024
GAP: Final = "gap"
MIDSTREAM: Final = "midstream"
TRUNCATED: Final = "truncated"
# Not from a stream: what a frame reader is told when its stream ends (``framing``).
CAPTURE_END: Final = "capture_end"
CLOSED: Final = "closed"
_SYN_RST: Final = SYN | RST
_SYN_RST_FIN: Final = SYN | RST | FIN
# ``next_seq`` before the stream starts and ``peer_acked`` before the peer acknowledged anything: no
# 32-bit sequence number is negative. A plain int, not None: compiled, an ``int | None`` attribute
# holds a Python object, and every store of a sequence number would allocate one.
UNSET: Final = -1


class Sink(Protocol):
    def data(self, payload: bytes, packet: int, ts_ns: int) -> None: ...

    def gap(self, kind: str) -> None: ...


class StreamSink:
    """Base of the package's own sinks (``framing.FrameReader``, ``tables._Tally``)."""

    def data(self, payload: bytes, packet: int, ts_ns: int) -> None:
        raise NotImplementedError

    def gap(self, kind: str, missing: int = -1) -> None:
        raise NotImplementedError


class _AnySink(StreamSink):
    """Any other sink, called through its Python methods."""

    def __init__(self, target: Sink) -> None:
        self.target = target

    def data(self, payload: bytes, packet: int, ts_ns: int) -> None:
        self.target.data(payload, packet, ts_ns)

    def gap(self, kind: str, missing: int = -1) -> None:
        self.target.gap(kind)


def seq_diff(a: int, b: int) -> int:
    """``a - b`` as a signed 32-bit distance."""
    d = (a - b) & 0xFFFFFFFF
    return d - 0x100000000 if d & 0x80000000 else d


class TcpStream:
    def __init__(self, sink: Sink) -> None:
        self.sink: StreamSink = sink if isinstance(sink, StreamSink) else _AnySink(sink)
        self.next_seq = UNSET
        self.peer_acked = UNSET
        self.pending: dict[int, tuple[bytes, int, int, int, int]] = {}  # seq -> segment
        self.pending_bytes = 0
        self.fin = False
        self.delivered = False  # any payload byte handed on yet
        self.retransmits = 0
        self.gaps = 0

    @property
    def started(self) -> bool:
        """Whether the stream knows where its bytes start (a SYN or its first segment was seen)."""
        return self.next_seq != UNSET

    def segment(
        self, seq: int, flags: int, payload: bytes, missing: int, packet: int, ts_ns: int
    ) -> None:
        if seq == self.next_seq and payload and not (missing or self.pending or flags & _SYN_RST):
            self._next_in_order(seq, flags, payload, packet, ts_ns)
        elif payload or missing or flags & _SYN_RST_FIN or self.next_seq == UNSET:
            self._any_segment(seq, flags, payload, missing, packet, ts_ns)
        # else a bare acknowledgement on a started stream: nothing for this direction to do (a
        # third of all packets; ``_any_segment`` would come to the same after its checks)

    def _next_in_order(self, seq: int, flags: int, payload: bytes, packet: int, ts_ns: int) -> None:
        """The common case, the next bytes with nothing waiting: what ``_any_segment`` does for
        them, without its checks."""
        self.delivered = True
        self.next_seq = (seq + len(payload)) & 0xFFFFFFFF
        self.sink.data(payload, packet, ts_ns)
        if flags & FIN:
            self.fin = True

    def _any_segment(
        self, seq: int, flags: int, payload: bytes, missing: int, packet: int, ts_ns: int
    ) -> None:
        if flags & SYN:
            if self.next_seq == UNSET:
                self.next_seq = (seq + 1) & 0xFFFFFFFF
            return  # a retransmitted SYN changes nothing
        if self.next_seq == UNSET:
            self.next_seq = seq
            if payload or missing:
                self._gap(MIDSTREAM)
        if flags & RST:
            self.fin = True
        if not payload and not missing:
            if flags & FIN and seq_diff(seq, self.next_seq) <= 0:
                self.fin = True
            return
        ahead = seq_diff(seq, self.next_seq)
        if ahead < 0 and not self.delivered:
            # Data from before the first byte the SYN promised: the SYN's sequence number was
            # wrong (damaged), so start over from this segment as if mid-stream.
            self.next_seq, ahead = seq, 0
            self._gap(MIDSTREAM)
        if ahead > 0 and not self._lost_before(seq):
            self._hold(seq, payload, missing, packet, ts_ns, flags)
            return
        if ahead > 0:
            self._skip_to(seq)
        self._deliver(seq, payload, missing, packet, ts_ns, flags)
        self._drain(packet, ts_ns)

    def peer_ack(self, ack: int) -> None:
        """The other side acknowledged ``ack``: everything before it reached the receiver."""
        acked = self.peer_acked
        # seq_diff(ack, acked) > 0, inlined: this runs for nearly every packet
        if acked == UNSET or 0 < (ack - acked) & 0xFFFFFFFF < 0x80000000:
            self.peer_acked = ack
        if self.pending and self.next_seq != UNSET:
            lowest = self._lowest_pending()
            if seq_diff(ack, lowest) >= 0 and self._lost_before(lowest):
                self._skip_to(lowest)
                self._drain()

    def finish(self) -> None:
        """The capture (or the connection) ended: deliver what waits, with the holes as gaps."""
        while self.pending:
            self._skip_to(self._lowest_pending())
            self._drain()

    # -- internals -----------------------------------------------------------------------------

    def _lost_before(self, seq: int) -> bool:
        """Whether the bytes between next_seq and ``seq`` were acknowledged, i.e. lost by the capture."""
        return self.peer_acked != UNSET and seq_diff(self.peer_acked, seq) >= 0

    def _hold(
        self, seq: int, payload: bytes, missing: int, packet: int, ts_ns: int, flags: int
    ) -> None:
        if seq in self.pending:
            self.retransmits += 1
            return
        self.pending[seq] = (payload, missing, packet, ts_ns, flags)
        self.pending_bytes += len(payload)
        if len(self.pending) > MAX_BUFFERED_SEGMENTS or self.pending_bytes > MAX_BUFFERED_BYTES:
            self._skip_to(self._lowest_pending())
            self._drain()

    def _expected(self) -> int:
        """``next_seq`` where the stream has started, as it has on every path that calls this."""
        expected = self.next_seq
        assert expected != UNSET, "the stream has not started"
        return expected

    def _lowest_pending(self) -> int:
        base = self._expected()
        return min(self.pending, key=lambda s: seq_diff(s, base))

    def _skip_to(self, seq: int) -> None:
        self._gap(GAP, seq_diff(seq, self._expected()))
        self.next_seq = seq

    def _gap(self, kind: str, missing: int = -1) -> None:
        self.gaps += 1
        self.sink.gap(kind, missing)

    def _deliver(
        self, seq: int, payload: bytes, missing: int, packet: int, ts_ns: int, flags: int
    ) -> None:
        expected = self._expected()
        overlap = -seq_diff(seq, expected)
        if overlap >= len(payload) + missing:
            if payload or missing:
                self.retransmits += 1
            return
        if overlap:
            self.retransmits += 1
        if overlap < len(payload):
            fresh = payload[overlap:]
            self.delivered = True
            expected = self.next_seq = (expected + len(fresh)) & 0xFFFFFFFF
            self.sink.data(fresh, packet, ts_ns)
            overlap = 0
        else:
            overlap -= len(payload)
        if missing > overlap:
            self._gap(TRUNCATED, missing - overlap)
            self.next_seq = (expected + missing - overlap) & 0xFFFFFFFF
        if flags & FIN:
            self.fin = True

    def _drain(self, filler: int = -1, filler_ts_ns: int = 0) -> None:
        """Hands on the waiting segments that are next now: with the number and time of
        ``filler``, the packet whose bytes made them next, when there is one (-1: a gap was
        skipped, and each keeps its own)."""
        while self.pending:
            expected = self._expected()
            ready = [s for s in self.pending if seq_diff(s, expected) <= 0]
            if not ready:
                return
            for seq in sorted(ready, key=lambda s: seq_diff(s, expected)):
                payload, missing, packet, ts_ns, flags = self.pending.pop(seq)
                self.pending_bytes -= len(payload)
                if filler >= 0:
                    packet, ts_ns = filler, filler_ts_ns
                self._deliver(seq, payload, missing, packet, ts_ns, flags)
