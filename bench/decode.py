"""Capture decoding speed: tshark -T json vs kraftwire local (one core) vs Spark local[1] and local[2].

    .venv/bin/python bench/decode.py [--packets 200000] [--quick] [--rounds 3] [--warmups 6]
        [--no-spark] [--no-tshark]
    .venv/bin/python bench/decode.py --no-tshark --plan split   # one Spark plan: source, split or both
    .venv/bin/python bench/decode.py --profile local.prof   # where the local decode's time goes
    .venv/bin/python bench/decode.py --breakdown   # CPU seconds of each local stage, unprofiled
    .venv/bin/python bench/decode.py --breakdown --native   # the same, compiled then pure
    .venv/bin/python bench/decode.py --native   # compiled codecs and decoders, beside pure ones
    .venv/bin/python bench/decode.py --pcapng ...   # the same traffic written as pcapng
    .venv/bin/python bench/decode.py --command [--rounds 3] [--no-spark] [--no-tshark]
        # the commands a user types, on a capture rich in record batches (_decode_command)
    KRAFTWIRE_PURE=1 .venv/bin/python bench/decode.py ...   # pure codecs and decoders even when compiled

The bench first writes one capture of mixed KRaft (Vote, BeginQuorumEpoch, Fetch with record batches,
DescribeQuorum, FetchSnapshot) and classic (Produce v9 with records, Metadata v12, ApiVersions v3)
exchanges over 64 connections, all built with codecs generated from Kafka's specs in ../shared.
Every side does a full decode of the same file: tshark dissects every packet to JSON (its Kafka
dissector on 9092/9093), kraftwire decodes every request and response body to JSON rows. Spark runs
both plans, the ``kafka-pcap`` data source (connection shards) and the split plan (eight byte-range
splits, connections stitched in a second stage), writing to the ``noop`` sink so every row is
produced; session start-up is not counted: ``--warmups`` untimed runs come first (6 by default,
their JVM CPU printed: the JIT compiles Spark's per-row code over the first few queries, as a long
query on a large capture does early on), then the best of ``--rounds``. A capture of a few
exchanges, timed the same way, gives Spark's own cost per query, which no number of cores shortens.

The machine is shared, so wall time says as much about the other work as about ours. kraftwire
local and tshark each use one core, and are compared "per core" by the CPU seconds each used
(wall time printed beside it). Spark's local[2] / local[1] can only be wall time; beside it the
bench prints the CPU seconds of each plan's tasks (the data source's shards; the split plan's splits
and second-stage partitions: ``_decode_spark``), which bound what two free cores could gain, and
the load average at each step.

The bench prints which implementation decoded: for the codecs, the pure generated modules or the
mypyc-compiled ones that ``--native`` builds (once, into the codec cache) for the 18 specs the
capture uses (compiling all 292 of Kafka's specs would take about a quarter of an hour of CPU);
for the decoders, the pure modules or their compiled hot path (``make native``, which ``--native``
also builds when it is missing or stale). With ``--native`` the local decode is timed both ways
in the same run: compiled here, pure in a child process with ``KRAFTWIRE_PURE=1`` (the package
chooses its implementation when it is imported, so one process holds one of them).
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _decode_capture import build_capture  # noqa: E402  (beside this script)
from _decode_spark import report_spark  # noqa: E402

SHARED_SCHEMAS = "kafka-schemas"
BENCH_APIS = (
    "Vote",
    "BeginQuorumEpoch",
    "DescribeQuorum",
    "FetchSnapshot",
    "Fetch",
    "Produce",
    "Metadata",
    "ApiVersions",
)
# Every spec whose codec decodes the bench's frames: both sides of each API, the headers, and the
# metadata-log records the KRaft Fetch responses carry.
BENCH_SPECS = [f"{api}{side}" for api in BENCH_APIS for side in ("Request", "Response")] + [
    "RequestHeader",
    "ResponseHeader",
    "TopicRecord",
    "PartitionRecord",
]


class Timing(NamedTuple):
    wall_s: float
    cpu_s: float  # CPU seconds of the process doing the work (user + system)


def time_tshark(path: Path) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        ["tshark", "-r", str(path), "-o", "kafka.tcp.ports:9092,9093", "-T", "json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu)


def time_local_pure(path: Path) -> tuple[Timing, int, str]:
    """``time_local`` in a child process with pure codecs and decoders (``KRAFTWIRE_PURE=1``)."""
    env = dict(os.environ, KRAFTWIRE_PURE="1")
    done = subprocess.run(
        [sys.executable, __file__, "--time-local", str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu, rows, used = done.stdout.split()
    return Timing(float(wall), float(cpu)), int(rows), used


def time_local(path: Path, schemas: str) -> tuple[Timing, int]:
    from kraftwire.spark_decoders.api import local_decoder
    from kraftwire.spark_decoders.decode.pipeline import decode_files

    bodies = local_decoder(schemas)
    start, start_cpu = time.perf_counter(), time.process_time()
    rows, _ = decode_files([str(path)], bodies)
    return Timing(time.perf_counter() - start, time.process_time() - start_cpu), len(rows)


def profile_local(path: Path, schemas: str, out: str) -> None:
    """cProfile of the local decode, saved to ``out`` and its top entries by own time printed."""
    import cProfile
    import pstats

    from kraftwire.spark_decoders.api import local_decoder
    from kraftwire.spark_decoders.decode.pipeline import decode_files

    bodies = local_decoder(schemas)
    cProfile.runctx("decode_files([str(path)], bodies)", globals(), locals(), out)
    pstats.Stats(out).sort_stats("tottime").print_stats(30)


def _best_cpu(run) -> float:
    """The least CPU seconds of three runs of ``run()``."""
    times = []
    for _ in range(3):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def _recording_decoder(package):
    """A BodyDecoder that decodes no body and records each one it is asked for in ``seen``."""
    from kraftwire.spark_decoders.kafka.bodies import BodyDecoder

    class Recorded(BodyDecoder):
        keep, seen = True, []

        def _decode(self, payload, codec, version, row, problems, start=None):
            if self.keep:
                self.seen.append((payload, codec, version))
            return None

    return Recorded(package)


def _read_body(payload, codec, version):
    """What BodyDecoder._decode reads: past the header (shortcut or codec), then the body."""
    return codec.body_class.read(payload, codec.body_start(payload), version)[0]


def breakdown_pure(path: Path) -> None:
    """``breakdown_local`` in a child process with pure codecs and decoders (``KRAFTWIRE_PURE=1``),
    its lines printed as they come."""
    env = dict(os.environ, KRAFTWIRE_PURE="1")
    subprocess.run([sys.executable, __file__, "--breakdown-of", str(path)], env=env, check=True)


def _no_bodies_decoder(package):
    """A BodyDecoder that knows no API version: every row is built, no body decoder is asked."""
    from kraftwire.spark_decoders.kafka.bodies import BodyDecoder

    class NoBodies(BodyDecoder):
        def knows(self, api_key, api_version):
            return False

    return NoBodies(package)


def breakdown_local(path: Path, schemas: str) -> None:
    """CPU seconds of the local decode by stage, unprofiled: each stage is run on its own (its
    inputs gathered first) and timed as the best of three, so each figure is one stage's cost."""
    import kraftwire.spark_decoders as decoders
    from kraftwire.spark_decoders.api import local_decoder
    from kraftwire.spark_decoders.kafka.bodies import error_codes
    from kraftwire.spark_decoders.packets.capture import CaptureStats
    from kraftwire.spark_decoders.kafka.jsonview import dumps, json_view
    from kraftwire.spark_decoders.decode.pipeline import decode_files, map_file, segments

    bodies = local_decoder(schemas)
    recorder = _recording_decoder(bodies.package)
    decode_files([str(path)], recorder)
    recorder.keep = False
    no_bodies = _no_bodies_decoder(bodies.package)
    work, buf = recorder.seen, map_file(str(path))
    written, messages, expanded, floats, expand_all, answers = _body_stage_inputs(bodies, work)
    drain = collections.deque(maxlen=0).extend  # results dropped as made, as the decode drops them
    stages = [
        (
            "capture records -> TCP segments",
            lambda: drain(segments(buf, None, len(buf), CaptureStats())),
        ),
        (
            "all but bodies (the above, TCP, frames, rows)",
            lambda: decode_files([str(path)], recorder),
        ),
        (
            "the same, no body decoder asked",
            lambda: decode_files([str(path)], no_bodies),
        ),
        ("body reads (generated codecs)", lambda: drain(_read_body(*item) for item in work)),
        (
            "JSON text written by compiled classes",
            lambda: drain(m.to_json_text(v, *records) for m, v, _, records in written),
        ),
        (
            "JSON views (the other bodies)",
            lambda: drain(json_view(m, v, holds) for m, v, holds in messages),
        ),
        ("records fields -> batch JSON", expand_all),
        (
            "dumps (of those views)",
            lambda: drain(dumps(v, may) for v, may in zip(expanded, floats)),
        ),
        ("error_codes scan (responses)", lambda: drain(error_codes(text) for text in answers)),
        ("full decode", lambda: decode_files([str(path)], bodies)),
        ("full decode, rows kept past the next object", lambda: _kept(path, bodies)),
    ]
    print(
        f"local decode, CPU seconds by stage ({len(work):,} bodies; {decoders.IMPLEMENTATION} "
        f"decoders)  {load()}"
    )
    for label, run in stages:
        print(f"  {label:46} {_best_cpu(run):6.2f}")


