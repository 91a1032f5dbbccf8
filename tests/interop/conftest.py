"""The interop tests run Apache Kafka's released jars (``make kafka``). On a user's machine without Java
or the jars they skip with one line; in CI (``CI=true``) a missing piece fails them instead."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_jars import KAFKA, KAFKA_OLD, missing  # noqa: E402


def require_kafka(version: str = KAFKA) -> None:
    reason = missing(version)
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run the interop tests)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _kafka_jars(request):
    require_kafka(KAFKA_OLD if "old_release" in request.keywords else KAFKA)


def pytest_configure(config):
    config.addinivalue_line("markers", "old_release: runs against the pinned 4.0.x release")
