"""``kraftwire codegen --schemas SOURCE [SOURCE ...] --out DIR [--package NAME]``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .generate import Generation

DESCRIPTION = """\
Generate Python codecs from Kafka message specs. --out DIR is the package folder itself; it is
created when missing. Only files that start with kraftwire's header (and, in a package kraftwire
made, the runtime modules it copies) are ever overwritten or removed. A folder that holds anything
else is refused; --force generates beside those files and still never overwrites or removes them.
--package NAME is the dotted import name the package will have (default: the folder's name); Python
imports a package by its folder's name, so NAME's last part must be the folder's name:
`--out src/myapp/kafka --package myapp.kafka`."""


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:  # the words of `kraftwire decode --jobs`
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--schemas",
        nargs="+",
        type=Path,
        required=True,
        metavar="SOURCE",
        help="spec folders (searched recursively for *.json), spec files, Kafka jars "
        "(kafka-clients-*.jar, ...) or a Kafka release tarball (kafka_2.13-*.tgz)",
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="the package folder to write"
    )
    parser.add_argument(
        "--package",
        default=None,
        metavar="NAME",
        help="dotted import name; its last part must be DIR's name (default: DIR's name)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="write even though DIR holds files kraftwire did not write (they are kept)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and list the files that differ from a fresh generation",
    )
    parser.add_argument(
        "--native",
        action="store_true",
        help="also compile a typed codec per spec with mypyc (needs the `native` extra and a C "
        "compiler) and place the extension modules into DIR; the package uses them when importable",
    )
    parser.add_argument(
        "--jobs",
        type=_jobs,
        default=None,
        metavar="N",
        help="render modules in N processes (default: one per core); same output",
    )


def run(args: argparse.Namespace) -> int:
    from .generate import PackageNameError, SpecSetError, prepare
    from .output import OutputError, apply, early_refusal, refusal

    started = time.perf_counter()
    if args.native and args.check:
        return _fail("--native and --check do not go together (--check writes nothing)", 2)
    missing = [source for source in args.schemas if not source.exists()]
    if missing:
        return _fail(f"--schemas {missing[0]}: no such file or folder", 2)
    bar = ProgressBar(sys.stderr)
    try:
        reason = None if args.check else early_refusal(args.out, args.force)
        if reason is not None:
            return _fail(reason, 2)
        generation = prepare(
            args.schemas, args.out, args.package, jobs=args.jobs, progress=bar.update
        )
    except (PackageNameError, OutputError) as exc:
        return _fail(str(exc), 2)
    except SpecSetError as exc:
        for line in exc.errors:
            print(f"kraftwire codegen: {line}", file=sys.stderr)
        return 1
    finally:
        bar.close()
    plan = generation.plan
    if args.check:
        return _report_check(plan.differences, args.out)
    reason = refusal(plan, args.force)
    if reason is not None:
        return _fail(reason, 2)
    try:
        apply(plan)
    except OutputError as exc:
        return _fail(str(exc), 1)
    if generation.placeholders:
        names = ", ".join(generation.placeholders)
        print(
            f"skipped {len(generation.placeholders)} placeholder specs "
            f"(validVersions none): {names}",
            file=sys.stderr,
        )
    elapsed = time.perf_counter() - started
    print(
        f"generated {generation.module_count} modules into {args.out} "
        f"({len(plan.write)} files written, {len(plan.remove)} removed) in {elapsed:.1f}s",
        file=sys.stderr,
    )
    return _build_native(generation, args) if args.native else 0


def _build_native(generation: "Generation", args: argparse.Namespace) -> int:
    try:
        from .native.build import NativeBuildError, build_native
    except ImportError as exc:  # mypy (mypyc) is not installed
        return _fail(f"--native needs mypyc: pip install 'kraftwire[native]' ({exc})", 2)
    from .generate import package_name

    try:
        built = build_native(
            generation.specs, package_name(args.out, args.package), args.out, args.jobs
        )
    except NativeBuildError as exc:
        return _fail(str(exc), 1)
    for line in built.skipped:
        print(f"left pure: {line}", file=sys.stderr)
    print(
        f"compiled {len(built.compiled)} codecs with mypyc into {args.out} in {built.seconds:.0f}s "
        f"({built.extension_bytes / 1e6:.1f} MB of extension modules)",
        file=sys.stderr,
    )
    return 0


def _report_check(differences: list[str], out_dir: Path) -> int:
    if not differences:
        print(f"{out_dir} is up to date", file=sys.stderr)
        return 0
    print(
        f"{out_dir} differs from a fresh generation in {len(differences)} files:", file=sys.stderr
    )
    for name in differences:
        print(f"  {name}", file=sys.stderr)
    return 1


def _fail(message: str, status: int) -> int:
    print(f"kraftwire codegen: {message}", file=sys.stderr)
    return status


class ProgressBar:
    """``[#######.......] 120/292 modules``, redrawn in place on a terminal; silent otherwise.

    A dozen lines of our own rather than tqdm: the generator needs one bar, and the codegen's
    dependencies stay the ones it renders with.
    """

    WIDTH = 30

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self.drawn = 0

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        filled = self.WIDTH * done // total
        line = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total} modules"
        self.stream.write("\r" + line)
        self.stream.flush()
        self.drawn = len(line)

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()
            self.drawn = 0
