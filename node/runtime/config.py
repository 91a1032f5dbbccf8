"""A node's properties file, with Kafka's controller config names (docs/kraft.md §1, docs/operations.md §5).

:func:`load_config` reads ``key=value`` lines and returns a :class:`NodeConfig`; an unknown key or an
invalid value raises :class:`ConfigError` naming the key and the file, so ``kraftwire node start``
stops before it touches the disk or the network.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass, field
from typing import Callable

from kraftwire.node.core.api import Endpoint
from kraftwire.node.storage.properties import decode_properties, parse_properties

from .metadata_leadership import POLICIES
from .tls import SSL_KEYS, TlsConfigError, TlsSettings, client_context, server_context, tls_settings


class ConfigError(ValueError):
    """A setting that is unknown, missing or invalid; the message names it."""


DEFAULT_MAX_FRAME = 100 * 1024 * 1024  # socket.request.max.bytes
DEFAULT_SNAPSHOT_MAX_BYTES_BETWEEN = (
    20 * 1024 * 1024
)  # metadata.log.max.record.bytes.between.snapshots
DEFAULT_SNAPSHOT_MAX_INTERVAL_MS = 3_600_000  # metadata.log.max.snapshot.interval.ms
# Kafka's default max.connections and max.connections.per.ip (Integer.MAX_VALUE)
UNLIMITED = 2**31 - 1
# Kafka's default listener.security.protocol.map: a listener named after a protocol uses it.
_DEFAULT_PROTOCOLS = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}


@dataclass(frozen=True)
class NodeConfig:
    node_id: int
    log_dir: str
    listeners: dict[str, Endpoint]  # advertised controller listeners, the first is the default
    bind: dict[str, Endpoint] = field(
        default_factory=dict
    )  # where those listeners accept connections
    voters: dict[int, Endpoint] = field(default_factory=dict)  # controller.quorum.voters (static)
    bootstrap_servers: tuple[Endpoint, ...] = ()
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    append_linger_ms: int = 25
    fetch_max_bytes: int = 1 << 20
    fetch_snapshot_max_bytes: int = 1 << 20
    auto_join: bool = False
    # Serve client Fetches of committed records as a follower too (for reads after a ReadOffset,
    # issue #13). Off by default: Kafka's controllers answer them NOT_LEADER_OR_FOLLOWER.
    follower_fetch: bool = False
    # What a leader of a Kafka cluster's metadata log does: resign or keep (see metadata_leadership).
    metadata_leadership: str = "resign"
    segment_bytes: int = 1 << 30
    max_frame_bytes: int = DEFAULT_MAX_FRAME
    connections_max_idle_ms: int = 600_000  # Kafka's broker default, 10 minutes; -1: never
    max_connections: int = UNLIMITED
    max_connections_per_ip: int = UNLIMITED
    max_connections_per_ip_overrides: dict[str, int] = field(default_factory=dict)  # ip -> limit
    # Kafka's default -1; kraftwire then bounds partial requests by socket.request.max.bytes
    queued_max_request_bytes: int = -1
    tls: TlsSettings | None = None  # the ssl.* settings, when a controller listener uses SSL
    ssl_listeners: frozenset[str] = frozenset()  # controller listeners mapped to SSL
    source: str = "<config>"
    # -- Kafka interop (issue 25) -------------------------------------------------------------------
    # The file's settings as written (DescribeConfigs lists them as STATIC_BROKER_CONFIG).
    properties: tuple[tuple[str, str], ...] = ()
    # Snapshots of a node without an application (see snapshotting.py), on Kafka's triggers; each
    # trigger is on only when set (Kafka's defaults, 20 MiB and 1 hour, are not applied: see there).
    snapshot_max_bytes_between: int | None = None
    snapshot_max_interval_ms: int | None = None

    @property
    def listener_name(self) -> str:
        return next(iter(self.listeners))

    @property
    def peer_tls(self) -> bool:
        """Whether this node dials its peers with TLS: its first controller listener uses SSL, as
        Kafka's controllers connect through the first of controller.listener.names."""
        return self.listener_name in self.ssl_listeners

    @property
    def partial_request_bytes(self) -> int:
        """The bound on bytes held in requests still arriving, all connections together:
        queued.max.request.bytes, or socket.request.max.bytes when that is -1 (Kafka's default, which
        Kafka leaves unbounded)."""
        if self.queued_max_request_bytes > 0:
            return self.queued_max_request_bytes
        return self.max_frame_bytes


