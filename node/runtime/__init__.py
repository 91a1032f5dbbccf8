"""The KRaft node runtime: :class:`KRaftNode` (asyncio driver of the core on TCP and disk, and the
embedding API), its configuration, and the command-line tools built on it."""

from .config import ConfigError, NodeConfig, config_from_properties, load_config
from .errors import NodeFailed, NotLeaderError
from .gc_settings import settle_gc
from .node import KRaftNode
from .reads import ReadError, ReadTimeoutError

__all__ = [
    "ConfigError",
    "KRaftNode",
    "NodeConfig",
    "NodeFailed",
    "NotLeaderError",
    "ReadError",
    "ReadTimeoutError",
    "config_from_properties",
    "load_config",
    "settle_gc",
]
