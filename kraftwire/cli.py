"""The ``kraftwire`` command: a thin dispatcher to the subcommand modules of each layer.

Each subcommand module exposes ``configure(parser, name)`` and ``run(args) -> int``; it is imported only
when its command runs, so ``kraftwire codegen`` does not load the node and ``kraftwire simulate`` does
not load jinja2. A ``CliError`` raised by a command is printed as one line with its exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from kraftwire import __version__
from kraftwire.cli_input import CliError

INTERRUPTED = 130  # 128 + SIGINT

# command name -> (module implementing it, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "codegen": ("kraftwire.codegen.cli", "generate Python codecs from Kafka message specs"),
    "specs": ("kraftwire.specs", "list what a generated package knows, or check spec files"),
    "spec": ("kraftwire.specs", "the same as `specs`"),
    "decode-hex": ("kraftwire.inspect", "decode a hex message body with a generated codec"),
    "encode-json": ("kraftwire.inspect", "encode a Kafka-JSON message file with a generated codec"),
    "decode-frame": (
        "kraftwire.decode_frame",
        "decode whole request/response frames (size, header, body)",
    ),
    "simulate": ("kraftwire.node.simulation.cli", "run seeded KRaft fault-injection simulations"),
    "decode": ("kraftwire.spark_decoders.cli", "decode Kafka exchanges from pcap/pcapng captures"),
    "report": (
        "kraftwire.spark_decoders.report",
        "an HTML report with plots of the Kafka traffic in captures",
    ),
    "storage": (
        "kraftwire.node.runtime.cli_storage",
        "format a node's log directory; make random ids",
    ),
    "node": (
        "kraftwire.node.runtime.cli_node",
        "run a KRaft controller (`kraftwire node start --config FILE`)",
    ),
    "dump-log": (
        "kraftwire.node.runtime.cli_dump_log",
        "print the batches and records of log segments and snapshots",
    ),
    "cluster": (
        "kraftwire.node.runtime.cli_cluster",
        "run a local quorum on 127.0.0.1 (`kraftwire cluster up`)",
    ),
    "produce": (
        "kraftwire.node.runtime.cli_client",
        "write records to a quorum's metadata log (acks -1/1/0)",
    ),
    "consume": (
        "kraftwire.node.runtime.cli_client",
        "read committed records from a quorum's metadata log",
    ),
    "quorum": (
        "kraftwire.node.runtime.cli_quorum",
        "describe a running quorum (like kafka-metadata-quorum.sh)",
    ),
}


def build_parser(commands: dict[str, tuple[str, str]] = COMMANDS) -> argparse.ArgumentParser:
    """The parser of every command in ``commands``, each configured by its own module (imported here)."""
    parser, sub = _top_parser()
    for name, (module_name, help_text) in commands.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        module = importlib.import_module(module_name)
        module.configure(command_parser, name)
        command_parser.set_defaults(_run=module.run)
    return parser


def _top_parser() -> tuple[argparse.ArgumentParser, Any]:
    parser = argparse.ArgumentParser(prog="kraftwire", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"kraftwire {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    return parser, sub


def _listing_parser() -> argparse.ArgumentParser:
    """For ``--version``, ``--help`` and a missing or unknown command: the commands and their help
    from the table alone. Importing every module to list them took over a second (the simulator,
    the generator, the decoders); none of them is needed to print a name and a line."""
    parser, sub = _top_parser()
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command in ``argv``; Ctrl-C anywhere ends it quietly with status 130, as a shell
    reports a command ended by SIGINT."""
    try:
        return _dispatch(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        return INTERRUPTED


def command_name(args: argparse.Namespace) -> str:
    """How every problem line starts: ``kraftwire`` and the command's words as typed, its action
    included (``kraftwire node start``, ``kraftwire quorum describe``), then ``: `` and the problem,
    which names a file once."""
    action = getattr(args, "action", None)
    return f"kraftwire {args.command}" + (f" {action}" if action else "")


def _dispatch(argv: list[str]) -> int:
    name = argv[0] if argv else None
    if name not in COMMANDS:  # no command (or --help, --version, a typo): argparse says what
        _listing_parser().parse_args(argv)
        return 2  # not reached: parse_args exits for every argv that names no command
    try:
        parser = build_parser({name: COMMANDS[name]})  # only the module of the command asked for
    except ImportError as exc:  # a layer that is not installed (e.g. a vendored subset)
        print(f"kraftwire {name}: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except CliError as exc:
        print(f"{command_name(args)}: {exc}", file=sys.stderr)
        return exc.status
    except BrokenPipeError:  # the reader went away (`kraftwire ... | head`): not an error of ours
        sys.stdout = None  # nothing more can be written; skip the flush
        return 0
