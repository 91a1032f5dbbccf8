"""``kraftwire cluster up --controllers 3 [--dir DIR] [--base-port P]``: format (first time) and start a
local quorum of ``kraftwire node start`` processes on 127.0.0.1, print the quorum each time its leader,
epoch or membership changes, and stop every node cleanly on Ctrl-C (or after ``--duration``)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time

from .cli_quorum import render_status, status_fields
from .command_config import CommandConfigError, apply_command_config
from .local_cluster import LocalCluster
from .tls_certs import CertificateError


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = sub.add_parser("up", help="format and start a local quorum; Ctrl-C stops it")
    up.add_argument("--controllers", type=int, default=3, help="number of voters (default 3)")
    up.add_argument(
        "--dir", help="where nodes keep configs, logs and data (default: a new temporary directory)"
    )
    up.add_argument("--base-port", type=int, help="node N listens on BASE+N (default: free ports)")
    up.add_argument("--duration", type=float, help="stop by itself after this many seconds")
    up.add_argument(
        "--tls",
        action="store_true",
        help="mutual TLS on every listener, with a throwaway CA made by openssl in DIR/tls",
    )


def _usage_problem(args: argparse.Namespace) -> str | None:
    if not 1 <= args.controllers <= 9:
        return "--controllers must be 1..9"
    if args.dir is not None and os.path.exists(args.dir):
        # never write into a folder we did not make (a --dir /etc left node folders there)
        if not os.path.isdir(args.dir) or os.listdir(args.dir):
            return f"--dir {args.dir} is not a new or empty directory"
    return None


def run(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem is not None:
        print(f"kraftwire cluster up: {problem}", file=sys.stderr)
        return 2
    directory = args.dir or tempfile.mkdtemp(prefix="kraftwire-cluster-")
    cluster = LocalCluster(directory, args.controllers, args.base_port, tls=args.tls)
    try:
        cluster.format()
        apply_command_config(cluster.client_properties if args.tls else None)
    except (CertificateError, CommandConfigError) as exc:
        print(f"kraftwire cluster up: {exc}", file=sys.stderr)
        return 1
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    cluster.start_all()
    print(
        f"cluster {cluster.cluster_id}: {args.controllers} controllers in {directory}; Ctrl-C stops them"
    )
    for i in cluster.ids:
        print(f"  node {i}: 127.0.0.1:{cluster.endpoints[i].port}  config {cluster.config_path(i)}")
    if args.tls:
        print(f"  mutual TLS; tools connect with --command-config {cluster.client_properties}")
    deadline = None if args.duration is None else time.monotonic() + args.duration
    shown = None
    try:
        while not stop["now"] and (deadline is None or time.monotonic() < deadline):
            described = cluster.describe()
            if described is not None:
                fields = status_fields(*described)
                key = (
                    fields["LeaderId"],
                    fields["LeaderEpoch"],
                    str(fields["CurrentVoters"]),
                    str(fields["CurrentObservers"]),
                )
                if key != shown:
                    shown = key
                    print(time.strftime("%H:%M:%S"), "quorum:")
                    print(render_status(fields), flush=True)
            for i, process in list(cluster.processes.items()):
                if process.poll() is not None:  # said once: the node is then no longer watched
                    print(
                        f"node {i} exited with status {process.returncode}; "
                        f"see {os.path.join(directory, f'node{i}.log')}",
                        flush=True,
                    )
                    cluster.processes.pop(i)
            time.sleep(0.5)
    finally:
        cluster.stop_all()
    print("all nodes stopped")
    return 0
