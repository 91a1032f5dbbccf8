"""Indented source lines for the native emitter, and its one refusal."""

from __future__ import annotations


class Unsupported(Exception):
    """The spec uses a form the native target does not emit; its module stays pure."""


class Lines:
    """Indented source lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def block(self, header: str) -> "_Block":
        self(header)
        return _Block(self)


class _Block:
    def __init__(self, out: Lines) -> None:
        self.out = out

    def __enter__(self) -> None:
        self.out.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.out.depth -= 1
