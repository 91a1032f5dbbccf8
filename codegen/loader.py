"""Reading spec files exactly as Kafka writes them: JSON with ``//`` and ``/* */`` comments."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .archives import is_archive
from .facts import is_fact_file


class SpecSyntaxError(ValueError):
    """A spec file that is not JSON once its comments are removed."""


@dataclass(frozen=True)
class RawSpec:
    """One spec file as parsed JSON, before validation."""

    path: Path
    data: object
    text: str = ""  # the file as read (its // comments become the generated docstrings)

    @property
    def spec(self) -> dict[str, Any]:
        """The spec as a JSON object (what every spec that passed validation is)."""
        if not isinstance(self.data, dict):
            raise SpecSyntaxError(
                f"{self.path.name}: a spec is a JSON object, not {self.data!r:.40}"
            )
        return self.data


def strip_comments(text: str) -> str:
    """Remove ``//`` line comments and ``/* */`` block comments that stand outside string literals.

    Newlines are kept so that JSON error positions still point at the right line.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SpecSyntaxError("unterminated /* comment")
            out.append("\n" * text.count("\n", i, end))
            i = end + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def spec_comments(text: str) -> list[str]:
    """The spec's own ``//`` comment lines (its purpose and version history), without licence text.

    Comments are grouped into paragraphs by blank lines; a paragraph that mentions a licence (the
    Apache header of Kafka's files) is left out.
    """
    paragraphs: list[list[str]] = [[]]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("//"):
            if not stripped or stripped.startswith(("{", "}", "[", "]")):
                paragraphs.append([])
            continue
        body = stripped[2:].strip()
        if body:
            paragraphs[-1].append(body)
        else:
            paragraphs.append([])
    kept = [p for p in paragraphs if p and not any("licen" in line.lower() for line in p)]
    return [line for paragraph in kept for line in paragraph]


def load_raw(path: Path) -> RawSpec:
    return parse_raw(path, path.read_text(encoding="utf-8"))


def parse_raw(path: Path, text: str) -> RawSpec:
    """A spec from its text; ``path`` names it (for a spec read from an archive, a path inside it)."""
    try:
        stripped = strip_comments(text)
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise SpecSyntaxError(f"not valid spec JSON: {_describe(exc, stripped)}") from None
    except SpecSyntaxError as exc:
        raise SpecSyntaxError(f"not valid spec JSON: {exc}") from None
    return RawSpec(path, data, text)


def _describe(error: json.JSONDecodeError, text: str) -> str:
    """The decoder's message, or for a trailing comma (JSON has none, Kafka's parser rejects them)
    the comma's own line and column, which the decoder's message points past."""
    before = text[: error.pos].rstrip()
    if before.endswith(",") and text[error.pos : error.pos + 1] in ("}", "]"):
        comma = len(before) - 1
        line = text.count("\n", 0, comma) + 1
        column = comma - (text.rfind("\n", 0, comma) + 1) + 1
        closer = text[error.pos]
        return f"trailing comma before '{closer}': line {line} column {column} (char {comma})"
    return str(error)


def spec_files(directories: list[Path]) -> list[Path]:
    """Every ``*.json`` spec below the given directories, in a stable order (archives: ``archive_specs``).

    The fact files (``facts.FACT_FILES``) are JSON beside the specs but no spec: they are left out.
    """
    files: list[Path] = []
    for directory in directories:
        directory = Path(directory)
        if directory.is_file():
            if not is_archive(directory) and not is_fact_file(directory):
                files.append(directory)
        else:
            files.extend(
                p for p in directory.rglob("*.json") if p.is_file() and not is_fact_file(p)
            )
    return sorted(set(files), key=lambda p: (p.name, str(p)))