def _int(low: int, high: int = 2**31 - 1) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"{value} is outside {low}..{high}")
        return value

    return parse


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.strip() not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return text.strip()

    return parse


def _minus_one_or(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value != -1 and value < low:
            raise ValueError(f"{value} is neither -1 nor at least {low}")
        return value

    return parse


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``host:count,ip:count`` (max.connections.per.ip.overrides); hostnames resolved now."""
    overrides: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.isdigit():
            raise ValueError(f"{item!r} is not HOST:COUNT")
        host = host.strip("[]")
        try:
            address = str(ipaddress.ip_address(host))
        except ValueError:
            try:
                address = socket.gethostbyname(host)
            except OSError:
                raise ValueError(f"cannot resolve {host!r}") from None
        overrides[address] = int(count)
    return overrides


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(f"{text!r} is not true or false")
    return text.lower() == "true"


def parse_endpoint(text: str) -> Endpoint:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return Endpoint(host.strip("[]"), int(port))


def parse_endpoints(text: str) -> list[Endpoint]:
    """``HOST:PORT[,HOST:PORT...]``, as Kafka's tools take ``--bootstrap-controller``; empty items are
    skipped, as Kafka's client skips them in ``bootstrap.servers``."""
    endpoints = [parse_endpoint(item) for item in text.split(",") if item.strip()]
    if not endpoints:
        raise ValueError(f"{text!r} names no HOST:PORT")
    return endpoints


def parse_voters(text: str) -> dict[int, Endpoint]:
    voters: dict[int, Endpoint] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        node, sep, address = item.partition("@")
        if not sep or not node.isdigit():
            raise ValueError(f"{item!r} is not ID@HOST:PORT")
        voters[int(node)] = parse_endpoint(address)
    return voters


def parse_listeners(text: str) -> dict[str, Endpoint]:
    listeners: dict[str, Endpoint] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, address = item.partition("://")
        if not sep or not name:
            raise ValueError(f"{item!r} is not NAME://HOST:PORT")
        listeners[name] = parse_endpoint(address)
    return listeners


# Kafka name -> (NodeConfig field or None for a checked-only key, parser)
_SETTINGS: dict[str, tuple[str | None, Callable[[str], object]]] = {
    "node.id": ("node_id", _int(0)),
    "process.roles": (None, str),
    "listeners": (None, parse_listeners),
    "advertised.listeners": (None, parse_listeners),
    "controller.listener.names": (None, str),
    "listener.security.protocol.map": (None, str),
    "controller.quorum.voters": ("voters", parse_voters),
    "controller.quorum.bootstrap.servers": (
        "bootstrap_servers",
        lambda t: tuple(parse_endpoint(p) for p in t.split(",") if p.strip()),
    ),
    "metadata.log.dir": ("log_dir", str),
    "log.dirs": (None, str),
    "controller.quorum.election.timeout.ms": ("election_timeout_ms", _int(1)),
    "controller.quorum.fetch.timeout.ms": ("fetch_timeout_ms", _int(1)),
    "controller.quorum.election.backoff.max.ms": ("election_backoff_max_ms", _int(0)),
    "controller.quorum.request.timeout.ms": ("request_timeout_ms", _int(1)),
    "controller.quorum.retry.backoff.ms": ("retry_backoff_ms", _int(0)),
    "controller.quorum.append.linger.ms": ("append_linger_ms", _int(0)),
    "controller.quorum.fetch.max.bytes": ("fetch_max_bytes", _int(1)),
    "controller.quorum.fetch.snapshot.max.bytes": ("fetch_snapshot_max_bytes", _int(1)),
    "controller.quorum.auto.join.enable": ("auto_join", _bool),
    "kraftwire.follower.fetch.enable": ("follower_fetch", _bool),
    "kraftwire.metadata.leadership": ("metadata_leadership", _choice(POLICIES)),
    "metadata.log.segment.bytes": ("segment_bytes", _int(1024)),
    "socket.request.max.bytes": ("max_frame_bytes", _int(1024)),
    # -- Kafka interop (issue 25)
    "metadata.log.max.record.bytes.between.snapshots": (
        "snapshot_max_bytes_between",
        _int(1, 2**63 - 1),
    ),
    "metadata.log.max.snapshot.interval.ms": ("snapshot_max_interval_ms", _int(0, 2**63 - 1)),
    "connections.max.idle.ms": ("connections_max_idle_ms", _minus_one_or(1)),
    "max.connections": ("max_connections", _int(0)),
    "max.connections.per.ip": ("max_connections_per_ip", _int(0)),
    "max.connections.per.ip.overrides": ("max_connections_per_ip_overrides", parse_ip_overrides),
    "queued.max.request.bytes": ("queued_max_request_bytes", _minus_one_or(1)),
    # read by the tools that take this file as --command-config; the node's listeners use the map
    "security.protocol": (None, str),
    **{key: (None, str) for key in SSL_KEYS},
}


def load_config(path: str) -> NodeConfig:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        props = parse_properties(decode_properties(data, path), path)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return config_from_properties(props, path)


def config_from_properties(props: dict[str, str], source: str = "<config>") -> NodeConfig:
    values: dict[str, object] = {}
    checked: dict[str, object] = {}
    for key, text in props.items():
        if key not in _SETTINGS:
            raise ConfigError(f"{source}: unknown setting {key!r}")
        name, parse = _SETTINGS[key]
        text = text.strip()  # as Kafka's ConfigDef trims every value it parses (none is a password)
        try:
            parsed = parse(text)
        except ValueError as exc:
            raise ConfigError(f"{source}: invalid {key}={text!r}: {exc}") from None
        if name is None:
            checked[key] = parsed
        else:
            values[name] = parsed
    values["properties"] = tuple(props.items())
    return _assemble(values, checked, source)


def _require(ok: bool, source: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"{source}: {message}")


def _assemble(values: dict[str, object], checked: dict[str, object], source: str) -> NodeConfig:
    _require("node_id" in values, source, "node.id is required")
    _require(
        checked.get("process.roles") == "controller",
        source,
        "process.roles must be 'controller' (this node implements the KRaft controller quorum only)",
    )
    if "log_dir" not in values and "log.dirs" in checked:
        values["log_dir"] = str(checked["log.dirs"]).split(",")[0].strip()
    _require(bool(values.get("log_dir")), source, "metadata.log.dir (or log.dirs) is required")
    _require("listeners" in checked, source, "listeners is required")
    names = [
        n.strip() for n in str(checked.get("controller.listener.names", "")).split(",") if n.strip()
    ]
    _require(bool(names), source, "controller.listener.names is required")
    bound: dict[str, Endpoint] = checked["listeners"]  # type: ignore[assignment]
    advertised: dict[str, Endpoint] = checked.get("advertised.listeners", {})  # type: ignore[assignment]
    for name in names:
        _require(
            name in bound,
            source,
            f"controller.listener.names names {name!r}, which is not in listeners",
        )
    ssl_listeners = _ssl_listeners(checked, names, source)
    if ssl_listeners:
        values["ssl_listeners"] = ssl_listeners
        values["tls"] = _tls(checked, source)
    values["listeners"] = {name: advertised.get(name, bound[name]) for name in names}
    values["bind"] = {name: bound[name] for name in names}
    _require(
        bool(values.get("voters")) != bool(values.get("bootstrap_servers")),
        source,
        "set exactly one of controller.quorum.voters and controller.quorum.bootstrap.servers",
    )
    values["log_dir"] = os.path.abspath(str(values["log_dir"]))
    return NodeConfig(source=source, **values)  # type: ignore[arg-type]


def _ssl_listeners(checked: dict[str, object], names: list[str], source: str) -> frozenset[str]:
    """The controller listeners listener.security.protocol.map (or Kafka's default map) puts on SSL;
    an unmapped listener stays PLAINTEXT, as kraftwire has always read it."""
    protocols = dict(_DEFAULT_PROTOCOLS)
    text = str(checked.get("listener.security.protocol.map", ""))
    for item in filter(None, (p.strip() for p in text.split(","))):
        listener, _, protocol = item.partition(":")
        protocols[listener.strip()] = protocol.strip().upper()
    for name in names:
        _require(
            protocols.get(name, "PLAINTEXT") in ("PLAINTEXT", "SSL"),
            source,
            f"listener.security.protocol.map: {name} uses {protocols.get(name)};"
            " kraftwire supports PLAINTEXT and SSL",
        )
    return frozenset(n for n in names if protocols.get(n) == "SSL")


def _tls(checked: dict[str, object], source: str) -> TlsSettings:
    """The ssl.* settings, loaded once now so that a missing file or a key that does not match its
    certificate stops the node at start with one line."""
    props = {k: str(v) for k, v in checked.items() if k in SSL_KEYS}
    try:
        settings = tls_settings(props, source)
        server_context(settings)
        client_context(settings)
    except TlsConfigError as exc:
        message = str(exc)
        raise ConfigError(
            message if message.startswith(source) else f"{source}: {message}"
        ) from None
    return settings
