"""``kraftwire quorum describe --bootstrap-controller HOST:PORT (--status | --replication) [--json]``,
printing what ``kafka-metadata-quorum.sh`` prints (docs/operations.md §2), and ``add-controller`` /
``remove-controller``.

The output was compared line by line with Kafka's own ``MetadataQuorumCommand`` run against the same
kraftwire quorum: the labels and their padding, the voter and observer lists (``"directoryId": null``
for a replica without a directory id, endpoints for any replica the leader knows them for), the
replication table and the add/remove messages are Kafka's. Kafka's argument order (connection options
before the action: ``quorum --bootstrap-controller H:P describe --status``) is accepted as well as ours.

Like Kafka's admin client it asks a bootstrap controller DescribeCluster (endpoint type controller),
then sends DescribeQuorum, AddRaftVoter or RemoveRaftVoter to the leader named there (:mod:`.admin`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kraftwire.node.core.api import Endpoint
from kraftwire.node.storage.layout import uuid_to_str

from . import admin, recovery_notice
from .admin import describe_quorum, first_answer
from .client import ClientError
from .command_config import CommandConfigError, add_command_config, apply_command_config
from .config import parse_endpoints

NO_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's Uuid.ZERO_UUID as text
DEFAULT_TIMEOUT_MS = 60_000

Answer = TypeVar("Answer")


class RelativeTimeError(ValueError):
    """A timestamp ``--human-readable`` cannot show as "N ms ago" (in the future, or not after 1970)."""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    _connection_options(parser)
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = sub.add_parser(
        "add-controller", help="make a running observer controller a voter (AddRaftVoter)"
    )
    add.add_argument("--dry-run", action="store_true", help="check and print, change nothing")
    _connection_options(add)
    remove = sub.add_parser("remove-controller", help="remove a voter (RemoveRaftVoter)")
    remove.add_argument("--controller-id", "-i", type=int, required=True)
    remove.add_argument("--controller-directory-id", "-d", required=True)
    remove.add_argument("--dry-run", action="store_true", help="check and print, change nothing")
    _connection_options(remove)
    describe = sub.add_parser(
        "describe", help="describe the quorum (like kafka-metadata-quorum.sh describe)"
    )
    what = describe.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="leader, epoch, high watermark, voters")
    what.add_argument("--replication", action="store_true", help="per replica progress")
    describe.add_argument(
        "--human-readable",
        action="store_true",
        help="with --replication: timestamps as 'N ms ago'",
    )
    describe.add_argument("--json", action="store_true", help="print JSON instead of text")
    describe.add_argument(
        "--timeout-ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        help="how long to keep asking while there is no leader to answer (default %(default)s,"
        " Kafka's default.api.timeout.ms)",
    )
    _connection_options(describe)


def _connection_options(parser: argparse.ArgumentParser) -> None:
    """Options taken before or after the action; SUPPRESS keeps an action's parser from resetting a
    value given before it."""
    parser.add_argument(
        "--bootstrap-controller",
        default=argparse.SUPPRESS,
        help="HOST:PORT[,HOST:PORT...] of controllers to ask, in turn",
    )
    add_command_config(
        parser,
        "--config",
        "-c",
        default=argparse.SUPPRESS,
        help="client settings (security.protocol, ssl.*); for add-controller also the new"
        " controller's properties file, as Kafka's tool reads it",
    )


def run(args: argparse.Namespace) -> int:
    try:
        bootstrap = _bootstrap_endpoints(args)
        _check_usage(args)
        apply_command_config(getattr(args, "command_config", None))
    except (admin.UsageError, CommandConfigError) as exc:
        print(f"kraftwire quorum {args.action}: {exc}", file=sys.stderr)
        return 2
    try:
        if args.action == "add-controller":
            print(admin.add_controller(bootstrap, args.command_config, args.dry_run))
        elif args.action == "remove-controller":
            print(
                admin.remove_controller(
                    bootstrap, args.controller_id, args.controller_directory_id, args.dry_run
                )
            )
        else:
            described = until_a_leader_answers(
                lambda: first_answer(bootstrap, lambda e: describe_quorum(e.host, e.port)),
                args.timeout_ms,
            )
            print(describe_text(args, *described))
    except admin.UsageError as exc:
        print(f"kraftwire quorum {args.action}: {exc}", file=sys.stderr)
        return 2
    except (ClientError, RelativeTimeError) as exc:
        print(f"kraftwire quorum {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0


def _bootstrap_endpoints(args: argparse.Namespace) -> list[Endpoint]:
    text = getattr(args, "bootstrap_controller", None)
    if text is None:
        raise admin.UsageError("--bootstrap-controller HOST:PORT is required")
    try:
        return parse_endpoints(text)
    except ValueError as exc:
        raise admin.UsageError(f"--bootstrap-controller: {exc}") from None


def _check_usage(args: argparse.Namespace) -> None:
    has_config = hasattr(args, "command_config")
    if args.action == "add-controller" and not has_config:
        raise admin.UsageError(
            "add-controller needs the new controller's properties file (--config FILE)"
        )
    if args.action == "describe" and args.timeout_ms < 0:
        raise admin.UsageError(f"--timeout-ms must not be negative, not {args.timeout_ms}")
    if args.action == "describe" and args.human_readable and not args.replication:
        raise admin.UsageError(
            "The option --human-readable is only supported along with --replication"
        )


def until_a_leader_answers(
    ask: Callable[[], Answer],
    timeout_ms: int,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Answer:
    """``ask()`` again, with a growing pause, while it fails with NoLeaderYet (an election, a leader
    just killed) and ``timeout_ms`` has not passed: Kafka's tool waits in the same case. Any other
    failure, and the last NoLeaderYet once the time is up, is raised."""
    deadline = clock() + timeout_ms / 1000
    pause = 0.05
    while True:
        try:
            return ask()
        except admin.NoLeaderYet as exc:
            if clock() + pause > deadline:
                raise ClientError(f"{exc} (still so after {timeout_ms} ms)") from None
        sleep(pause)
        pause = min(2 * pause, 1.0)


def describe_text(args: argparse.Namespace, cluster_id: str, quorum: Any) -> str:
    """Kafka's output; when the leader's log recovery cut records, a line per cut after it (text)
    or a ``LogRecoveryCuts`` field (``--status --json``)."""
    cuts = recovery_notice.read(quorum)
    if args.status:
        status = status_fields(cluster_id, quorum)
        if args.json:
            return json.dumps({**status, "LogRecoveryCuts": cuts} if cuts else status)
        return "\n".join([render_status(status), *recovery_notice.notice_lines(cuts)])
    now_ms = int(time.time() * 1000) if args.human_readable else None
    rows = replication_rows(quorum, now_ms)
    if args.json:
        return json.dumps(rows)
    return "\n".join([render_table(rows), *recovery_notice.notice_lines(cuts)])


def _node(replica: Any, endpoints: dict[int, list[str]]) -> dict[str, Any]:
    """One entry of CurrentVoters/CurrentObservers: Kafka's tool shows the endpoints the leader lists
    in ``nodes`` for any replica, voter or observer, and a null directory id for the zero uuid."""
    directory = uuid_to_str(replica.replica_directory_id)
    node: dict[str, Any] = {
        "id": replica.replica_id,
        "directoryId": None if directory == NO_DIRECTORY else directory,
    }
    if endpoints.get(replica.replica_id):
        node["endpoints"] = endpoints[replica.replica_id]
    return node


def status_fields(cluster_id: str, response: Any) -> dict[str, Any]:
    partition = response.topics[0].partitions[0]
    endpoints = {
        n.node_id: [admin.endpoint_text(l.name, l.host, l.port) for l in n.listeners]
        for n in response.nodes
    }
    voters = partition.current_voters
    leader = next(v for v in voters if v.replica_id == partition.leader_id)
    laggard = min(voters, key=lambda v: v.log_end_offset)  # the first of equals, as Kafka's min
    if laggard.replica_id == leader.replica_id:
        lag_time = 0
    elif leader.last_caught_up_timestamp == -1 or laggard.last_caught_up_timestamp == -1:
        lag_time = -1
    else:
        lag_time = leader.last_caught_up_timestamp - laggard.last_caught_up_timestamp
    return {
        "ClusterId": cluster_id,
        "LeaderId": partition.leader_id,
        "LeaderEpoch": partition.leader_epoch,
        "HighWatermark": partition.high_watermark,
        "MaxFollowerLag": leader.log_end_offset - laggard.log_end_offset,
        "MaxFollowerLagTimeMs": lag_time,
        "CurrentVoters": [_node(v, endpoints) for v in voters],
        "CurrentObservers": [_node(o, endpoints) for o in partition.observers],
    }


def render_status(fields: dict[str, Any]) -> str:
    lines = []
    for key, value in fields.items():
        if isinstance(value, list):
            value = "[" + ", ".join(_node_text(n) for n in value) + "]"
        lines.append(f"{key + ':':<24}{value}")
    return "\n".join(lines)


def _node_text(node: dict[str, Any]) -> str:
    parts = [f'"id": {node["id"]}']
    if "directoryId" in node:  # the demo shows voters by id only
        directory = node["directoryId"]
        parts.append('"directoryId": ' + ("null" if directory is None else f'"{directory}"'))
    if "endpoints" in node:
        parts.append('"endpoints": [' + ", ".join(f'"{e}"' for e in node["endpoints"]) + "]")
    return "{" + ", ".join(parts) + "}"


def replication_rows(response: Any, now_ms: int | None = None) -> list[dict[str, Any]]:
    """Leader first, then the other voters, then observers, each in the leader's order. With
    ``now_ms`` the timestamps are Kafka's --human-readable "N ms ago" (-1 stays -1)."""
    partition = response.topics[0].partitions[0]
    voters = partition.current_voters
    leader = next(v for v in voters if v.replica_id == partition.leader_id)
    ordered = [(leader, "Leader")] + [(v, "Follower") for v in voters if v is not leader]
    ordered += [(o, "Observer") for o in partition.observers]
    return [
        {
            "NodeId": r.replica_id,
            "DirectoryId": uuid_to_str(r.replica_directory_id),
            "LogEndOffset": r.log_end_offset,
            "Lag": leader.log_end_offset - r.log_end_offset,
            "LastFetchTimestamp": _timestamp(r.last_fetch_timestamp, now_ms, "last fetch"),
            "LastCaughtUpTimestamp": _timestamp(
                r.last_caught_up_timestamp, now_ms, "last caught up"
            ),
            "Status": status,
        }
        for r, status in ordered
    ]


def _timestamp(value_ms: int, now_ms: int | None, what: str) -> int | str:
    if now_ms is None or value_ms == -1:
        return value_ms
    if not 0 < value_ms <= now_ms:
        raise RelativeTimeError(
            f"Error while computing relative time, possible drift in system clock: current"
            f" timestamp is {now_ms}, {what} timestamp is {value_ms}"
        )
    return f"{now_ms - value_ms} ms ago"


def render_table(rows: list[dict[str, Any]]) -> str:
    """Kafka's prettyPrintTable: cells left-aligned to the widest in the column, a tab after each."""
    header = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    table = [header] + [[str(row[h]) for h in header] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    return "\n".join(
        "".join(f"{cell:<{widths[i]}}\t" for i, cell in enumerate(line)) for line in table
    )
