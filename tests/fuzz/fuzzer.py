"""A seeded mutation fuzzer over every decoder kraftwire exposes to outside bytes (see targets.py).

    .venv/bin/python tests/fuzz/fuzzer.py --inputs 10000000 --jobs 2 --seed 1   # the long run
    .venv/bin/python tests/fuzz/fuzzer.py --inputs 10000000 --jobs 2 --minutes 45
    .venv/bin/python tests/fuzz/fuzzer.py --inputs 200000 --findings found.jsonl
    .venv/bin/python tests/fuzz/fuzzer.py --replay tests/fuzz/corpus.jsonl
    .venv/bin/python tests/fuzz/fuzzer.py --atheris -- -runs=1000000

``--minutes`` stops each worker early (the summary counts what ran); ``--findings`` appends each new
finding as it is found; ``--replay`` runs a corpus file. ``--atheris`` (``pip install '.[fuzz]'``)
hands the choice of bytes to libFuzzer, coverage-guided: the first two input bytes pick the target;
instrumenting every loaded function takes a few minutes before it starts.

Each worker process draws inputs from its own ``random.Random(seed, worker)`` stream: pick a target,
pick one of its seeds, apply 1-4 mutations (bit flips, interesting integers in big-endian and varint
form, tagged-field sections with edge counts and sizes, inserted, deleted, repeated or spliced
bytes; for JSON targets, a member replaced by NaN, infinity, 1e400, a lone surrogate, a huge
integer, a wrong type...). A run is deterministic for a given ``--seed`` and ``--jobs``. Three
things are findings:

* an escape: the input raised something outside the ProtocolError family (DecodeError, ...);
* a hang: the input used more than ``--deadline`` seconds of CPU (a profiling timer, so a busy
  machine does not cause false hangs);
* an allocation: on every ``--alloc-every``-th input, traced by tracemalloc, the peak went over
  16 x the input + 1 MiB, beyond the bytes decompression really produced (counted at the
  decompressor, twice: the buffer and the finished bytes).

Findings are minimised (bytes removed while the same finding reproduces) and printed as JSON lines,
the format of tests/fuzz/corpus.jsonl, which tests/fuzz/test_fuzz.py replays.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import signal
import sys
import time
import tracemalloc
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import targets as fuzz_targets  # noqa: E402
from mutate import mutate_bytes, mutate_json  # noqa: E402

MIB = 1024 * 1024
WORKER_MEMORY_CAP = (
    4 * 1024 * MIB
)  # address space per worker: a runaway allocation fails, not the host


class Hang(BaseException):
    """Raised by the CPU timer; a BaseException so that no decoder's ``except Exception`` hides it."""


class Finding(NamedTuple):
    kind: str  # "escape", "hang" or "allocation"
    target: str
    data: object  # bytes, or a JSON value for JSON targets
    detail: str

    def key(self) -> tuple:
        return (self.kind, self.target.split(":")[1], self.detail.split(":")[0])

    def to_line(self) -> str:
        entry = {"kind": self.kind, "target": self.target, "detail": self.detail[:300]}
        if isinstance(self.data, bytes):
            entry["hex"] = self.data.hex()
        else:
            entry["json"] = fuzz_targets.dumps(self.data)
        return json.dumps(entry)


def entry_input(entry: dict) -> object:
    return bytes.fromhex(entry["hex"]) if "hex" in entry else json.loads(entry["json"])


def input_size(data: object) -> int:
    return len(data) if isinstance(data, bytes) else len(fuzz_targets.dumps(data))


# -- running one input ------------------------------------------------------------------------------


class Runner:
    """Runs inputs against targets under a CPU deadline, with optional allocation tracing."""

    def __init__(self, targets: dict, deadline: float) -> None:
        self.targets = targets
        self.deadline = deadline
        self.documented = tuple({t.package.ProtocolError for t in targets.values()})
        self.decompressed = 0
        signal.signal(signal.SIGPROF, self._on_timer)
        self._count_decompressed_bytes()

    @staticmethod
    def _on_timer(signum, frame) -> None:
        raise Hang()

    def _count_decompressed_bytes(self) -> None:
        """Wrap the decompressor the batch readers call, so allocation checks can leave its output out."""
        for package in {t.package for t in self.targets.values()}:
            for module_name in ("_v2_read", "_legacy"):
                module = sys.modules.get(f"{package.__name__}.{module_name}")
                if module is None:
                    continue
                real = module.decompress

                def counting(*args, _real=real, **kwargs):
                    out = _real(*args, **kwargs)
                    self.decompressed += len(out)
                    return out

                module.decompress = counting

    def run(self, name: str, data: object, trace: bool = False) -> Finding | None:
        target = self.targets[name]
        self.decompressed = 0
        if trace:
            tracemalloc.start()
        signal.setitimer(signal.ITIMER_PROF, self.deadline)
        try:
            target.run(data)
        except Hang:
            return Finding("hang", name, data, f"hang: over {self.deadline} s of CPU")
        except self.documented:
            pass
        except RecursionError:
            return Finding("escape", name, data, "RecursionError")
        except Exception as exc:
            return Finding("escape", name, data, f"{type(exc).__name__}: {_where(exc)}: {exc}")
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            if trace:
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
        if trace:
            allowed = 16 * input_size(data) + MIB + 2 * self.decompressed
            if peak > allowed:
                return Finding("allocation", name, data, f"allocation: peak {peak} > {allowed}")
        return None


