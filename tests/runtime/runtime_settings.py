"""Node timers and the formatted test cluster for the runtime tests (a module of its own: every test
directory has a ``conftest``, so importing from one by name is ambiguous in a whole-suite run)."""

import contextlib

from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.runtime.producer import MetadataClient

# Timers a shared 2-core machine can keep: fast enough for tests, slow enough to avoid churn.
TEST_SETTINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "controller.quorum.request.timeout.ms": 1000,
}

# The same, with followers serving client Fetches of committed records (reads after ReadOffset).
FOLLOWER_READ_SETTINGS = {**TEST_SETTINGS, "kraftwire.follower.fetch.enable": "true"}


@contextlib.contextmanager
def formatted_cluster(directory, settings=TEST_SETTINGS, controllers=3):
    """A formatted cluster of real processes (3 by default); every process is stopped (SIGKILL last)
    after."""
    local = LocalCluster(str(directory), controllers, settings=settings)
    local.format()
    try:
        yield local
    finally:
        local.stop_all(graceful_s=5)


@contextlib.contextmanager
def cluster_holding(directory, values):
    """A started 3-node cluster whose leader committed ``values``, one Produce each:
    (cluster, leader id, leader epoch)."""
    with formatted_cluster(directory) as cluster:
        cluster.start_all()
        node, _ = cluster.wait_for_leader()
        client = MetadataClient(cluster.endpoints[node], deadline_s=60)
        for value in values:
            client.produce([value], -1)
        client.close()
        node, epoch = cluster.wait_for_leader()
        yield cluster, node, epoch
