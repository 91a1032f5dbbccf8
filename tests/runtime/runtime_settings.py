"""Node timers for the runtime tests (a module of its own: every test directory has a ``conftest``,
so importing from one by name is ambiguous in a whole-suite run)."""

# Timers a shared 2-core machine can keep: fast enough for tests, slow enough to avoid churn.
TEST_SETTINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "controller.quorum.request.timeout.ms": 1000,
}

# The same, with followers serving client Fetches of committed records (reads after ReadOffset).
FOLLOWER_READ_SETTINGS = {**TEST_SETTINGS, "kraftwire.follower.fetch.enable": "true"}
