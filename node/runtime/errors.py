"""Errors the embedding API raises."""

from __future__ import annotations

from kraftwire.node.core.api import Endpoint, LeaderAndEpoch
from kraftwire.node.core.api import NotLeaderError as CoreNotLeaderError


class NotLeaderError(CoreNotLeaderError):
    """An append to a node that is not the leader; ``leader`` says who leads (``leader_id`` may be
    ``None``) and ``endpoint`` where to reach it, when known."""

    def __init__(self, leader: LeaderAndEpoch, endpoint: Endpoint | None) -> None:
        where = "" if endpoint is None else f" at {endpoint.host}:{endpoint.port}"
        super().__init__(
            f"not the leader; leader is {leader.leader_id}{where} in epoch {leader.epoch}"
        )
        self.leader = leader
        self.endpoint = endpoint


class NodeFailed(Exception):
    """The node stopped on a fatal error (storage failure, safety invariant); the message says which."""