def _where(exc: BaseException) -> str:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "?"
    return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"


# -- minimising --------------------------------------------------------------------------------------


def minimise(runner: Runner, finding: Finding, budget: int = 400) -> Finding:
    """Remove byte ranges (halves down to single bytes) while the same finding reproduces."""
    if not isinstance(finding.data, bytes):
        return finding
    trace = finding.kind == "allocation"
    best = finding
    chunk = max(1, len(best.data) // 2)
    while chunk >= 1 and budget > 0:
        start = 0
        while start < len(best.data) and budget > 0:
            candidate = best.data[:start] + best.data[start + chunk :]
            budget -= 1
            result = runner.run(finding.target, candidate, trace=trace)
            if result is not None and result.key() == finding.key():
                best = result
            else:
                start += chunk
        chunk //= 2
    return best


# -- the worker loop ---------------------------------------------------------------------------------


# How often each family of targets is picked (within a family, every target alike).
FAMILY_WEIGHTS = {
    "decode": 40,
    "request-frame": 6,
    "response-frame": 10,
    "records": 18,
    "control": 6,
    "metadata": 4,
    "coordinator": 4,
    "json": 12,
}


def _families(targets: dict) -> tuple[list[list[str]], list[int]]:
    groups: dict[str, list[str]] = {}
    for name in sorted(targets):
        family = name.split(":")[1]
        family = (
            "records"
            if family in ("decode-batches", "decode-resealed", "batch-from-json")
            else family
        )
        groups.setdefault(family, []).append(name)
    families = sorted(groups)
    return [groups[f] for f in families], [FAMILY_WEIGHTS.get(f, 5) for f in families]


def worker(job: tuple) -> dict:
    seed, index, count, deadline, alloc_every, findings_path, only, seconds = job
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_CAP, WORKER_MEMORY_CAP))
    targets = fuzz_targets.all_targets()
    runner = Runner(targets, deadline)
    if only:
        targets = {name: t for name, t in targets.items() if only in name}
    groups, weights = _families(targets)
    byte_targets = [t for t in targets.values() if t.kind == "bytes"]
    rng = random.Random(f"{seed}-{index}")
    findings: dict[tuple, tuple[Finding, int]] = {}
    per_kind = {"escape": 0, "hang": 0, "allocation": 0}
    started = time.perf_counter()
    done = 0
    for number in range(count):
        if seconds and number % 1000 == 0 and time.perf_counter() - started > seconds:
            break
        done = number + 1
        target = targets[rng.choice(rng.choices(groups, weights)[0])]
        seed_input = rng.choice(target.seeds)
        if target.kind == "bytes":
            donors = target if rng.random() < 0.5 else rng.choice(byte_targets)
            data = mutate_bytes(rng, seed_input, lambda: rng.choice(donors.seeds))
        else:
            data = mutate_json(rng, seed_input)
        finding = runner.run(target.name, data, trace=alloc_every > 0 and number % alloc_every == 0)
        if number % 100_000 == 99_999:
            rate = (number + 1) / (time.perf_counter() - started)
            print(f"worker {index}: {number + 1} inputs, {rate:.0f}/s, {per_kind}", file=sys.stderr)
        if finding is None:
            continue
        per_kind[finding.kind] += 1
        known = findings.get(finding.key())
        if known is None:
            finding = minimise(runner, finding)
            findings[finding.key()] = (finding, 1)
            if findings_path is not None:
                with open(findings_path, "a", encoding="utf-8") as out:
                    out.write(finding.to_line() + "\n")
        else:
            findings[finding.key()] = (known[0], known[1] + 1)
    return {
        "count": done,
        "seconds": time.perf_counter() - started,
        "per_kind": per_kind,
        "findings": [(f.to_line(), n) for f, n in findings.values()],
    }


