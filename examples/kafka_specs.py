"""Shared by the examples that build codecs from Kafka's own spec files (Metadata, Produce, ...).

The bundled ``kraftwire.generated`` holds the KRaft APIs and Produce, but not Metadata. These examples
generate the few specs they need from Kafka's own spec files into a temporary folder and import the
result. Kafka's specs are looked for in ``$KRAFTWIRE_SHARED/kafka-schemas`` (default: ``../shared``
beside the clone); a jar (``kafka-clients-*.jar``) works as well with ``kraftwire codegen --schemas``.
"""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from kraftwire.codegen.generate import generate

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KRAFTWIRE_SHARED", REPO.parent / "shared"))
KAFKA_MESSAGES = (
    SHARED / "kafka-schemas" / "clients" / "src" / "main" / "resources" / "common" / "message"
)
HEADERS = ("RequestHeader", "ResponseHeader")


def kafka_package(apis: list[str], name: str = "kafkaexample") -> ModuleType:
    """A package generated from the request/response specs of ``apis`` (e.g. ``["Produce"]``)."""
    if not KAFKA_MESSAGES.is_dir():
        print(f"skipped: Kafka's specs are not at {KAFKA_MESSAGES} (set KRAFTWIRE_SHARED)")
        sys.exit(0)
    stems = [*HEADERS, *(f"{api}{side}" for api in apis for side in ("Request", "Response"))]
    parent = Path(tempfile.mkdtemp(prefix="kraftwire-example-"))
    atexit.register(shutil.rmtree, parent, ignore_errors=True)
    generate([KAFKA_MESSAGES / f"{stem}.json" for stem in stems], parent / name, name)
    sys.path.insert(0, str(parent))
    return importlib.import_module(name)
