"""Kafka error codes used by the KRaft core (``Errors.java``; kraft-apis.md §5), by name."""

from __future__ import annotations

UNKNOWN_SERVER_ERROR = -1
NONE = 0
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
SNAPSHOT_NOT_FOUND = 98
POSITION_OUT_OF_RANGE = 99
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