def fuzz(
    inputs: int,
    seed: int,
    jobs: int,
    deadline: float,
    alloc_every: int,
    findings: Path | None = None,
    only: str = "",
    seconds: float = 0,
) -> dict:
    """Run ``inputs`` inputs over ``jobs`` worker processes; the merged summary. New findings are
    appended to ``findings`` as they are found (a killed run keeps them). With ``seconds``, each
    worker stops when that much time has passed, and the summary counts the inputs it ran."""
    share = [inputs // jobs + (1 if i < inputs % jobs else 0) for i in range(jobs)]
    work = [
        (seed, i, share[i], deadline, alloc_every, findings, only, seconds) for i in range(jobs)
    ]
    started = time.perf_counter()
    if jobs == 1:
        results = [worker(work[0])]
    else:
        with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=1) as pool:
            results = pool.map(worker, work, chunksize=1)
    elapsed = time.perf_counter() - started
    per_kind = {kind: sum(r["per_kind"][kind] for r in results) for kind in results[0]["per_kind"]}
    findings = {}
    for result in results:
        for line, n in result["findings"]:
            entry = json.loads(line)
            key = (entry["kind"], entry["target"].split(":")[1], entry["detail"].split(":")[0])
            findings.setdefault(key, [entry, 0])[1] += n
    fuzzing = max(r["seconds"] for r in results)  # without start-up (loading the targets)
    return {
        "inputs": sum(r["count"] for r in results),
        "seconds": round(elapsed, 1),
        "per_second": round(sum(r["count"] for r in results) / max(fuzzing, 1e-9)),
        "per_kind": per_kind,
        "findings": [dict(entry, times=n) for entry, n in findings.values()],
    }


def replay(path: Path, deadline: float) -> list[dict]:
    """Run every input of a corpus file once, traced; per entry, the finding it still gives (None
    when it is handled) or ``skipped`` when its target does not exist here (no ../shared)."""
    targets = fuzz_targets.all_targets()
    runner = Runner(targets, deadline)
    results = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        entry = json.loads(line)
        if entry["target"] not in targets:
            results.append({"line": number, "skipped": True})
            continue
        finding = runner.run(entry["target"], entry_input(entry), trace=True)
        results.append({"line": number, "finding": None if finding is None else finding.detail})
    return results


def _atheris_main(argv: list[str], deadline: float) -> None:
    """Coverage-guided fuzzing with atheris (optional): the first input byte picks the target."""
    import atheris

    targets = fuzz_targets.all_targets()
    runner = Runner(targets, deadline)
    names = sorted(targets)
    atheris.instrument_all()  # coverage feedback from every loaded module, decoders included

    def one_input(data: bytes) -> None:
        if len(data) < 2:
            return
        name = names[int.from_bytes(data[:2], "big") % len(names)]
        payload: object = data[2:]
        if targets[name].kind == "json":
            try:
                payload = json.loads(data[2:])
            except ValueError:
                return
        finding = runner.run(name, payload, trace=data[0] % 64 == 0)
        if finding is not None:
            print(finding.to_line(), flush=True)
            raise RuntimeError(finding.detail)

    atheris.Setup([sys.argv[0], *argv], one_input)
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--deadline", type=float, default=1.0, help="CPU seconds per input")
    parser.add_argument(
        "--alloc-every", type=int, default=64, help="trace every Nth input (0: never)"
    )
    parser.add_argument("--findings", type=Path, help="append new findings to this JSON-lines file")
    parser.add_argument("--atheris", action="store_true", help="use atheris (extra args after --)")
    parser.add_argument("--minutes", type=float, default=0, help="stop after this long (0: never)")
    parser.add_argument("--only", default="", help="fuzz only targets whose name contains this")
    parser.add_argument("--replay", type=Path, help="run a corpus file's inputs, print the results")
    args, rest = parser.parse_known_args(argv)
    if args.replay:
        results = replay(args.replay, args.deadline)
        print(json.dumps(results))
        return 1 if any(r.get("finding") for r in results) else 0
    if args.atheris:
        _atheris_main([a for a in rest if a != "--"], args.deadline)
        return 0
    if args.inputs < 1 or args.jobs < 1:
        parser.error("--inputs and --jobs must be at least 1")
    summary = fuzz(
        args.inputs,
        args.seed,
        args.jobs,
        args.deadline,
        args.alloc_every,
        args.findings,
        args.only,
        args.minutes * 60,
    )
    print(json.dumps(summary, indent=1))
    return 1 if summary["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
