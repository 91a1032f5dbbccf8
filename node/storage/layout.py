"""Names and small text formats of Kafka's metadata log directory (docs/kraft.md §9).

::

    <metadata.log.dir>/meta.properties
    <metadata.log.dir>/.lock
    <metadata.log.dir>/__cluster_metadata-0/%020d.log
    <metadata.log.dir>/__cluster_metadata-0/leader-epoch-checkpoint
    <metadata.log.dir>/__cluster_metadata-0/partition.metadata
    <metadata.log.dir>/__cluster_metadata-0/quorum-state
    <metadata.log.dir>/__cluster_metadata-0/%020d-%010d.checkpoint
"""

from __future__ import annotations

import base64
import os
import re
import uuid
from dataclasses import dataclass

from kraftwire.node.core.api import METADATA_TOPIC_ID, ZERO_UUID, SnapshotId

from .files import StorageError
from .properties import decode_properties, parse_properties

PARTITION_DIR = "__cluster_metadata-0"
META_PROPERTIES = "meta.properties"
QUORUM_STATE = "quorum-state"
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def partition_dir(log_dir: str) -> str:
    return os.path.join(log_dir, PARTITION_DIR)


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def snapshot_name(sid: SnapshotId) -> str:
    return f"{sid.end_offset:020d}-{sid.epoch:010d}.checkpoint"


# -- Kafka's Uuid text form: base64url of the 16 bytes, no padding ----------------------------------


def uuid_to_str(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def uuid_from_str(text: str) -> uuid.UUID:
    """Parse Kafka's 22-character Uuid form; ``ValueError`` names the text on anything else."""
    if len(text) != 22:
        raise ValueError(f"{text!r} is not a Kafka uuid (22 base64url characters)")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not a Kafka uuid (22 base64url characters)") from None
    if len(raw) != 16 or uuid_to_str(uuid.UUID(bytes=raw)) != text:
        raise ValueError(f"{text!r} is not a Kafka uuid (22 base64url characters)")
    return uuid.UUID(bytes=raw)


def random_uuid() -> uuid.UUID:
    """A random id as Kafka's ``Uuid.randomUuid``: never a reserved id, never printed with a leading '-'."""
    while True:
        value = uuid.uuid4()
        if value not in (ZERO_UUID, METADATA_TOPIC_ID) and not uuid_to_str(value).startswith("-"):
            return value


# -- meta.properties ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: uuid.UUID

    def render(self) -> bytes:
        return (
            "#\n#Written by kraftwire storage format\n"
            f"cluster.id={self.cluster_id}\ndirectory.id={uuid_to_str(self.directory_id)}\n"
            f"node.id={self.node_id}\nversion=1\n"
        ).encode()


def read_meta_properties(log_dir: str) -> MetaProperties:
    path = os.path.join(log_dir, META_PROPERTIES)
    try:
        with open(path, "rb") as f:
            props = parse_properties(decode_properties(f.read(), path), path)
    except FileNotFoundError:
        raise StorageError(
            f"{log_dir} is not formatted (no {META_PROPERTIES}); run kraftwire storage format"
        ) from None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from None
    except ValueError as exc:  # names the file and where in it
        raise StorageError(str(exc)) from None
    try:
        if props.get("version") != "1":
            raise ValueError(f"version={props.get('version')} (only 1 is supported)")
        return MetaProperties(
            props["cluster.id"], int(props["node.id"]), uuid_from_str(props["directory.id"])
        )
    except KeyError as exc:
        raise StorageError(f"{path}: missing {exc.args[0]}") from None
    except ValueError as exc:
        raise StorageError(f"{path}: {exc}") from None


# -- leader-epoch-checkpoint -------------------------------------------------------------------------


def render_epoch_checkpoint(epochs: list[tuple[int, int]]) -> bytes:
    lines = ["0", str(len(epochs))] + [f"{epoch} {start}" for epoch, start in epochs]
    return ("\n".join(lines) + "\n").encode()


PARTITION_METADATA_TEXT = f"version: 0\ntopic_id: {uuid_to_str(METADATA_TOPIC_ID)}".encode()
