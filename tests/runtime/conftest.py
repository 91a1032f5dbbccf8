import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kraftwire.node.runtime.local_cluster import LocalCluster  # noqa: E402
from runtime_settings import TEST_SETTINGS  # noqa: E402


@pytest.fixture
def cluster(tmp_path):
    """A formatted 3-node cluster of real processes; every process is stopped (SIGKILL last) after."""
    local = LocalCluster(str(tmp_path / "cluster"), 3, settings=TEST_SETTINGS)
    local.format()
    try:
        yield local
    finally:
        local.stop_all(graceful_s=5)
