"""A small datadriven runner in the spirit of cockroachdb/datadriven (as used by etcd-io/raft).

File format: a leading ``#`` paragraph (what the file proves), then blocks of::

    command arg key=value ...
    ----
    expected output lines

separated by blank lines. Lines starting with ``#`` between blocks are comments. Run pytest with
``--rewrite`` (tests/conftest.py) to write the actual output over the expected blocks in place, as
etcd's datadriven ``-rewrite`` does; commands and comments are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass
class Case:
    line_no: int
    command: str
    expected: str


@dataclass
class Command:
    name: str
    args: list[str]
    kwargs: dict[str, str]

    def arg(self, i: int, default: str | None = None) -> str:
        if i < len(self.args):
            return self.args[i]
        if default is None:
            raise ValueError(f"{self.name}: missing argument {i + 1}")
        return default

    def int_arg(self, i: int, default: int | None = None) -> int:
        return int(self.arg(i, None if default is None else str(default)))


def parse_command(line: str) -> Command:
    parts = line.split()
    args, kwargs = [], {}
    for p in parts[1:]:
        if "=" in p:
            k, v = p.split("=", 1)
            kwargs[k] = v
        else:
            args.append(p)
    return Command(parts[0], args, kwargs)


def parse_file(text: str) -> tuple[list[str], list[Case], list[str]]:
    """Returns (header lines, cases, raw lines)."""
    lines = text.split("\n")
    header: list[str] = []
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        header.append(lines[i])
        i += 1
    cases: list[Case] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            i += 1
            continue
        start = i
        cmd_lines = []
        while i < len(lines) and lines[i] != "----":
            cmd_lines.append(lines[i])
            i += 1
        if i >= len(lines):
            raise ValueError(f"line {start + 1}: command without ---- separator")
        i += 1
        out: list[str] = []
        while i < len(lines) and lines[i].strip() != "":
            out.append(lines[i])
            i += 1
        cases.append(Case(start + 1, " ".join(cmd_lines), "\n".join(out)))
    return header, cases, lines


def run_file(path: Path, handler: Callable[[Command], str], rewrite: bool = False) -> None:
    """Run every block of ``path`` through ``handler``; stop at the first block whose output differs
    from the expected one, or (``rewrite``) run them all and write their output into the file."""
    text = path.read_text()
    header, cases, _ = parse_file(text)
    if not header:
        raise AssertionError(f"{path.name}: must open with a '#' paragraph saying what it proves")
    actual_blocks = []
    failures = []
    for case in cases:
        got = handler(parse_command(case.command)).rstrip("\n")
        actual_blocks.append((case, got))
        if got != case.expected and not rewrite:
            failures.append(
                f"{path.name}:{case.line_no}: {case.command}\n--- expected\n{case.expected}\n--- got\n{got}\n"
            )
            break  # later blocks depend on this one
    if rewrite:
        _rewrite(path, text, actual_blocks)
        return
    if failures:
        raise AssertionError("\n".join(failures))


def _rewrite(path: Path, text: str, blocks: list[tuple[Case, str]]) -> None:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    by_line = {c.line_no - 1: (c, got) for c, got in blocks}
    while i < len(lines):
        if i in by_line:
            case, got = by_line[i]
            while lines[i] != "----":
                out.append(lines[i])
                i += 1
            out.append("----")
            i += 1
            while i < len(lines) and lines[i].strip() != "":
                i += 1
            if got:
                out.extend(got.split("\n"))
            continue
        out.append(lines[i])
        i += 1
    path.write_text("\n".join(out))
