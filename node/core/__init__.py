"""The sans-IO KRaft core: :class:`KRaftCore` plus its contract (:mod:`.api`) and in-memory storage.

Nothing here touches sockets, threads, files, clocks or global randomness (a test walks the AST).
"""

from .api import *  # noqa: F401,F403
from .api import __all__ as _api_all
from .core import KRaftCore
from .memory import MemoryLog, MemoryQuorumStateStore, MemorySnapshotStore

__all__ = [*_api_all, "KRaftCore", "MemoryLog", "MemoryQuorumStateStore", "MemorySnapshotStore"]
