"""``kraftwire node start --config FILE``: run one controller until SIGTERM/SIGINT (then resign and stop)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from kraftwire.node.storage import StorageError

from .config import ConfigError, NodeConfig, load_config
from .gc_settings import settle_gc
from .node import KRaftNode

log = logging.getLogger("kraftwire.node")


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = sub.add_parser("start", help="start a controller from a properties file")
    start.add_argument(
        "--config", "-c", required=True, help="properties file (Kafka's controller names)"
    )
    start.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    start.add_argument(
        "--capture",
        metavar="FILE.pcapng",
        help="write every frame sent and received to a new pcapng file",
    )
    start.add_argument(
        "--metrics-port",
        type=int,
        help="serve Kafka's raft metrics for Prometheus on 127.0.0.1:PORT",
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    if args.metrics_port is not None and not _metrics_installed():
        print(
            "kraftwire node start: --metrics-port needs prometheus-client, which is not installed:"
            " pip install 'kraftwire[metrics]'",
            file=sys.stderr,
        )
        return 2
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"kraftwire node start: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_serve(config, args.metrics_port, args.capture))
    except (StorageError, OSError) as exc:
        print(f"kraftwire node start: {exc}", file=sys.stderr)
        return 1


def _metrics_installed() -> bool:
    """Whether the metrics extra is importable; asked before the node starts, not when it serves."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return False
    return True


async def _serve(config: NodeConfig, metrics_port: int | None, capture: str | None) -> int:
    node = KRaftNode(config, capture_path=capture)
    if metrics_port is not None:
        from .metrics import serve_prometheus

        serve_prometheus(node.enable_metrics(), metrics_port)
    await node.start()
    settle_gc()
    stop = asyncio.Event()
    received: list[signal.Signals] = []
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, _on_signal, sig, received, stop)
    stopper = asyncio.ensure_future(stop.wait())
    failed = asyncio.ensure_future(node.wait_stopped())
    await asyncio.wait([stopper, failed], return_when=asyncio.FIRST_COMPLETED)
    await node.shutdown()
    stopper.cancel()
    failed.cancel()
    if node.failure:
        print(f"kraftwire node start: stopped: {node.failure}", file=sys.stderr)
        return 1
    _log_clean_stop(node, received[0].name if received else "the node stopped itself")
    return 0


def _on_signal(sig: signal.Signals, received: list[signal.Signals], stop: asyncio.Event) -> None:
    received.append(sig)
    stop.set()


def _log_clean_stop(node: KRaftNode, reason: str) -> None:
    """One INFO line, so that a stop is not taken for a crash when the log is read later."""
    status = node.core.status() if node.core is not None else None
    end = "unknown" if status is None else status.log_end_offset
    log.info("node %s: shut down cleanly (%s): log end offset %s", node.config.node_id, reason, end)
