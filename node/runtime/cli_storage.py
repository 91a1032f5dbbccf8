"""``kraftwire storage format`` and ``kraftwire storage random-uuid`` (Kafka's kafka-storage.sh)."""

from __future__ import annotations

import argparse
import sys
import uuid

from kraftwire.node.core.api import Endpoint, ReplicaKey, VoterSpec
from kraftwire.node.storage import (
    StorageError,
    format_directory,
    random_uuid,
    uuid_from_str,
    uuid_to_str,
)
from kraftwire.node.storage.kafka_metadata import feature_level_record

from .config import ConfigError, NodeConfig, load_config, parse_endpoint


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub.add_parser("random-uuid", help="print a new random cluster or directory id")
    fmt = sub.add_parser("format", help="format a node's metadata.log.dir")
    fmt.add_argument("--config", "-c", required=True, help="the node's properties file")
    fmt.add_argument("--cluster-id", "-t", required=True, help="cluster id (see random-uuid)")
    fmt.add_argument(
        "--feature",
        "-f",
        action="append",
        default=[],
        metavar="NAME=LEVEL",
        help="write Kafka's FeatureLevelRecord NAME=LEVEL into the bootstrap checkpoint, as Kafka's"
        " StorageTool does (e.g. metadata.version=33 makes the log a Kafka metadata log)",
    )
    quorum = fmt.add_mutually_exclusive_group()
    quorum.add_argument(
        "--standalone", "-s", action="store_true", help="a dynamic quorum of this node alone"
    )
    quorum.add_argument(
        "--initial-controllers", "-I", help="ID@HOST:PORT:DIRECTORYID,... of the first voters"
    )
    quorum.add_argument(
        "--no-initial-controllers",
        "-N",
        action="store_true",
        help="join an existing dynamic quorum later (as an observer)",
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "random-uuid":
        print(uuid_to_str(random_uuid()))
        return 0
    try:
        config = load_config(args.config)
        uuid_from_str(args.cluster_id)
        kraft_version, voters, directory = _quorum(args, config)
        features = [_feature(text) for text in args.feature]
        meta = format_directory(
            config.log_dir,
            args.cluster_id,
            config.node_id,
            kraft_version,
            voters,
            directory,
            data_records=features,
        )
    except (ConfigError, StorageError) as exc:
        print(f"kraftwire storage format: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"kraftwire storage format: {exc}", file=sys.stderr)
        return 2
    print(
        f"Formatted {config.log_dir} for node {meta.node_id} (cluster {meta.cluster_id}, "
        f"directory {uuid_to_str(meta.directory_id)}, kraft.version {kraft_version})"
    )
    return 0


def _quorum(
    args: argparse.Namespace, config: NodeConfig
) -> tuple[int, list[VoterSpec], uuid.UUID | None]:
    """(kraft.version, bootstrap voters, this node's directory id or None for a random one)."""
    if config.voters:
        if args.standalone or args.initial_controllers or args.no_initial_controllers:
            raise ValueError(
                "--standalone/--initial-controllers/--no-initial-controllers need "
                "controller.quorum.bootstrap.servers, not controller.quorum.voters"
            )
        return 0, [], None
    if args.standalone:
        directory = random_uuid()
        me = VoterSpec(ReplicaKey(config.node_id, directory), dict(config.listeners))
        return 1, [me], directory
    if args.initial_controllers:
        voters = parse_initial_controllers(args.initial_controllers, config.listener_name)
        mine = [v for v in voters if v.key.id == config.node_id]
        return 1, voters, mine[0].key.directory_id if mine else None
    if args.no_initial_controllers:
        return 1, [], None
    raise ValueError(
        "a dynamic quorum (controller.quorum.bootstrap.servers) needs --standalone, "
        "--initial-controllers or --no-initial-controllers"
    )


def _feature(text: str) -> bytes:
    name, sep, level = text.partition("=")
    if not sep or not name or not level.strip().isdigit():
        raise ValueError(f"--feature: {text!r} is not NAME=LEVEL")
    if name == "kraft.version":
        raise ValueError("--feature: kraft.version follows from the quorum options, not --feature")
    return feature_level_record(name, int(level))


def parse_initial_controllers(text: str, listener: str) -> list[VoterSpec]:
    voters = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        node, sep, rest = item.partition("@")
        address, _, directory = rest.rpartition(":")
        if not sep or not node.isdigit() or not address:
            raise ValueError(f"--initial-controllers: {item!r} is not ID@HOST:PORT:DIRECTORYID")
        endpoint: Endpoint = parse_endpoint(address)
        voters.append(
            VoterSpec(ReplicaKey(int(node), uuid_from_str(directory)), {listener: endpoint})
        )
    if len({v.key.id for v in voters}) != len(voters):
        raise ValueError("--initial-controllers names a node id twice")
    return voters
