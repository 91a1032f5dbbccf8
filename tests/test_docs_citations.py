"""Every document the repository cites is one it holds, and every section it cites exists.

A reader of a docstring, comment, template or Markdown page must be able to open what it points at
from a clone alone. So in every tracked ``.py``, ``.md`` and ``.j2`` file:

- a cited Markdown path (``docs/kraft.md``, ``README.md``) names a file of the repository, from the
  repository's root or from the citing file's folder;
- a section sign (``§5.2``, ``§7.2-§7.4``) refers to the nearest Markdown path cited before it in the
  same file (in a Markdown page: on the same line, else the page itself), and that document has a
  heading with that number (``### 5.2 ...``);
- nothing cites the notes beside the clone (``../shared/docs``): they are not shipped, so the facts the
  code relies on are said in ``docs/`` instead. Kafka's specs, vectors and captures in ``../shared``
  stay test *inputs* (named where a test reads them), not citations.

A bare file name that is a whole string literal (``"kraft-apis.md"``) is a path a test opens, not a
citation, and is left alone.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MD_PATH = re.compile(r"(?<![\w/.:-])((?:\.{1,2}/)*[\w][\w./-]*\.md)(?![\w])")
SECTIONS = re.compile(r"§\s?(\d+(?:\.\d+)*)")
SHARED_DOCS = re.compile(r"(?:\.\./)?shared/docs/\w")
URL = re.compile(r"https?://\S+")


def cited_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    this_test = str(Path(__file__).resolve().relative_to(REPO))  # its examples are bad on purpose
    return [
        name for name in listed if name.endswith((".py", ".md", ".j2")) and name != this_test
    ]


def headings(document: Path) -> set[str]:
    """The section numbers of a Markdown document: ``## 5. Leader`` and ``### 5.2 High ...``."""
    numbers = set()
    for line in document.read_text().splitlines():
        found = re.match(r"#+\s+(\d+(?:\.\d+)*)\.?\s", line)
        if found:
            numbers.add(found.group(1))
    return numbers


def resolve(cited: str, citing: str) -> Path | None:
    for base in (REPO, (REPO / citing).parent):
        candidate = (base / cited).resolve()
        if candidate.is_file() and candidate.is_relative_to(REPO):
            return candidate
    return None


def is_whole_literal(line: str, start: int, end: int) -> bool:
    before, after = line[start - 1 : start], line[end : end + 1]
    return before in ("'", '"') and after == before


def line_problems(line: str, citing: str, current: list[Path | None]) -> list[str]:
    """Problems on one line; ``current`` carries the last cited document to the next line."""
    line = URL.sub("", line)
    found = []
    if SHARED_DOCS.search(line):
        found.append("cites the notes in ../shared/docs (not in the repository)")
    events = [(m.start(), "path", m) for m in MD_PATH.finditer(line)]
    events += [(m.start(), "section", m) for m in SECTIONS.finditer(line)]
    for _, kind, match in sorted(events, key=lambda event: event[0]):
        if kind == "path":
            if is_whole_literal(line, match.start(1), match.end(1)):
                continue
            document = resolve(match.group(1), citing)
            current[0] = document
            if document is None:
                found.append(f"cites {match.group(1)}, which the repository does not hold")
        elif current[0] is None:
            found.append(f"§{match.group(1)} refers to no document the repository holds")
        elif match.group(1) not in headings(current[0]):
            name = current[0].relative_to(REPO)
            found.append(f"§{match.group(1)}: {name} has no section with that number")
    return found


def problems_in(citing: str) -> list[str]:
    """In code a citation carries over the lines of its comment or docstring; in a Markdown page a
    section sign with no document before it on its line is one of the page's own sections."""
    current: list[Path | None] = [None]
    found = []
    for number, line in enumerate((REPO / citing).read_text().splitlines(), 1):
        if citing.endswith(".md"):
            current[0] = REPO / citing
        found += [f"{citing}:{number}: {problem}" for problem in line_problems(line, citing, current)]
    return found


def all_problems() -> list[str]:
    return [problem for citing in cited_files() for problem in problems_in(citing)]


def test_every_citation_resolves_inside_the_repository() -> None:
    files = cited_files()
    assert len(files) > 100 and "README.md" in files
    found = all_problems()
    assert not found, f"{len(found)} citations point outside the repository:\n" + "\n".join(found)


def test_the_checker_catches_each_kind_of_bad_citation(tmp_path: Path) -> None:
    current: list[Path | None] = [None]
    assert line_problems('"""Rules (kraft-node.md §4.1)."""', "node/x.py", current) == [
        "cites kraft-node.md, which the repository does not hold",
        "§4.1 refers to no document the repository holds",
    ]
    assert line_problems("# see ../shared/docs/kraft-apis.md", "x.py", [None])[0].startswith(
        "cites the notes in ../shared/docs"
    )
    assert line_problems("(docs/native.md §99)", "x.py", [None]) == [
        "§99: docs/native.md has no section with that number"
    ]
    assert line_problems('path = base / "kraft-apis.md"', "tests/x.py", [None]) == []
    assert line_problems("see README.md and https://example.org/a.md", "x.py", [None]) == []
