"""schemas/ holds Kafka's error table and API keys as data; here they are checked against the pinned
release itself: a small Java program (java/KafkaFacts.java, compiled now) lists ``Errors.values()`` and
``ApiKeys.values()`` from its kafka-clients jar."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from kafka_facts import ERRORS_JSON, release_facts

from kafka_jars import KAFKA, ROOT


@pytest.fixture(scope="module")
def facts():
    if shutil.which("javac") is None:
        reason = "javac is not installed (a JDK compiles the facts program)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must run the interop tests)", pytrace=False)
        pytest.skip(reason)
    return release_facts(KAFKA)


def test_the_error_table_is_the_pinned_releases_errors_enum(facts):
    document = json.loads(ERRORS_JSON.read_text(encoding="utf-8"))
    assert document["kafkaRelease"] == KAFKA
    assert len(facts.errors) > 100
    by_code = sorted(facts.errors, key=lambda error: error["code"])
    assert (
        document["errors"] == by_code
    ), "run `python tests/interop/kafka_facts.py`, then `make generate`"


def test_the_api_keys_are_the_pinned_releases_api_keys(facts):
    document = json.loads((ROOT / "schemas" / "api_keys.json").read_text(encoding="utf-8"))
    listed = {row["apiKey"]: row["name"] for row in document["apiKeys"]}
    assert len(facts.api_keys) > 90 and listed == facts.api_keys
