"""How long generating every one of Kafka's 292 specs takes (load, validate, render, black, write).

    .venv/bin/python bench/codegen.py [--jobs N]

Prints the phases separately so a slow step is visible; the issue's bar is "well under a minute".
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from kraftwire.codegen.emit import generate_package
from kraftwire.codegen.generate import load_specs, write
from kraftwire.codegen.output import plan_output

SHARED = Path(os.environ.get("KRAFTWIRE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--jobs", type=int, default=None, help="render/format processes (default: cores)"
    )
    args = parser.parse_args()
    schemas = SHARED / "kafka-schemas"
    if not schemas.is_dir():
        print(f"{schemas} is missing: ../shared must be beside the repo", file=sys.stderr)
        return 2
    started = time.perf_counter()
    specs = load_specs([schemas])
    loaded = time.perf_counter()
    files = generate_package(specs, "kwall", jobs=args.jobs)
    rendered = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        write(plan_output(files, Path(tmp) / "kwall"))
    written = time.perf_counter()
    lines = sum(f.text.count("\n") for f in files)
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    print(
        f"specs: {len(specs)} files, {sum(not s.is_placeholder for s in specs)} modules, {lines:,} lines"
    )
    print(f"load + validate: {loaded - started:6.1f} s")
    print(f"render + black:  {rendered - loaded:6.1f} s")
    print(f"write:           {written - rendered:6.1f} s")
    print(f"total:           {written - started:6.1f} s  (bar: well under 60 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
