"""``kraftwire quorum describe --bootstrap-controller HOST:PORT (--status | --replication) [--json]``,
printing what ``kafka-metadata-quorum.sh`` prints (kraft-operations.md §2).

Like Kafka's admin client it asks the bootstrap controller DescribeCluster (endpoint type controller),
then sends DescribeQuorum to the leader named there (:mod:`.admin`). ``add-controller`` and
``remove-controller`` send AddRaftVoter / RemoveRaftVoter the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kraftwire.node.storage.layout import uuid_to_str

from . import admin
from .admin import describe_quorum
from .client import ClientError
from .config import parse_endpoint


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = sub.add_parser(
        "add-controller", help="make a running observer controller a voter (AddRaftVoter)"
    )
    add.add_argument("--config", "-c", required=True, help="the new controller's properties file")
    add.add_argument("--bootstrap-controller", required=True, help="HOST:PORT of any controller")
    remove = sub.add_parser("remove-controller", help="remove a voter (RemoveRaftVoter)")
    remove.add_argument("--controller-id", "-i", type=int, required=True)
    remove.add_argument("--controller-directory-id", "-d", required=True)
    remove.add_argument("--bootstrap-controller", required=True, help="HOST:PORT of any controller")
    describe = sub.add_parser(
        "describe", help="describe the quorum (like kafka-metadata-quorum.sh describe)"
    )
    describe.add_argument(
        "--bootstrap-controller", required=True, help="HOST:PORT of any controller"
    )
    what = describe.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="leader, epoch, high watermark, voters")
    what.add_argument("--replication", action="store_true", help="per replica progress")
    describe.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> int:
    try:
        endpoint = parse_endpoint(args.bootstrap_controller)
    except ValueError as exc:
        print(f"kraftwire quorum: --bootstrap-controller: {exc}", file=sys.stderr)
        return 2
    try:
        if args.action == "add-controller":
            print(admin.add_controller(endpoint, args.config))
            return 0
        if args.action == "remove-controller":
            print(
                admin.remove_controller(endpoint, args.controller_id, args.controller_directory_id)
            )
            return 0
        cluster_id, quorum = describe_quorum(endpoint.host, endpoint.port)
    except admin.UsageError as exc:
        print(f"kraftwire quorum: {exc}", file=sys.stderr)
        return 2
    except ClientError as exc:
        print(f"kraftwire quorum: {exc}", file=sys.stderr)
        return 1
    if args.status:
        status = status_fields(cluster_id, quorum)
        print(json.dumps(status) if args.json else render_status(status))
    else:
        rows = replication_rows(quorum)
        print(json.dumps(rows) if args.json else render_table(rows))
    return 0


def _node(replica: Any, endpoints: dict[int, list[str]]) -> dict[str, Any]:
    node: dict[str, Any] = {"id": replica.replica_id}
    directory = uuid_to_str(replica.replica_directory_id)
    if directory != "AAAAAAAAAAAAAAAAAAAAAA":
        node["directoryId"] = directory
    if endpoints.get(replica.replica_id):
        node["endpoints"] = endpoints[replica.replica_id]
    return node


def status_fields(cluster_id: str, response: Any) -> dict[str, Any]:
    partition = response.topics[0].partitions[0]
    endpoints = {
        n.node_id: [f"{l.name}://{l.host}:{l.port}" for l in n.listeners] for n in response.nodes
    }
    voters = partition.current_voters
    leader = next(v for v in voters if v.replica_id == partition.leader_id)
    laggard = min(voters, key=lambda v: v.log_end_offset)
    if laggard.replica_id == leader.replica_id:
        lag_time = 0
    elif leader.last_caught_up_timestamp < 0 or laggard.last_caught_up_timestamp < 0:
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
        "CurrentObservers": [_node(o, {}) for o in partition.observers],
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
    if "directoryId" in node:
        parts.append(f'"directoryId": "{node["directoryId"]}"')
    if "endpoints" in node:
        parts.append('"endpoints": [' + ", ".join(f'"{e}"' for e in node["endpoints"]) + "]")
    return "{" + ", ".join(parts) + "}"


def replication_rows(response: Any) -> list[dict[str, Any]]:
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
            "LastFetchTimestamp": r.last_fetch_timestamp,
            "LastCaughtUpTimestamp": r.last_caught_up_timestamp,
            "Status": status,
        }
        for r, status in ordered
    ]


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
