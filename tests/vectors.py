"""The (spec, version, JSON, hex) vectors written by Kafka's own generated Java classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, NamedTuple


class Vector(NamedTuple):
    spec: str
    version: int
    json: dict
    data: bytes
    line: int

    @property
    def name(self) -> str:
        return f"{self.spec}-v{self.version}-{self.line}"


def load_vectors(directory: Path) -> Iterator[Vector]:
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            record = json.loads(line)
            yield Vector(
                record["spec"], record["version"], record["json"], bytes.fromhex(record["hex"]), number
            )
