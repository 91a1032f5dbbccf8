"""A node's properties file, with Kafka's controller config names (kraft-node.md §1, kraft-operations.md).

:func:`load_config` reads ``key=value`` lines and returns a :class:`NodeConfig`; an unknown key or an
invalid value raises :class:`ConfigError` naming the key and the file, so ``kraftwire node start``
stops before it touches the disk or the network.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from kraftwire.node.core.api import Endpoint
from kraftwire.node.storage.layout import parse_properties


class ConfigError(ValueError):
    """A setting that is unknown, missing or invalid; the message names it."""


DEFAULT_MAX_FRAME = 100 * 1024 * 1024  # socket.request.max.bytes


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
    segment_bytes: int = 1 << 30
    max_frame_bytes: int = DEFAULT_MAX_FRAME
    source: str = "<config>"

    @property
    def listener_name(self) -> str:
        return next(iter(self.listeners))


def _int(low: int, high: int = 2**31 - 1) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"{value} is outside {low}..{high}")
        return value

    return parse


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
    "metadata.log.segment.bytes": ("segment_bytes", _int(1024)),
    "socket.request.max.bytes": ("max_frame_bytes", _int(1024)),
}


def load_config(path: str) -> NodeConfig:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        props = parse_properties(text, path)
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
        try:
            parsed = parse(text)
        except ValueError as exc:
            raise ConfigError(f"{source}: invalid {key}={text!r}: {exc}") from None
        if name is None:
            checked[key] = parsed
        else:
            values[name] = parsed
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
    protocols = str(checked.get("listener.security.protocol.map", ""))
    for item in filter(None, (p.strip() for p in protocols.split(","))):
        listener, _, protocol = item.partition(":")
        _require(
            protocol == "PLAINTEXT" or listener not in names,
            source,
            f"listener.security.protocol.map: {listener} uses {protocol}; only PLAINTEXT is supported",
        )
    values["listeners"] = {name: advertised.get(name, bound[name]) for name in names}
    values["bind"] = {name: bound[name] for name in names}
    _require(
        bool(values.get("voters")) != bool(values.get("bootstrap_servers")),
        source,
        "set exactly one of controller.quorum.voters and controller.quorum.bootstrap.servers",
    )
    values["log_dir"] = os.path.abspath(str(values["log_dir"]))
    return NodeConfig(source=source, **values)  # type: ignore[arg-type]
