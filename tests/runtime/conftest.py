import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_settings import formatted_cluster  # noqa: E402


@pytest.fixture
def cluster(tmp_path):
    """A formatted 3-node cluster with the test timers (see ``formatted_cluster``)."""
    with formatted_cluster(tmp_path / "cluster") as local:
        yield local
