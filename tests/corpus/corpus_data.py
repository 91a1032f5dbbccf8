"""The committed capture corpus (tests/corpus/data, recorded by ``make corpus``) as the tests read it:
its manifest, its captures decoded by kraftwire, and the same captures' frames read independently
(``wire_frames``), paired into exchanges by connection and correlation id.

``spark_agrees_with_local`` is the check the Spark tests (tests/spark/test_spark.py,
tests/spark/test_standalone.py) run with their own session: no test here starts Spark.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# The Spark tests import this module from tests/spark; its sibling is then not on the path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from wire_frames import WireFrame, connections  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


@lru_cache(maxsize=1)
def manifest() -> dict:
    return json.loads((DATA / "manifest.json").read_text())


def capture_names() -> list[str]:
    return [entry["file"] for entry in manifest()["captures"]]


def entry(name: str) -> dict:
    return next(e for e in manifest()["captures"] if e["file"] == name)


def capture_path(name: str) -> Path:
    return DATA / name


def server_ports(name: str) -> frozenset[int]:
    return frozenset(entry(name)["ports"])


def all_ports() -> frozenset[int]:
    return frozenset(port for e in manifest()["captures"] for port in e["ports"])


@dataclass
class WireExchange:
    """A request frame and the response frame with its correlation id on the same connection."""

    client_port: int
    request: WireFrame
    response: WireFrame | None

    @property
    def api_key(self) -> int:
        return int.from_bytes(self.request.payload[0:2], "big", signed=True)

    @property
    def api_version(self) -> int:
        return int.from_bytes(self.request.payload[2:4], "big", signed=True)

    @property
    def correlation_id(self) -> int:
        return int.from_bytes(self.request.payload[4:8], "big", signed=True)


def wire_exchanges(name: str) -> list[WireExchange]:
    """Every request of the capture with its response, in the order of the requests' packets."""
    found: list[WireExchange] = []
    for conn in connections(capture_path(name), set(server_ports(name))):
        answers = {
            int.from_bytes(frame.payload[0:4], "big", signed=True): frame
            for frame in conn.responses.frames()
        }
        for frame in conn.requests.frames():
            exchange = WireExchange(conn.client[1], frame, None)
            exchange.response = answers.pop(exchange.correlation_id, None)
            found.append(exchange)
        if answers:
            raise ValueError(f"{name}: responses with no request: {sorted(answers)}")
    return sorted(found, key=lambda e: e.request.packet)


def spark_agrees_with_local(spark, shards: int | None = None) -> int:
    """Read every capture of the corpus through ``spark`` and compare with local mode's rows; the
    number of rows compared. Raises AssertionError on a difference."""
    from kraftwire.spark_decoders import decode_local, read_exchanges
    from kraftwire.spark_decoders.spark.reading import spark_rows_as_dicts
    from shared import shared_path

    paths = [str(capture_path(name)) for name in capture_names()]
    schemas = str(shared_path("kafka-schemas"))
    local = decode_local(paths, schemas=schemas, ports=all_ports())
    frame = read_exchanges(spark, paths, schemas=schemas, ports=all_ports(), shards=shards)
    rows = spark_rows_as_dicts(frame)
    assert len(rows) == len(local)
    for ours, theirs in zip(rows, local):
        assert ours == theirs, (ours["capture_file"], ours["request_frame"])
    return len(local)
