"""DescribeConfigs on a controller, answered as Kafka 4.4.0's controller answered the same requests
(observed by sending them to a Kafka 4.4.0 controller with kraftwire's codec): the node's settings
under Kafka's names with STATIC_BROKER_CONFIG / DEFAULT_CONFIG sources and synonyms, and Kafka's
errors and messages for other brokers, bad names, topics and unknown resource types."""

from __future__ import annotations

import pytest

from kraftwire.generated import describe_configs_request as _rq
from kraftwire.node.runtime import describe_configs as dc
from kraftwire.node.runtime.client import KafkaConnection
from kraftwire.node.runtime.config import config_from_properties
from runtime_settings import formatted_cluster

PROPERTIES = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.bootstrap.servers": "127.0.0.1:9093",
    "log.dirs": "/tmp/kraftwire-describe-configs",
    "controller.quorum.election.timeout.ms": "1500",
}


def ask(kind: int, name: str, keys=None, synonyms=True, version=4, properties=PROPERTIES):
    request = _rq.DescribeConfigsRequest(
        resources=[
            _rq.DescribeConfigsResource(
                resource_type=kind, resource_name=name, configuration_keys=keys
            )
        ],
        include_synonyms=synonyms,
    )
    config = config_from_properties(dict(properties))
    (result,) = dc.describe_configs_response(version, request, config).results
    return result


def entries(result):
    return {
        c.name: (c.value, c.config_source, [(s.value, s.source) for s in c.synonyms], c.config_type)
        for c in result.configs
    }


def test_the_node_lists_its_settings_with_kafkas_sources_and_synonyms() -> None:
    result = ask(dc.BROKER, "1")
    assert (result.error_code, result.error_message) == (0, "")
    got = entries(result)
    assert got["node.id"] == ("1", 4, [("1", 4)], dc.INT)  # set, no default: itself only
    assert got["controller.quorum.election.timeout.ms"] == (
        "1500",
        4,
        [("1500", 4), ("1000", 5)],
        3,
    )
    assert got["controller.quorum.fetch.timeout.ms"] == ("2000", 5, [("2000", 5)], 3)
    assert got["controller.quorum.voters"] == ("", 5, [("", 5)], dc.LIST)
    assert got["metadata.log.dir"] == (None, 5, [], dc.STRING)  # unset, no default
    # kraftwire writes snapshots only when told to (snapshotting.py): no default, unlike Kafka's.
    assert got["metadata.log.max.record.bytes.between.snapshots"] == (None, 5, [], dc.LONG)
    assert got["metadata.log.max.snapshot.interval.ms"] == (None, 5, [], dc.LONG)
    assert all(c.read_only and c.is_sensitive == (c.name in dc.SENSITIVE) for c in result.configs)
    assert all(c.value is None for c in result.configs if c.is_sensitive)


def test_keys_filter_synonyms_and_older_versions() -> None:
    result = ask(dc.BROKER, "01", keys=["node.id", "nonexistent", "controller.quorum.voters"])
    assert {c.name for c in result.configs} == {"controller.quorum.voters", "node.id"}
    (only,) = ask(dc.BROKER, "+1", keys=["node.id"], synonyms=False).configs
    assert only.synonyms == []
    (old,) = ask(dc.BROKER, "1", keys=["node.id"], version=2).configs
    assert old.config_type == 0  # ConfigType is v3+


@pytest.mark.parametrize(
    ("kind", "name", "error", "message"),
    [
        (dc.BROKER, "", 0, ""),  # the cluster default: no dynamic configuration, no entries
        (dc.BROKER, "2", 42, "Unexpected broker id, expected 1 or empty string, but received 2"),
        (dc.BROKER, "abc", 42, "Broker id must be an integer, but it is: abc"),
        (dc.BROKER, " 1", 42, "Broker id must be an integer, but it is:  1"),
        (dc.BROKER, "99999999999", 42, "Broker id must be an integer, but it is: 99999999999"),
        (dc.TOPIC, "foo", 3, ""),
        (dc.TOPIC, "", 17, "Topic name is invalid: the empty string is not allowed"),
        (dc.TOPIC, ".", 17, "Topic name is invalid: '.' is not allowed"),
        (
            dc.TOPIC,
            "a/b",
            17,
            "Topic name is invalid: 'a/b' contains one or more characters other than ASCII"
            " alphanumerics, '.', '_' and '-'",
        ),
        (
            dc.TOPIC,
            "x" * 250,
            17,
            f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed"
            " length 249",
        ),
        (0, "1", 42, dc.INVALID_REQUEST_MESSAGE),
        (3, "1", 42, dc.INVALID_REQUEST_MESSAGE),
        (-1, "1", 42, dc.INVALID_REQUEST_MESSAGE),
        (dc.BROKER_LOGGER, "1", 42, "kraftwire keeps no BROKER_LOGGER configuration"),
    ],
)
def test_refusals_carry_kafkas_errors_and_messages(kind, name, error, message) -> None:
    result = ask(kind, name)
    assert (result.error_code, result.error_message, result.configs) == (error, message, [])
    assert (result.resource_type, result.resource_name) == (kind, name)


def test_every_listed_key_is_a_setting_the_node_reads_and_every_setting_is_listed() -> None:
    from kraftwire.node.runtime.config import _SETTINGS

    # security.protocol is read from the tools' --command-config files; no Kafka server lists it.
    assert set(dc.SETTINGS) == set(_SETTINGS) - {"security.protocol"}


@pytest.mark.timeout(120)
def test_a_running_node_serves_describe_configs_at_versions_1_to_4(tmp_path) -> None:
    with formatted_cluster(tmp_path / "c", controllers=1) as cluster:
        cluster.start_all()
        node, _ = cluster.wait_for_leader()
        endpoint = cluster.endpoints[node]
        with KafkaConnection(endpoint.host, endpoint.port) as connection:
            assert connection.versions[dc.DESCRIBE_CONFIGS] == (1, 4)
            request = _rq.DescribeConfigsRequest(
                resources=[
                    _rq.DescribeConfigsResource(
                        resource_type=dc.BROKER, resource_name=str(node), configuration_keys=None
                    ),
                    _rq.DescribeConfigsResource(
                        resource_type=dc.TOPIC, resource_name="t", configuration_keys=None
                    ),
                ],
                include_synonyms=True,
            )
            for version in (1, 4):
                broker, topic = connection.call(request, version).results
                static = {c.name: c.value for c in broker.configs if c.config_source == 4}
                assert static["node.id"] == str(node)
                assert static["controller.quorum.election.timeout.ms"] == "500"
                assert (topic.error_code, topic.resource_name) == (3, "t")