def _body_stage_inputs(bodies, work: list) -> tuple:
    """What each body stage of ``breakdown_local`` starts from, each made by the stage before:
    (message, version, request, records writer if any) per body whose compiled class writes its
    text, (message, version, holds records) per other body, their views, whether each view's text
    may hold floats, the records stage (run once here), and the responses' texts."""
    from kraftwire.spark_decoders.kafka.jsonview import dumps, json_view

    written, viewed = [], []
    for item in work:
        message = _read_body(*item)
        # a body with records has them written by the decoder's writer (as BodyDecoder passes it)
        records = (bodies._records_text,) if item[1].holds_records else ()
        if item[1].writes_text and message.to_json_text(item[2], *records) is not None:
            written.append((message, item[2], item[1].request, records))
        else:
            viewed.append((item, (message, item[2], item[1].holds_records)))
    work = [item for item, _ in viewed]
    messages = [found for _, found in viewed]
    views = [json_view(message, version, holds) for message, version, holds in messages]
    expanded = [dict(view) for view in views]
    # Whether each body's text is written as one that may hold floats (as BodyDecoder decides).
    floats = [codec.holds_floats for _, codec, _ in work]

    def expand_all():
        for index, ((message, _, holds), view) in enumerate(zip(messages, expanded)):
            if holds and bodies._expand_records(message, view, None):
                floats[index] = True

    expand_all()
    texts = [dumps(view, may) for view, may in zip(expanded, floats)]
    answers = [text for text, (_, codec, _) in zip(texts, work) if not codec.request]
    answers += [m.to_json_text(v, *rec)[0] for m, v, request, rec in written if not request]
    return written, messages, expanded, floats, expand_all, answers


