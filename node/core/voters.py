"""Voter sets and the control-record state machine (docs/kraft.md §7.1).

The node reads the whole partition: the control records of the snapshot at the log start, then every
control record in the log up to LEO, committed or not. Two offset-indexed histories result:
``VotersRecord`` -> :class:`VoterSet` and ``KRaftVersionRecord`` -> kraft.version. The latest entry takes
effect at once; a follower truncation rolls it back (:meth:`ControlState.truncate_new_entries`).

A voter set that comes from configuration with kraft.version 1 is the *bootstrap* set and sits at
offset -1 (the last contained offset of the bootstrap checkpoint (0, 0)). With kraft.version 0 the
static ``controller.quorum.voters`` set is used while no VotersRecord exists: ids only, kraft range
[0, 0].
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Iterable, Iterator, Mapping, TypeGuard

from kraftwire.generated import k_raft_version_record as _kv
from kraftwire.generated import voters_record as _vr

from .api import Endpoint, LogBatch, ReplicaKey, VoterSpec, ZERO_UUID


class VoterSet:
    """An immutable set of voters keyed by node id (one entry per id)."""

    __slots__ = ("_by_id", "_ids", "_specs")

    def __init__(self, voters: Iterable[VoterSpec] = ()) -> None:
        self._by_id: dict[int, VoterSpec] = {v.key.id: v for v in voters}
        self._ids = tuple(sorted(self._by_id))
        # sorted once: the set never changes, and it is iterated on every status() and leader poll
        self._specs = tuple(self._by_id[i] for i in self._ids)

    # -- queries -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[VoterSpec]:
        return iter(self._specs)

    def specs(self) -> tuple[VoterSpec, ...]:
        """The voters in ascending id order."""
        return self._specs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VoterSet) and self._by_id == other._by_id

    def __repr__(self) -> str:
        return "VoterSet(" + ",".join(str(v.key) for v in self) + ")"

    def ids(self) -> tuple[int, ...]:
        """The voter ids in ascending order."""
        return self._ids

    def get(self, node_id: int) -> VoterSpec | None:
        return self._by_id.get(node_id)

    def is_voter(self, key: ReplicaKey | None) -> bool:
        """True when ``key`` matches an entry (an entry without directory id matches any)."""
        if key is None:
            return False
        v = self._by_id.get(key.id)
        return v is not None and v.key.matches(key)

    def is_only_voter(self, key: ReplicaKey | None) -> bool:
        return len(self._by_id) == 1 and self.is_voter(key)

    def majority(self) -> int:
        return len(self._by_id) // 2 + 1

    def endpoints(self, node_id: int) -> Mapping[str, Endpoint]:
        v = self._by_id.get(node_id)
        return {} if v is None else v.listeners

    # -- changes (each returns a new set) -------------------------------------------------------------

    def with_voter(self, spec: VoterSpec) -> "VoterSet":
        return VoterSet([*(v for v in self._by_id.values() if v.key.id != spec.key.id), spec])

    def without_voter(self, key: ReplicaKey) -> "VoterSet":
        return VoterSet(v for v in self._by_id.values() if v.key != key)

    # -- record conversion ----------------------------------------------------------------------------

    def to_record(self) -> "_vr.VotersRecord":
        return _vr.VotersRecord(
            version=0,
            voters=[
                _vr.Voter(
                    voter_id=v.key.id,
                    voter_directory_id=v.key.directory_id or ZERO_UUID,
                    endpoints=[
                        _vr.Endpoint(name=name, host=ep.host, port=ep.port)
                        for name, ep in v.listeners.items()
                    ],
                    k_raft_version_feature=_vr.KRaftVersionFeature(
                        min_supported_version=v.kraft_version_range[0],
                        max_supported_version=v.kraft_version_range[1],
                    ),
                )
                for v in self
            ],
        )

    @classmethod
    def from_record(cls, record: "_vr.VotersRecord") -> "VoterSet":
        specs = []
        for v in record.voters:
            dir_id = v.voter_directory_id if v.voter_directory_id != ZERO_UUID else None
            feat = v.k_raft_version_feature
            specs.append(
                VoterSpec(
                    key=ReplicaKey(v.voter_id, dir_id),
                    listeners={e.name: Endpoint(e.host, e.port) for e in v.endpoints},
                    kraft_version_range=(feat.min_supported_version, feat.max_supported_version),
                )
            )
        return cls(specs)


def is_voters_record(record: object) -> TypeGuard[_vr.VotersRecord]:
    return type(record).__name__ == "VotersRecord"


def is_kraft_version_record(record: object) -> TypeGuard[_kv.KRaftVersionRecord]:
    return type(record).__name__ == "KRaftVersionRecord"


class ControlState:
    """Offset-indexed voter-set and kraft.version histories (Kafka's KRaftControlRecordStateMachine).

    ``static`` is the fallback used while no VotersRecord is known (kraft.version 0 configuration).
    """

    __slots__ = ("static", "_voter_offsets", "_voter_sets", "_kv_offsets", "_kv_values")

    def __init__(self, static: VoterSet, bootstrap: VoterSet | None, kraft_version: int) -> None:
        self.static = static
        self._voter_offsets: list[int] = []
        self._voter_sets: list[VoterSet] = []
        self._kv_offsets: list[int] = []
        self._kv_values: list[int] = []
        if bootstrap is not None:
            self._voter_offsets.append(-1)
            self._voter_sets.append(bootstrap)
        if kraft_version:
            self._kv_offsets.append(-1)
            self._kv_values.append(kraft_version)

    # -- queries -------------------------------------------------------------------------------------

    def latest_voters(self) -> VoterSet:
        return self._voter_sets[-1] if self._voter_sets else self.static

    def last_voters_offset(self) -> int | None:
        """Offset of the latest VotersRecord (-1: bootstrap); ``None`` when only the static set exists."""
        return self._voter_offsets[-1] if self._voter_offsets else None

    def voters_at(self, offset: int) -> VoterSet:
        i = bisect_right(self._voter_offsets, offset)
        return self._voter_sets[i - 1] if i else self.static

    def kraft_version(self) -> int:
        return self._kv_values[-1] if self._kv_values else 0

    def kraft_version_at(self, offset: int) -> int:
        i = bisect_right(self._kv_offsets, offset)
        return self._kv_values[i - 1] if i else 0

    # -- updates -------------------------------------------------------------------------------------

    def apply_batch(self, batch: LogBatch) -> None:
        if not batch.is_control:
            return
        for i, rec in enumerate(batch.records):
            self.apply_record(batch.base_offset + i, rec)

    def apply_record(self, offset: int, rec: object) -> None:
        if is_voters_record(rec):
            self._drop_from(offset)
            self._voter_offsets.append(offset)
            self._voter_sets.append(VoterSet.from_record(rec))
        elif is_kraft_version_record(rec):
            self._kv_offsets.append(offset)
            self._kv_values.append(rec.k_raft_version)

    def _drop_from(self, offset: int) -> None:
        while self._voter_offsets and self._voter_offsets[-1] >= offset:
            self._voter_offsets.pop()
            self._voter_sets.pop()

    def truncate_new_entries(self, end_offset: int) -> None:
        """Forget entries at or above ``end_offset`` (after a log truncation)."""
        self._drop_from(end_offset)
        while self._kv_offsets and self._kv_offsets[-1] >= end_offset:
            self._kv_offsets.pop()
            self._kv_values.pop()

    def trim_prefix(self, offset: int) -> None:
        """Drop history older than ``offset``, keeping the last entry at or before it."""
        i = bisect_right(self._voter_offsets, offset)
        if i > 1:
            del self._voter_offsets[: i - 1]
            del self._voter_sets[: i - 1]
        j = bisect_right(self._kv_offsets, offset)
        if j > 1:
            del self._kv_offsets[: j - 1]
            del self._kv_values[: j - 1]

    def reset_from_snapshot(self, end_offset: int, control_records: Iterable[object]) -> None:
        """Replace all history with the control records embedded in a snapshot ending at ``end_offset``."""
        self._voter_offsets.clear()
        self._voter_sets.clear()
        self._kv_offsets.clear()
        self._kv_values.clear()
        for rec in control_records:
            self.apply_record(end_offset - 1, rec)
