"""What a kraftwire voter does when it wins the leadership of a Kafka cluster's metadata quorum.

In a Kafka cluster the leader of ``__cluster_metadata`` is also the *active controller*: it runs
Kafka's QuorumController, which the brokers send their registrations, heartbeats and topic changes to.
kraftwire replicates the log but runs no QuorumController, so while it leads, the brokers have no
active controller. ``kraftwire.metadata.leadership`` says what it does then:

* ``resign`` (the default): a leader whose log is a Kafka metadata log gives the epoch up at once
  (:class:`kraftwire.node.core.api.Resign`, EndQuorumEpoch to its successors, as Kafka's
  ``RaftClient.resign``), so a Kafka controller is elected and becomes active again;
* ``keep``: it leads like in a quorum of kraftwire nodes only.

A Kafka metadata log is one that holds the ``metadata.version`` FeatureLevelRecord: Kafka's first
active controller writes it with the bootstrap records, and every snapshot of the log holds it.
The check is the storage layer's (:func:`kraftwire.node.storage.kafka_metadata.holds_metadata_version_record`),
which Produce's refusal uses too: it reads the record's framing bytes, so no metadata codecs are needed.
"""

from __future__ import annotations

from typing import Any

from kraftwire.node.core.api import CommittedBatch, LeaderChanged, SnapshotLoaded
from kraftwire.node.storage.kafka_metadata import holds_metadata_version_record
from kraftwire.node.storage.kafka_metadata import (  # the record test, named here too
    is_metadata_version_record as is_metadata_version_record,
)

RESIGN = "resign"
KEEP = "keep"
POLICIES = (RESIGN, KEEP)


class MetadataLeadership:
    """Watches the notifications the node delivers; says when the local leader must resign."""

    def __init__(self, node_id: int, policy: str = RESIGN) -> None:
        if policy not in POLICIES:
            raise ValueError(
                f"kraftwire.metadata.leadership must be one of {POLICIES}, not {policy!r}"
            )
        self.node_id = node_id
        self.policy = policy
        self.kafka_metadata = False  # the log holds metadata.version
        self.leading_epoch: int | None = None

    def observe(self, note: Any) -> int | None:
        """The epoch to resign, when ``note`` makes this node a leader it must not stay."""
        if type(note) is CommittedBatch or type(note) is SnapshotLoaded:
            if not self.kafka_metadata and holds_metadata_version_record(note.records):
                self.kafka_metadata = True
        elif type(note) is LeaderChanged:
            leader = note.leader
            self.leading_epoch = leader.epoch if leader.leader_id == self.node_id else None
        else:
            return None
        if self.policy == RESIGN and self.kafka_metadata and self.leading_epoch is not None:
            epoch, self.leading_epoch = self.leading_epoch, None  # one Resign per epoch
            return epoch
        return None
