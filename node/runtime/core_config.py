"""The core's :class:`~kraftwire.node.core.api.Config` for a node: its settings, and the voters and
kraft.version its log directory was formatted with.

A static quorum (``controller.quorum.voters``) starts from the configured voters at kraft.version 0,
unless the bootstrap checkpoint names voters (a directory formatted for a dynamic quorum wins); a
dynamic one (``controller.quorum.bootstrap.servers``) from the checkpoint's voters, at kraft.version 1
or above.
"""

from __future__ import annotations

import random

from kraftwire.node.core.api import Config, ReplicaKey, VoterSpec
from kraftwire.node.storage import NodeStorage

from .config import NodeConfig
from .local_apis import SUPPORTED_KRAFT_VERSION


def core_config(cfg: NodeConfig, storage: NodeStorage, start_ms: int) -> Config:
    bootstrap = storage.bootstrap()
    if cfg.voters:
        voters = [
            VoterSpec(ReplicaKey(i, None), {cfg.listener_name: ep}) for i, ep in cfg.voters.items()
        ]
        kraft_version = bootstrap.kraft_version if bootstrap.voters else 0
        voters = list(bootstrap.voters) or voters
    else:
        voters, kraft_version = list(bootstrap.voters), max(1, bootstrap.kraft_version)
    return Config(
        node_id=cfg.node_id,
        directory_id=storage.meta.directory_id,
        cluster_id=storage.meta.cluster_id,
        voters=voters,
        rng=random.Random(),
        start_ms=start_ms,
        kraft_version=kraft_version,
        listeners=dict(cfg.listeners),
        follower_fetch=cfg.follower_fetch,
        supported_kraft_version=SUPPORTED_KRAFT_VERSION,
        bootstrap_servers=tuple(cfg.bootstrap_servers),
        election_timeout_ms=cfg.election_timeout_ms,
        fetch_timeout_ms=cfg.fetch_timeout_ms,
        election_backoff_max_ms=cfg.election_backoff_max_ms,
        request_timeout_ms=cfg.request_timeout_ms,
        retry_backoff_ms=cfg.retry_backoff_ms,
        append_linger_ms=cfg.append_linger_ms,
        fetch_max_bytes=cfg.fetch_max_bytes,
        fetch_snapshot_max_bytes=cfg.fetch_snapshot_max_bytes,
        auto_join=cfg.auto_join,
    )
