"""Kafka's error table and API keys as the pinned release's kafka-clients jar states them.

:func:`release_facts` compiles ``java/KafkaFacts.java`` against the release's class path and runs it;
``python tests/interop/kafka_facts.py`` rewrites ``schemas/errors.json`` from it (then ``make generate``).
The API keys in ``schemas/api_keys.json`` come from Kafka's request specs instead
(``python -m kraftwire.codegen.api_keys_file``); the interop test checks both against this program's
output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_jars import KAFKA, ROOT, classpath  # noqa: E402

SOURCE = Path(__file__).with_name("java") / "KafkaFacts.java"
ERRORS_JSON = ROOT / "schemas" / "errors.json"
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ReleaseFacts:
    errors: list[dict[str, object]]  # code, name, retriable, message: errors.json's rows
    api_keys: dict[int, str]  # API key -> name


def release_facts(version: str = KAFKA) -> ReleaseFacts:
    """Compile and run the facts program against ``version``'s jars (bounded in time)."""
    jars = classpath(version)
    with tempfile.TemporaryDirectory(prefix="kraftwire-facts-") as build:
        compile_run = ["javac", "-d", build, "-cp", jars, str(SOURCE)]
        subprocess.run(compile_run, check=True, capture_output=True, timeout=TIMEOUT_S)
        command = ["java", "-Xmx64m", "-cp", f"{jars}:{build}", "KafkaFacts"]
        out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=TIMEOUT_S)
    errors: list[dict[str, object]] = []
    api_keys: dict[int, str] = {}
    for line in out.stdout.splitlines():
        kind, *fields = line.split("\t")
        if kind == "error":
            code, name, retriable, message = fields
            errors.append(
                {
                    "code": int(code),
                    "name": name,
                    "retriable": retriable == "true",
                    "message": message,
                }
            )
        else:
            api_keys[int(fields[0])] = fields[1]
    return ReleaseFacts(errors, api_keys)


def errors_document(facts: ReleaseFacts, version: str = KAFKA) -> dict[str, object]:
    """``schemas/errors.json``'s content for ``facts``."""
    return {
        "about": "Kafka's error codes: Apache Kafka's Errors enum of the release named, in code order."
        " Rewritten by tests/interop/kafka_facts.py; kraftwire codegen emits errors.py from it.",
        "kafkaRelease": version,
        "errors": sorted(facts.errors, key=lambda error: error["code"]),
    }


def main() -> int:
    document = errors_document(release_facts())
    ERRORS_JSON.write_text(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"wrote {ERRORS_JSON.relative_to(ROOT)} ({len(document['errors'])} error codes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
