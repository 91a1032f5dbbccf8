""":class:`FileQuorumStateStore`: the ``quorum-state`` file (Kafka's ``FileQuorumStateStore``).

One JSON object on one line, ``data_version`` 1 for kraft.version 1 (with ``votedDirectoryId``) and 0
for kraft.version 0 (with the legacy ``clusterId``, ``appliedOffset`` and ``currentVoters``). Each write
goes to ``quorum-state.tmp``, is fsynced, renamed over the file and the directory fsynced, so a crash
leaves either the old state or the new one.
"""

from __future__ import annotations

import json
import os
from typing import Any

from kraftwire.node.core.api import ZERO_UUID, ElectionState, ReplicaKey

from . import layout
from .files import FileOps, StorageError, write_atomically

INT32_MAX = (1 << 31) - 1


class FileQuorumStateStore:
    def __init__(self, directory: str, ops: FileOps | None = None) -> None:
        self.path = os.path.join(directory, layout.QUORUM_STATE)
        self.ops = ops or FileOps()

    def read(self) -> ElectionState | None:
        try:
            with open(self.path, "rb") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc.strerror}") from exc
        try:
            return parse_quorum_state(text)
        except (ValueError, KeyError, TypeError) as exc:
            raise StorageError(f"{self.path}: {exc}") from None

    def write(self, state: ElectionState) -> None:
        write_atomically(self.ops, self.path, render_quorum_state(state))

    def clear(self) -> None:
        try:
            self.ops.unlink(self.path)
        except FileNotFoundError:
            pass


def render_quorum_state(state: ElectionState) -> bytes:
    voted = state.voted_key
    fields: dict[str, object] = {}
    if state.kraft_version == 0:
        fields["clusterId"] = ""
    fields["leaderId"] = -1 if state.leader_id is None else state.leader_id
    fields["leaderEpoch"] = state.epoch
    fields["votedId"] = -1 if voted is None else voted.id
    if state.kraft_version >= 1:
        directory = voted.directory_id if voted is not None and voted.directory_id else ZERO_UUID
        fields["votedDirectoryId"] = layout.uuid_to_str(directory)
    else:
        fields["appliedOffset"] = 0
        fields["currentVoters"] = None
    fields["data_version"] = 1 if state.kraft_version >= 1 else 0
    return json.dumps(fields, separators=(",", ":")).encode()


def parse_quorum_state(text: bytes) -> ElectionState:
    fields = json.loads(text)
    if not isinstance(fields, dict):
        raise ValueError("not a JSON object")
    version = fields.get("data_version")
    if version not in (0, 1):
        raise ValueError(f"data_version {version!r} is outside 0..1")
    leader_id = _int32(fields, "leaderId", -1)
    voted_id = _int32(fields, "votedId", -1)
    epoch = _int32(fields, "leaderEpoch", 0)
    directory = None
    if version == 1 and fields.get("votedDirectoryId"):
        directory = layout.uuid_from_str(fields["votedDirectoryId"])
    voted = (
        None
        if voted_id < 0
        else ReplicaKey(voted_id, None if directory == ZERO_UUID else directory)
    )
    return ElectionState(
        epoch=max(0, epoch),
        leader_id=None if leader_id < 0 else leader_id,
        voted_key=voted,
        kraft_version=version,
    )


def _int32(fields: dict[str, Any], name: str, default: int) -> int:
    """Every field is an int32 on the wire: a value outside (an epoch a peer once drove past the
    range) could never be sent, so the node would stay leaderless; it is reported, not used."""
    value = int(fields.get(name, default))
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        raise ValueError(f"{name} {value} is outside int32 (-2147483648..{INT32_MAX})")
    return value