def _kept(path: Path, bodies) -> None:
    """A decode whose rows are still held when the program makes its next object, as a user's
    are: a collector pass over every row that this sets off is counted (the bare "full decode"
    frees its rows first, which takes them off the count that sets passes off)."""
    from kraftwire.spark_decoders.decode.pipeline import decode_files

    rows = decode_files([str(path)], bodies)
    after = _Tracked()  # the first object the collector counts after the decode
    del rows, after


class _Tracked:
    """An object the collector tracks and counts when it is made (an empty list or dict may come
    from a free list, which the count skips)."""


def codec_implementation(package) -> str:
    """Which implementation decodes the bench's specs: compiled (mypyc) or pure, and how many."""
    compiled = [stem for stem in BENCH_SPECS if "._native_" in package.lookup(stem).__module__]
    kind = "native" if len(compiled) == len(BENCH_SPECS) else "mixed" if compiled else "pure"
    forced = (
        " (KRAFTWIRE_PURE set)" if os.environ.get("KRAFTWIRE_PURE", "") not in ("", "0") else ""
    )
    return f"{kind}: {len(compiled)} of the {len(BENCH_SPECS)} specs it uses compiled{forced}"


def decoders_implementation() -> str:
    import kraftwire.spark_decoders as decoders
    from kraftwire.spark_decoders.native.implementation import COMPILED_MODULES

    if decoders.IMPLEMENTATION == "native":
        return f"native: {len(COMPILED_MODULES)} hot-path modules compiled"
    forced = (
        " (KRAFTWIRE_PURE set)" if os.environ.get("KRAFTWIRE_PURE", "") not in ("", "0") else ""
    )
    return f"pure{forced}"


def load() -> str:
    return f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"


