"""``kraftwire produce`` and ``kraftwire consume``: write records to ``__cluster_metadata-0`` through the
leader (acks -1, 1 or 0) and read the committed ones back, as a client (replica id -1) does.

``--bootstrap-controller`` takes ``HOST:PORT[,HOST:PORT...]`` as Kafka's tools do; the controllers are
asked in turn, the next when one cannot be reached. ``produce`` sends stdin lines, or ``--count``
generated records of ``--size`` bytes; it finds the leader through DescribeCluster and follows
NOT_LEADER_OR_FOLLOWER answers. ``consume`` prints committed record values, as Kafka's console consumer
does: from the end of the committed log (the high watermark) by default, from the log start with
``--from-beginning``, or from ``--offset``; it stops after exactly ``--max-records`` records, or after
``--timeout-ms`` without new ones. With ``--linearizable`` it reads from the first controller that
answers (follower or leader): it first asks that node for its read offset (ReadOffset) and then reads
at least up to it, so it sees every record acknowledged before it started (by default it starts there).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, Iterator

from kraftwire.node.core.api import Endpoint

from .admin import first_answer
from .client import ClientError, KafkaConnection
from .command_config import CommandConfigError, add_command_config, apply_command_config
from .config import parse_endpoints
from .producer import FetchRefused, MetadataClient, ProduceRefused
from .read_client import ReadRefused, read_offset


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument(
        "--bootstrap-controller",
        required=True,
        help="HOST:PORT[,HOST:PORT...] of controllers, asked in turn",
    )
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
        parser.add_argument(
            "--from-beginning",
            action="store_true",
            help="start at the log start (default: at the end, after the last committed record)",
        )
        parser.add_argument(
            "--offset", type=_offset, default=None, help="start at this offset (0 or more)"
        )
        parser.add_argument(
            "--max-records", type=_count, default=None, help="stop after this many records"
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


def _offset(text: str) -> int:
    return _at_least(0, text)


def _count(text: str) -> int:
    return _at_least(1, text)


def _at_least(low: int, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be {low} or more, not {value}")
    return value


def run(args: argparse.Namespace) -> int:
    command = args._client_command
    try:
        bootstrap = parse_endpoints(args.bootstrap_controller)
    except ValueError as exc:
        print(f"kraftwire {command}: --bootstrap-controller: {exc}", file=sys.stderr)
        return 2
    if command == "consume" and args.from_beginning and args.offset is not None:
        # Kafka's console consumer refuses the pair with these words
        print(
            f"kraftwire {command}: Options from-beginning and offset cannot be specified together.",
            file=sys.stderr,
        )
        return 2
    try:
        apply_command_config(args.command_config)
    except CommandConfigError as exc:
        print(f"kraftwire {command}: --command-config: {exc}", file=sys.stderr)
        return 2
    try:
        if command == "produce":
            return _produce(args, bootstrap)
        return _consume(args, bootstrap)
    except (ClientError, FetchRefused, ProduceRefused, ReadRefused) as exc:
        print(f"kraftwire {command}: {exc}", file=sys.stderr)
        return 1


def _values(args: argparse.Namespace) -> Iterator[bytes]:
    if args.count is not None:
        for i in range(args.count):
            yield (f"{i:012d}".encode() * (args.size // 12 + 1))[: args.size]
    else:
        for line in sys.stdin.buffer:
            yield line.rstrip(b"\n")


def _produce(args: argparse.Namespace, bootstrap: list[Endpoint]) -> int:
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


def _consume(args: argparse.Namespace, bootstrap: list[Endpoint]) -> int:
    target = 0  # with --linearizable: read at least up to here
    if args.linearizable:  # the node that gives the read offset is the one read from
        node, target = first_answer(bootstrap, _read_offset_of(args.timeout_ms / 1000))
        bootstrap = [node]
    client = MetadataClient(bootstrap, deadline_s=args.timeout_ms / 1000, pinned=args.linearizable)
    offset = _start_offset(args, client, target)
    seen, idle_since = 0, time.monotonic()
    while args.max_records is None or seen < args.max_records:
        records, offset = client.fetch_committed(offset)
        if args.max_records is not None:
            records = records[: args.max_records - seen]
        for _, value in records:
            sys.stdout.buffer.write(value + b"\n")
        seen += len(records)
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


def _read_offset_of(timeout_s: float) -> Callable[[Endpoint], tuple[Endpoint, int]]:
    def ask(endpoint: Endpoint) -> tuple[Endpoint, int]:
        with KafkaConnection(endpoint.host, endpoint.port, timeout_s) as node:
            return endpoint, read_offset(node)

    return ask


def _start_offset(args: argparse.Namespace, client: MetadataClient, read_offset_: int) -> int:
    """``--offset``; the log start with ``--from-beginning``; else the end, as Kafka's console
    consumer starts at "latest": the high watermark (with ``--linearizable``, the read offset)."""
    if args.offset is not None:
        return int(args.offset)
    if args.linearizable and not args.from_beginning:
        return read_offset_
    log_start, high_watermark = client.log_offsets()
    return log_start if args.from_beginning else high_watermark
