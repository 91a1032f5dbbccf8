"""DescribeConfigs (apiKey 32) on the controller listener, answered as Kafka 4.4.0's controller answers
(``kafka-configs --bootstrap-controller ... --describe --entity-type brokers``).

A BROKER resource named by this node's id lists the settings kraftwire reads, under Kafka's names:
a value from the properties file has source STATIC_BROKER_CONFIG (4), any other DEFAULT_CONFIG (5)
with kraftwire's default; with IncludeSynonyms a static value lists itself and then the default, as
Kafka's does. The empty name (the cluster-wide default) has no dynamic configuration here: no
entries. Another broker id, a name that is no integer, an invalid topic name and an unknown resource
type get the error and message Kafka's controller gives them; a valid topic name is
UNKNOWN_TOPIC_OR_PARTITION (a kraftwire quorum has no topics). BROKER_LOGGER, CLIENT_METRICS and GROUP
resources, which Kafka's controller serves from its broker code, are INVALID_REQUEST with a message.
Every value is read-only (kraftwire changes none at run time); Kafka's PASSWORD settings (the ssl
passwords and inline PEM keys and certificates) are described as sensitive, with no value.
"""

from __future__ import annotations

import re
from typing import Any

from kraftwire.generated import describe_configs_response as _dc
from kraftwire.generated import errors
from kraftwire.generated.errors import (
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    UNKNOWN_TOPIC_OR_PARTITION,
)

from .config import NodeConfig
from .tls import SSL_KEYS

DESCRIBE_CONFIGS = _dc.DescribeConfigsResponse.API_KEY
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
BOOLEAN, STRING, INT, LONG, LIST, PASSWORD = 1, 2, 3, 5, 7, 9
# Kafka's PASSWORD settings: described with no value and marked sensitive, as Kafka describes them.
SENSITIVE = frozenset(
    (
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
    )
)
INVALID_REQUEST_MESSAGE = errors.message(INVALID_REQUEST)
_NOT_KEPT = {BROKER_LOGGER: "BROKER_LOGGER", CLIENT_METRICS: "CLIENT_METRICS", GROUP: "GROUP"}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME = 249

# Kafka name -> (Kafka's ConfigType, the NodeConfig field its default comes from; None: no default).
SETTINGS: dict[str, tuple[int, str | None]] = {
    "node.id": (INT, None),
    "process.roles": (LIST, None),
    "listeners": (LIST, None),
    "advertised.listeners": (LIST, None),
    "controller.listener.names": (LIST, None),
    "listener.security.protocol.map": (STRING, None),
    "controller.quorum.voters": (LIST, "voters"),
    "controller.quorum.bootstrap.servers": (LIST, "bootstrap_servers"),
    "metadata.log.dir": (STRING, None),
    "log.dirs": (LIST, None),
    "controller.quorum.election.timeout.ms": (INT, "election_timeout_ms"),
    "controller.quorum.fetch.timeout.ms": (INT, "fetch_timeout_ms"),
    "controller.quorum.election.backoff.max.ms": (INT, "election_backoff_max_ms"),
    "controller.quorum.request.timeout.ms": (INT, "request_timeout_ms"),
    "controller.quorum.retry.backoff.ms": (INT, "retry_backoff_ms"),
    "controller.quorum.append.linger.ms": (INT, "append_linger_ms"),
    "controller.quorum.fetch.max.bytes": (INT, "fetch_max_bytes"),
    "controller.quorum.fetch.snapshot.max.bytes": (INT, "fetch_snapshot_max_bytes"),
    "controller.quorum.auto.join.enable": (BOOLEAN, "auto_join"),
    "kraftwire.follower.fetch.enable": (BOOLEAN, "follower_fetch"),
    "metadata.log.segment.bytes": (INT, "segment_bytes"),
    "socket.request.max.bytes": (INT, "max_frame_bytes"),
    "kraftwire.metadata.leadership": (STRING, "metadata_leadership"),
    "connections.max.idle.ms": (LONG, "connections_max_idle_ms"),
    "max.connections": (INT, "max_connections"),
    "max.connections.per.ip": (INT, "max_connections_per_ip"),
    "max.connections.per.ip.overrides": (STRING, None),
    "queued.max.request.bytes": (LONG, "queued_max_request_bytes"),
    **{key: (PASSWORD if key in SENSITIVE else STRING, None) for key in SSL_KEYS},
    "metadata.log.max.record.bytes.between.snapshots": (LONG, "snapshot_max_bytes_between"),
    "metadata.log.max.snapshot.interval.ms": (LONG, "snapshot_max_interval_ms"),
}