def report_local_and_tshark(
    capture: Path, count: int, schemas: str, tshark: bool, both: bool
) -> dict:
    """Local decode (with ``both``, also pure in a child) and tshark, each in wall and CPU
    seconds. "Per core" compares CPU seconds: both run on one core, and on a shared machine CPU
    time is what the work cost, whatever else ran."""
    import kraftwire.spark_decoders as decoders

    figures: dict = {}
    if both:
        figures["local pure"] = _local_line("local pure", count, *time_local_pure(capture))
    local, rows = time_local(capture, schemas)
    label = f"local {decoders.IMPLEMENTATION}" if both else "local"
    figures[label] = _local_line(label, count, local, rows, decoders.IMPLEMENTATION)
    if both:
        print(
            f"kraftwire {label} / local pure per core (CPU seconds): "
            f"{figures['local pure'].cpu_s / local.cpu_s:.2f}x"
        )
    if tshark and shutil.which("tshark"):
        shark = figures["tshark"] = time_tshark(capture)
        print(
            f"tshark -T json:                {shark.wall_s:7.2f} s wall {shark.cpu_s:7.2f} s CPU  "
            f"{count / shark.cpu_s:9,.0f} pkt per CPU second  {load()}"
        )
        for name in [key for key in figures if key.startswith("local")]:
            mine = figures[name]
            print(
                f"kraftwire {name} / tshark per core (CPU seconds): {shark.cpu_s / mine.cpu_s:.1f}x"
                f"  (wall: {shark.wall_s / mine.wall_s:.1f}x; target >= 20x per core)"
            )
    figures["local"] = local
    return figures


