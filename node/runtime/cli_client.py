"""``kraftwire produce`` and ``kraftwire consume``: write records to ``__cluster_metadata-0`` through the
leader (acks -1, 1 or 0) and read the committed ones back, as a client (replica id -1) does.

``produce`` sends stdin lines, or ``--count`` generated records of ``--size`` bytes; it finds the leader
through DescribeCluster and follows NOT_LEADER_OR_FOLLOWER answers. ``consume`` prints committed
record values from ``--offset`` (0 with ``--from-beginning``) until ``--max-records`` or ``--timeout-ms``.
With ``--linearizable`` it reads from the node it was given (follower or leader): it first asks that node
for its read offset (ReadOffset) and then reads at least up to it, so it sees every record acknowledged
before it started.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Iterator

from kraftwire.node.core.api import Endpoint

from .client import ClientError, KafkaConnection
from .command_config import CommandConfigError, add_command_config, apply_command_config
from .config import parse_endpoint
from .producer import FetchRefused, MetadataClient, ProduceRefused
from .read_client import ReadRefused, read_offset


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--bootstrap-controller", required=True, help="HOST:PORT of any controller")
    add_command_config(parser)
    if name == "produce":
        parser.add_argument("--acks", type=int, choices=[-1, 0, 1], default=-1)
        parser.add_argument(
            "--count", type=int, help="send COUNT generated records instead of stdin lines"
        )
        parser.add_argument(
            "--size", type=int, default=100, help="bytes per generated record (default 100)"
        )
        parser.add_argument(
            "--batch", type=int, default=1, help="records per Produce request (default 1)"
        )
        parser.add_argument("--timeout-ms", type=int, default=30000, help="give up after this long")
    else:
        parser.add_argument("--from-beginning", action="store_true", help="start at the log start")
        parser.add_argument("--offset", type=int, default=None, help="start at this offset")
        parser.add_argument(
            "--max-records", type=int, default=None, help="stop after this many records"
        )
        parser.add_argument(
            "--timeout-ms", type=int, default=5000, help="stop after this long without new records"
        )
        parser.add_argument(
            "--linearizable",
            action="store_true",
            help="read from this node, at least up to the read offset it confirms with the leader",
        )
    parser.set_defaults(_client_command=name)


def run(args: argparse.Namespace) -> int:
    try:
        bootstrap = parse_endpoint(args.bootstrap_controller)
    except ValueError as exc:
        print(f"kraftwire {args._client_command}: --bootstrap-controller: {exc}", file=sys.stderr)
        return 2
    try:
        apply_command_config(args.command_config)
    except CommandConfigError as exc:
        print(f"kraftwire {args._client_command}: --command-config: {exc}", file=sys.stderr)
        return 2
    try:
        if args._client_command == "produce":
            return _produce(args, bootstrap)
        return _consume(args, bootstrap)
    except (ClientError, FetchRefused, ProduceRefused, ReadRefused) as exc:
        print(f"kraftwire {args._client_command}: {exc}", file=sys.stderr)
        return 1


def _values(args: argparse.Namespace) -> Iterator[bytes]:
    if args.count is not None:
        for i in range(args.count):
            yield (f"{i:012d}".encode() * (args.size // 12 + 1))[: args.size]
    else:
        for line in sys.stdin.buffer:
            yield line.rstrip(b"\n")


def _produce(args: argparse.Namespace, bootstrap: Endpoint) -> int:
    client = MetadataClient(bootstrap, deadline_s=args.timeout_ms / 1000)
    sent, batch = 0, []
    for value in _values(args):
        batch.append(value)
        if len(batch) >= args.batch:
            client.produce(batch, args.acks)
            sent += len(batch)
            batch = []
    if batch:
        client.produce(batch, args.acks)
        sent += len(batch)
    client.close()
    print(f"produced {sent} records (acks={args.acks})", file=sys.stderr)
    return 0


def _consume(args: argparse.Namespace, bootstrap: Endpoint) -> int:
    target = 0  # with --linearizable: read at least up to here
    if args.linearizable:
        with KafkaConnection(bootstrap.host, bootstrap.port, args.timeout_ms / 1000) as node:
            target = read_offset(node)
    client = MetadataClient(bootstrap, deadline_s=args.timeout_ms / 1000, pinned=args.linearizable)
    offset = 0 if args.from_beginning or args.offset is None else args.offset
    seen, idle_since = 0, time.monotonic()
    while args.max_records is None or seen < args.max_records:
        records, offset = client.fetch_committed(offset)
        for _, value in records:
            sys.stdout.buffer.write(value + b"\n")
            seen += 1
        sys.stdout.flush()
        if records:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > args.timeout_ms / 1000:
            if offset < target:
                raise ClientError(f"read only up to offset {offset} of read offset {target}")
            break
        elif offset < target:
            time.sleep(0.01)  # the node has the records below its read offset: ask again at once
        else:
            time.sleep(0.1)
    client.close()
    return 0