# Defaults of settings kraftwire reads but keeps no field for, as Kafka 4.4.0 lists them.
KAFKA_DEFAULTS = {
    "listener.security.protocol.map": (
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
    ),
    "max.connections.per.ip.overrides": "",
    "ssl.keystore.type": "JKS",
    "ssl.truststore.type": "JKS",
    "ssl.client.auth": "none",
    "ssl.endpoint.identification.algorithm": "https",
}


def _render(value: Any) -> str:
    """A default as Kafka prints one: ``true``/``false``, numbers, and "" for an empty list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, tuple, list)) and not value:
        return ""
    return str(value)


def defaults() -> dict[str, str | None]:
    """Every listed key's default value (None: kraftwire has none)."""
    unset = NodeConfig(node_id=0, log_dir="", listeners={})  # every optional field at its default
    values = {
        key: KAFKA_DEFAULTS.get(key) if name is None else getattr(unset, name)
        for key, (_, name) in SETTINGS.items()
    }
    return {key: None if value is None else _render(value) for key, value in values.items()}


def describe_configs_response(version: int, request: Any, config: NodeConfig) -> Any:
    results = [
        _result(version, resource, config, request.include_synonyms)
        for resource in request.resources
    ]
    return _dc.DescribeConfigsResponse(results=results)


def _result(version: int, resource: Any, config: NodeConfig, synonyms: bool) -> Any:
    kind, name = resource.resource_type, resource.resource_name
    error, message = _refusal(kind, name, config.node_id)
    result = _dc.DescribeConfigsResult(
        error_code=error, error_message=message, resource_type=kind, resource_name=name
    )
    if error == NONE and name != "":
        result.configs = _broker_configs(version, config, resource.configuration_keys, synonyms)
    return result


def _refusal(kind: int, name: str, node_id: int) -> tuple[int, str]:
    """(error, message) for a resource; (NONE, "") for one this node describes."""
    if kind == BROKER:
        if name == "":
            return NONE, ""
        if not _INTEGER.fullmatch(name) or not -(2**31) <= int(name) < 2**31:
            return INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        if int(name) != node_id:
            return (
                INVALID_REQUEST,
                f"Unexpected broker id, expected {node_id} or empty string, but received {name}",
            )
        return NONE, ""
    if kind == TOPIC:
        invalid = _invalid_topic(name)
        if invalid is not None:
            return INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {invalid}"
        return UNKNOWN_TOPIC_OR_PARTITION, ""
    if kind in _NOT_KEPT:
        return INVALID_REQUEST, f"kraftwire keeps no {_NOT_KEPT[kind]} configuration"
    return INVALID_REQUEST, INVALID_REQUEST_MESSAGE


def _invalid_topic(name: str) -> str | None:
    if name == "":
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME:
        return f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME}"
    if not _TOPIC_CHARS.fullmatch(name) or not name.isascii():
        return (
            f"'{name}' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"
        )
    return None


def _broker_configs(
    version: int, config: NodeConfig, keys: list[str] | None, synonyms: bool
) -> list[Any]:
    static = dict(config.properties)
    default = defaults()
    wanted = SETTINGS if keys is None else [k for k in SETTINGS if k in set(keys)]
    out = []
    for key in wanted:
        kind, _ = SETTINGS[key]
        chain: list[tuple[str, int]] = (
            [(static[key], STATIC_BROKER_CONFIG)] if key in static else []
        )
        fallback = default[key]
        if fallback is not None:
            chain.append((fallback, DEFAULT_CONFIG))
        sensitive = key in SENSITIVE
        value: str | None = chain[0][0] if chain and not sensitive else None
        source = chain[0][1] if chain else DEFAULT_CONFIG
        entry = _dc.DescribeConfigsResourceResult(
            name=key, value=value, read_only=True, config_source=source, is_sensitive=sensitive
        )
        if synonyms:
            entry.synonyms = [
                _dc.DescribeConfigsSynonym(name=key, value=None if sensitive else v, source=s)
                for v, s in chain
            ]
        if version >= 3:
            entry.config_type = kind
        out.append(entry)
    return out
