"""``kraftwire decode CAPTURE... [--schemas DIR[,DIR...]] [--format table|jsonl|parquet] [--out PATH]
[--table exchanges|frames|connections] [--spark [--master URL]]``: one row per Kafka exchange in the
captures (or per frame, or per TCP connection). ``kraftwire decode -`` reads a capture from standard
input and prints each row as it is made (``live``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Final, TextIO

import orjson

from . import local_parallel
from .api import local_decoder
from .decode.live import decode_stream
from .decode.pipeline import DecodeOptions, decode_files
from .extras import missing_extra
from .kafka.rows import Row
from .output.sightings import merge_sightings
from .output.tables import EXCHANGES, TABLES, json_ready, to_arrow
from .packets.capture import MIN_CAPTURE_HEADER, CaptureError, capture_format, shown_name
from .spark.quiet_spark import SparkStartError, quiet_session
from .spark.shards import check_spark_paths

PREFIX = "kraftwire decode"  # every problem line starts with the command's name


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument(
        "captures",
        nargs="+",
        metavar="CAPTURE",
        help="pcap or pcapng files; - alone: a capture on standard input, rows printed as made",
    )
    parser.add_argument(
        "--schemas",
        default=None,
        metavar="DIR[,DIR...]",
        help="spec directories to generate codecs from (default: the bundled KRaft codecs)",
    )
    parser.add_argument("--format", choices=("table", "jsonl", "parquet"), default="table")
    parser.add_argument(
        "--table",
        choices=TABLES,
        default=EXCHANGES,
        help="rows per exchange (default), per Kafka frame, or per TCP connection",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output file (default: standard output; " "required for parquet)",
    )
    parser.add_argument("--ports", default="9092,9093", help="server ports, comma-separated")
    parser.add_argument(
        "--jobs",
        type=_positive,
        default=None,
        metavar="N",
        help="worker processes of a local decode (default: the usable CPUs; 1: this process alone);"
        " captures below a few MiB and standard input are decoded in this process",
    )
    # Testing only: the capture size above which --jobs starts workers.
    parser.add_argument("--parallel-above", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--spark", action="store_true", help="decode with Spark instead of locally")
    parser.add_argument(
        "--master", default=None, help="Spark master URL (with --spark; default local[*])"
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    try:
        ports = frozenset(int(p) for p in args.ports.split(",") if p.strip())
    except ValueError:
        ports = frozenset([0])  # reported below with the out-of-range ones
    if not all(0 < port < 65536 for port in ports):
        return _fail(f"--ports must be comma-separated numbers 1-65535, not {args.ports!r}", 2)
    if args.master is not None and not args.spark:
        return _fail("--master is used only with --spark", 2)
    if args.jobs is not None and args.spark:
        return _fail("--jobs is used only without --spark (Spark's master sets its cores)", 2)
    if "-" in args.captures:
        return _run_stream(args, ports)
    if args.format == "parquet" and args.out is None:
        return _fail("--format parquet needs --out PATH", 2)
    problem = path_problem(args.captures, args.out) or _missing_extra(args)
    if problem:
        return _fail(problem, 2)
    try:
        rows, unreadable = _spark_rows(args, ports) if args.spark else _local_rows(args, ports)
    except (OSError, ValueError, SparkStartError) as exc:  # unreadable specs, no capture, ...
        return _fail(str(exc), 1)
    except ImportError as exc:
        return _fail(f"{exc} (is the spec directory a kraftwire-generatable set?)", 1)
    if not _all_named(unreadable, args.captures):  # as report: no output when nothing is a capture
        try:
            _write(rows, args)
        except BrokenPipeError:  # standard output's reader left (``| head``): nothing to say
            _silence_stdout()
            return 1
        except OSError as exc:  # the output appeared while decoding, or cannot be created
            where = f"--out {args.out}" if args.out else "standard output"
            return _fail(f"{where}: {exc.strerror or exc}", 1)
    for path in unreadable:
        print(f"{PREFIX}: {shown_name(path)}: not a pcap or pcapng file", file=sys.stderr)
    return 1 if unreadable else 0


def _missing_extra(args: argparse.Namespace) -> str | None:
    if args.spark:
        return missing_extra("--spark", "spark", "pyspark", "pyarrow")
    if args.format == "parquet":
        return missing_extra("--format parquet", "parquet", "pyarrow")
    return None


def _run_stream(args: argparse.Namespace, ports: frozenset[int]) -> int:
    """``kraftwire decode -``: each row printed (and flushed) as soon as it is made."""
    if args.captures != ["-"] or args.spark or args.format == "parquet" or args.out is not None:
        return _fail(
            "- (standard input) is read alone, locally, as jsonl or table to standard output", 2
        )
    shown = _SHOWN[args.table]
    widths = [max(len(column), 8) for column in shown]
    if args.format == "table":
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(shown, widths)).rstrip() + "\n")
    out = sys.stdout.buffer

    def emit(row: Row) -> None:
        if args.format == "jsonl":
            out.write(jsonl_line(row, args.table))
        else:
            out.write(_table_line(row, shown, widths).encode())
        out.flush()

    try:
        sys.stdout.flush()
        options = DecodeOptions(server_ports=ports, table=args.table)
        stats = decode_stream(sys.stdin.buffer, local_decoder(args.schemas), emit, options)
    except BrokenPipeError:  # standard output's reader left: nothing to say
        _silence_stdout()
        return 1
    except (CaptureError, OSError, ValueError) as exc:
        return _fail(f"standard input: {exc}", 1)
    except KeyboardInterrupt:
        return 130
    for problem in stats.problems[:3]:
        print(f"{PREFIX}: warning: standard input: {problem}", file=sys.stderr)
    return 0


def _table_line(row: Row, shown: tuple[str, ...], widths: list[int]) -> str:
    texts = [_cell(row, column) for column in shown]
    return "  ".join(t.ljust(w) for t, w in zip(texts, widths)).rstrip() + "\n"


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush at exit does not
    raise the broken pipe a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _local_rows(args: argparse.Namespace, ports: frozenset[int]) -> tuple[list[Row], list[str]]:
    """The rows, or with --jobs and jsonl their lines already encoded (``_write`` tells them)."""
    options = DecodeOptions(server_ports=ports, table=args.table)
    jobs = local_parallel.usable_cpus() if args.jobs is None else args.jobs
    above = (
        local_parallel.PARALLEL_ABOVE_BYTES if args.parallel_above is None else args.parallel_above
    )
    if local_parallel.worth_parallel(args.captures, jobs, above):
        encode = jsonl_line if args.format == "jsonl" else None
        rows, stats = local_parallel.decode_parallel(
            args.captures, args.schemas, options, jobs, encode
        )
        return rows, unreadable_captures(stats)
    bodies = local_decoder(args.schemas)
    progress = _Progress() if sys.stderr.isatty() else None
    rows, stats = decode_files(args.captures, bodies, options, progress)
    if progress:
        progress.done()
    if args.table == EXCHANGES:
        rows = merge_sightings(rows)
    return rows, unreadable_captures(stats)


def _all_named(subset: list[str], captures: list[str]) -> bool:
    return {os.path.abspath(p) for p in subset} >= {os.path.abspath(p) for p in captures}


def path_problem(captures: list[str], out: Path | None) -> str | None:
    """Why the command must not start: an output that exists (never overwritten), an output folder
    that does not exist, or a capture that is missing or is a folder."""
    if out is not None and out.exists():
        return f"{shown_name(str(out))} exists; choose a new output path"
    if out is not None and not out.parent.is_dir():
        return f"--out {shown_name(str(out))}: no such folder {shown_name(str(out.parent))}"
    for capture in captures:
        if Path(capture).is_dir():
            return f"{shown_name(capture)} is a folder; name the capture files in it (or a glob)"
        if not Path(capture).is_file():
            return f"no such capture file: {shown_name(capture)}"
    return None


def unreadable_captures(stats: Row, prefix: str = PREFIX) -> list[str]:
    """The files that are no capture at all; the other files' first problems are printed as warnings
    (after ``prefix``, the command's name)."""
    unreadable = []
    for path, file_stats in stats.items():
        if file_stats.problems and file_stats.problems[0].startswith("not a pcap"):
            unreadable.append(path)
            continue
        for problem in file_stats.problems[:3]:
            print(f"{prefix}: warning: {path}: {problem}", file=sys.stderr)
    return unreadable


def _spark_rows(args: argparse.Namespace, ports: frozenset[int]) -> tuple[list[Any], list[str]]:
    """The rows, or for jsonl of one capture their lines encoded in Spark's tasks (``_write``
    tells them)."""
    # Imports pyspark (an optional extra, seconds to import): only when --spark asks for it.
    from .spark.reading import read_encoded_lines, read_exchanges, spark_rows_as_dicts

    check_spark_paths(args.captures)  # before a session is started for nothing
    unreadable = []
    for path in args.captures:
        with open(path, "rb") as handle:
            try:
                capture_format(handle.read(MIN_CAPTURE_HEADER))
            except CaptureError:
                unreadable.append(path)
    with quiet_session(args.master or "local[*]", "kraftwire decode", "kraftwire decode") as spark:
        if args.format == "jsonl" and len(args.captures) == 1:  # no sightings to merge
            lines = read_encoded_lines(
                spark, args.captures[0], jsonl_line, args.schemas, ports, args.table
            )
            if lines is not None:
                return lines, unreadable
        frame = read_exchanges(
            spark, args.captures, schemas=args.schemas, ports=ports, table=args.table
        )
        if args.format == "parquet":
            frame.write.parquet(str(args.out))
            return [], unreadable
        return spark_rows_as_dicts(frame, args.table), unreadable


def _write(rows: list[Row], args: argparse.Namespace) -> None:
    if args.format == "parquet":
        if rows or not args.spark:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_batches([to_arrow(rows, args.table)])  # before the file exists
            with open(args.out, "xb") as handle:  # "x": never replace a file made meanwhile
                pq.write_table(table, handle)
        return
    if args.format == "jsonl":
        out = open(args.out, "xb", buffering=_OUT_BUFFER_BYTES) if args.out else sys.stdout.buffer
        try:
            out.writelines(
                jsonl_line(row, args.table) if isinstance(row, dict) else row for row in rows
            )
        finally:
            if args.out:
                out.close()
            else:
                out.flush()
        return
    text = open(args.out, "x", encoding="utf-8") if args.out else sys.stdout
    try:
        _table(rows, text, args.table)
    finally:
        if args.out:
            text.close()


# The jsonl file's buffer: its lines (a few kB each) reach the file in writes of this size, not of
# the default 8 KiB; the records bench's 214 MB took 0.15 CPU seconds of writes, 0.08 s so.
_OUT_BUFFER_BYTES: Final = 1 << 20

# Timestamps as RFC 3339 UTC with a Z, microseconds when there are any: what
# ``datetime.isoformat`` writes, with Z for +00:00 (``tables.json_ready``).
_JSONL_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC | orjson.OPT_APPEND_NEWLINE


def jsonl_line(row: Row, table: str = EXCHANGES) -> bytes:
    """One jsonl line of ``row``, UTF-8: compact JSON by orjson (a third of the time of
    ``json.dumps`` on the bench's rows), or by the standard library, all non-ASCII escaped, for the
    rare row orjson refuses (text with lone surrogates, such as a file name that is not UTF-8)."""
    try:
        return orjson.dumps(row, option=_JSONL_OPTIONS)
    except orjson.JSONEncodeError:
        return (json.dumps(json_ready(row, table), separators=(",", ":")) + "\n").encode()


# The columns a terminal table shows, per table.
_SHOWN = {
    "exchanges": (
        "capture",
        "request_frame",
        "response_frame",
        "client_port",
        "server_port",
        "api_name",
        "api_version",
        "correlation_id",
        "client_id",
        "latency_us",
        "error_code",
        "status",
    ),
    "frames": ("frame", "direction", "size", "api_key", "api_version", "correlation_id", "status"),
    "connections": (
        "first_frame",
        "client_ip",
        "client_port",
        "server_ip",
        "server_port",
        "packets_to_server",
        "packets_to_client",
        "requests",
        "responses",
        "gaps",
        "retransmitted_bytes",
    ),
}


def _table(rows: list[Row], out: TextIO, table: str) -> None:
    shown = _SHOWN[table]
    texts = [[_cell(row, c) for c in shown] for row in rows]
    widths = [max([len(c)] + [len(t[i]) for t in texts]) for i, c in enumerate(shown)]
    out.write("  ".join(c.ljust(w) for c, w in zip(shown, widths)) + "\n")
    for text in texts:
        out.write("  ".join(t.ljust(w) for t, w in zip(text, widths)) + "\n")
    out.write(f"{len(rows)} {table}\n")


def _cell(row: Row, column: str) -> str:
    if column == "capture":  # the file names (frame numbers are the first one's), not the folders
        return ",".join(os.path.basename(name) for name in row["capture_files"])
    if column == "api_name" and not row[column]:
        column = "api_key"
    return "" if row[column] is None else str(row[column])


class _Progress:
    def __call__(self, packets: int) -> None:
        print(f"\r{packets:,} packets", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        print(file=sys.stderr)


def _fail(message: str, code: int) -> int:
    print(f"{PREFIX}: {message}", file=sys.stderr)
    return code
