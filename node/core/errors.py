"""Kafka error codes the KRaft core uses (``Errors.java``; docs/wire-format.md §11), by name, and the default
message Kafka's ``Errors.message()`` gives each (what its answers carry where a handler names no text)."""

from __future__ import annotations

UNKNOWN_SERVER_ERROR = -1
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
BROKER_NOT_AVAILABLE = 8
NETWORK_EXCEPTION = 13
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
INCONSISTENT_VOTER_SET = 94
SNAPSHOT_NOT_FOUND = 98
POSITION_OUT_OF_RANGE = 99
UNKNOWN_TOPIC_ID = 100
INCONSISTENT_CLUSTER_ID = 104
INVALID_VOTER_KEY = 125
DUPLICATE_VOTER = 126
VOTER_NOT_FOUND = 127

NAMES: dict[int, str] = {
    code: name for name, code in list(globals().items()) if name.isupper() and isinstance(code, int)
}


def name(code: int) -> str:
    """``NONE``, ``FENCED_LEADER_EPOCH``, ... (or the number for a code the core never uses)."""
    return NAMES.get(code, str(code))


# The default message of each error above but NONE, word for word (``Errors.java``).
_MESSAGES: dict[int, str] = {
    UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    OFFSET_OUT_OF_RANGE: "The requested offset is not within the range of offsets maintained by the server.",
    UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    NOT_LEADER_OR_FOLLOWER: (
        "For requests intended only for the leader, this error indicates that the broker is not the current "
        "leader. For requests intended for any replica, this error indicates that the broker is not a replica "
        "of the topic partition."
    ),
    REQUEST_TIMED_OUT: "The request timed out.",
    BROKER_NOT_AVAILABLE: "The broker is not available.",
    NETWORK_EXCEPTION: "The server disconnected before a response was received.",
    CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    UNSUPPORTED_VERSION: "The version of API is not supported.",
    INVALID_REQUEST: (
        "This most likely occurs because of a request being malformed by the client library or the message "
        "was sent to an incompatible broker. See the broker logs for more details."
    ),
    FENCED_LEADER_EPOCH: "The leader epoch in the request is older than the epoch on the broker.",
    UNKNOWN_LEADER_EPOCH: "The leader epoch in the request is newer than the epoch on the broker.",
    INCONSISTENT_VOTER_SET: (
        "Indicates that the either the sender or recipient of a voter-only request is not one of the "
        "expected voters."
    ),
    SNAPSHOT_NOT_FOUND: "Requested snapshot was not found.",
    POSITION_OUT_OF_RANGE: (
        "Requested position is not greater than or equal to zero, and less than the size of the snapshot."
    ),
    UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
    INCONSISTENT_CLUSTER_ID: "The clusterId in the request does not match that found on the server.",
    INVALID_VOTER_KEY: "The voter key doesn't match the receiving replica's key.",
    DUPLICATE_VOTER: "The voter is already part of the set of voters.",
    VOTER_NOT_FOUND: "The voter is not part of the set of voters.",
}


def message(code: int) -> str:
    """Kafka's default message for ``code``; for NONE, like ``Errors.NONE.message()``, its name."""
    return _MESSAGES.get(code, name(code))