def _local_line(label: str, count: int, timing: Timing, rows: int, used: str) -> Timing:
    print(
        f"kraftwire {label + ' (1 core):':24}{timing.wall_s:7.2f} s wall {timing.cpu_s:7.2f} s CPU  "
        f"{count / timing.cpu_s:9,.0f} pkt per CPU second  ({rows:,} exchanges, {used} "
        f"decoders)  {load()}"
    )
    return timing


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--quick", action="store_true", help="5,000 packets (a smoke run)")
    parser.add_argument("--rounds", type=int, default=3, help="timed Spark runs per setting")
    parser.add_argument(
        "--warmups",
        type=int,
        default=6,
        help="untimed Spark runs per setting before the timed ones (default 6): the JVM's JIT "
        "compiles Spark's per-row code over the first few queries, as a long query on a large "
        "capture does early on; 1 times the second query of a fresh JVM",
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="profile the local decode into FILE, then stop"
    )
    parser.add_argument(
        "--breakdown", action="store_true", help="CPU seconds of each local stage, then stop"
    )
    parser.add_argument(
        "--native",
        action="store_true",
        help="compile with mypyc first (once, cached) the codecs of the specs the capture uses and "
        "the decoders' hot path; time the local decode both pure and compiled",
    )
    parser.add_argument(
        "--pcapng",
        action="store_true",
        help="write the capture as pcapng (enhanced packet blocks, as dumpcap does), not pcap",
    )
    parser.add_argument(
        "--command",
        action="store_true",
        help="time the commands (kraftwire decode, tshark -T json, kraftwire decode --spark on "
        "local[1] and local[2]) on a capture rich in record batches, cached between runs",
    )
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--plan", choices=("both", "source", "split"), default="both")
    parser.add_argument("--no-tshark", action="store_true")
    # internal: time the local decode of an existing capture, print "wall cpu rows implementation"
    parser.add_argument("--time-local", metavar="CAPTURE", help=argparse.SUPPRESS)
    # internal: the stages of the local decode of an existing capture (--breakdown's child)
    parser.add_argument("--breakdown-of", metavar="CAPTURE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.packets < 1 or args.rounds < 1 or args.warmups < 1:
        parser.error("--packets, --rounds and --warmups must be at least 1")
    if args.profile and os.path.lexists(args.profile):
        parser.error(f"--profile {args.profile}: already exists (the bench writes only new files)")
    if args.profile and not os.path.isdir(os.path.dirname(os.path.abspath(args.profile))):
        parser.error(f"--profile {args.profile}: no such folder")
    for option, capture in (
        ("--time-local", args.time_local),
        ("--breakdown-of", args.breakdown_of),
    ):
        if capture is not None and not os.path.isfile(capture):
            parser.error(f"{option} {capture}: no such capture file")
    return args


# The records layer's compiled runtime modules (kraftwire.generated's batch reader, metadata value
# views and batches_to_json), built as ``make native`` builds them unless a current build is there;
# alone, without the 36 bundled codecs.
_BUILD_RECORDS_RUNTIME = """
from pathlib import Path
import kraftwire.generated._view_reader as reader
from kraftwire.generated import records
if reader.IMPLEMENTATION != "native" or "_native_" not in records.batches_to_json.__module__:
    from kraftwire.codegen.native.build import build_native
    build_native([], "kraftwire.generated", Path(reader.__file__).parent)
    print("compiled the records layer's runtime modules with mypyc")
"""


def records_implementation() -> str:
    """Which records layer decodes the records fields: its compiled runtime modules or pure ones."""
    from kraftwire.generated import records
    from kraftwire.generated._view_reader import IMPLEMENTATION

    compiled = IMPLEMENTATION == "native" and "_native_" in records.batches_to_json.__module__
    return "native (batch reader, value views, batches_to_json)" if compiled else "pure"


def _codecs(schemas: str, native: bool):
    """The codec package of Kafka's specs, and with ``native`` the compiled codecs and decoders
    built first (each only when missing): both choose their implementation when imported."""
    if native:  # in children: this process has imported neither the decoders nor the records
        subprocess.run(
            [sys.executable, "-m", "kraftwire.spark_decoders.native.build", "--if-needed"],
            check=True,
        )
        subprocess.run([sys.executable, "-c", _BUILD_RECORDS_RUNTIME], check=True)
    from kraftwire.codegen.package_cache import compile_native, generated_codecs

    if native:
        built = compile_native([Path(schemas)], BENCH_SPECS)
        print(
            f"compiled {len(built)} codecs with mypyc ({len(BENCH_SPECS) - len(built)} already were)"
        )
    package, _ = generated_codecs([Path(schemas)])
    print(f"codecs: Kafka's specs from ../shared, {codec_implementation(package)}")
    print(f"decoders: {decoders_implementation()}")
    print(f"records layer: {records_implementation()}")
    return package


def main() -> int:
    from shared import shared_path

    args = _arguments()
    schemas = str(shared_path(SHARED_SCHEMAS))
    if args.time_local:
        import kraftwire.spark_decoders as decoders

        timing, rows = time_local(Path(args.time_local), schemas)
        print(timing.wall_s, timing.cpu_s, rows, decoders.IMPLEMENTATION)
        return 0
    if args.breakdown_of:
        breakdown_local(Path(args.breakdown_of), schemas)
        return 0
    package = _codecs(schemas, args.native)
    if args.command:
        return time_commands(args, package)
    workdir = Path(tempfile.mkdtemp(prefix="kraftwire-bench-"))
    try:
        capture = workdir / ("bench.pcapng" if args.pcapng else "bench.pcap")
        count = build_capture(capture, 5_000 if args.quick else args.packets, package, args.pcapng)
        size_mb = capture.stat().st_size / 1e6
        print(
            f"capture: {count:,} packets, {size_mb:.1f} MB ({capture.suffix[1:]}), "
            "mixed KRaft and classic exchanges"
        )
        if args.profile:
            profile_local(capture, schemas, args.profile)
            return 0
        if args.breakdown:
            breakdown_local(capture, schemas)
            if args.native:  # the pure decoders' stages in the same run, for comparison
                breakdown_pure(capture)
            return 0
        figures = report_local_and_tshark(
            capture, count, schemas, not args.no_tshark, both=args.native
        )
        if not args.no_spark:
            small = workdir / "small.pcap"  # Spark's own cost per query: a few exchanges
            build_capture(small, 200, package)
            report_spark(
                capture, count, schemas, figures, args.rounds, args.plan, args.warmups, small
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def time_commands(args: argparse.Namespace, package) -> int:
    """``--command``: the records-rich capture (built once, then cached) and the commands' times."""
    from _decode_command import report_commands
    from _records_capture import cached_capture

    capture, count = cached_capture(5_000 if args.quick else args.packets, package)
    small, _ = cached_capture(100, package)
    print(
        f"capture: {capture} ({count:,} packets, {capture.stat().st_size / 1e6:.1f} MB, pcap): "
        "gzip batches, transaction markers, KRaft control and metadata records"
    )
    report_commands(capture, count, small, args.rounds, not args.no_tshark, not args.no_spark)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
