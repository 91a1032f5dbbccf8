"""Record batches two ways for the corpus's DumpLogSegments check: as Kafka's DumpLogSegments prints
them for the committed broker segments, and as kraftwire's decoded Produce requests and Fetch
responses hold them (their JSON), keyed by topic partition."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

from kafka_jars import DUMP_LOG, run_tool  # noqa: E402

# The batch fields both sides have, by DumpLogSegments' name and the batch JSON's.
FIELDS = {
    "baseOffset": "baseOffset",
    "count": "recordCount",
    "baseSequence": "baseSequence",
    "producerId": "producerId",
    "producerEpoch": "producerEpoch",
    "partitionLeaderEpoch": "partitionLeaderEpoch",
    "isTransactional": "isTransactional",
    "isControl": "isControl",
    "compresscodec": "compression",
    "crc": "crc",
    "size": "size",
}
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # KRaft's fixed id of __cluster_metadata, base64
_BATCH = re.compile(r"^baseOffset: ")
_PAIR = re.compile(r"(\w+): (\S+)")


def dump_log_segments(files: list[Path]) -> dict[Path, list[dict]]:
    """Each file's batches as DumpLogSegments prints them (one JVM for all the files)."""
    out = run_tool(DUMP_LOG, "--files", ",".join(str(f) for f in files), timeout_s=180).stdout
    batches: dict[Path, list[dict]] = {}
    current: list[dict] | None = None
    for line in out.splitlines():
        if line.startswith("Dumping "):
            current = batches.setdefault(Path(line.removeprefix("Dumping ").strip()), [])
        elif _BATCH.match(line) and current is not None:
            pairs = dict(_PAIR.findall(line))
            current.append({key: _value(pairs[key]) for key in FIELDS})
    return batches


def _value(text: str):
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return text


def as_dumped(batch: dict) -> dict:
    """A batch of the decoded JSON with DumpLogSegments' names; its size is the whole batch's
    (the 12 bytes of base offset and length, then ``batchLength``)."""
    view = {dumped: batch[ours] for dumped, ours in FIELDS.items() if ours != "size"}
    view["size"] = 12 + batch["batchLength"]
    return view


def topic_ids(rows: list[dict]) -> dict[str, str]:
    """topic id -> name, from the Metadata responses of ``rows`` (Produce v13 and Fetch v13 and
    later name topics by id only)."""
    names = {METADATA_TOPIC_ID: "__cluster_metadata"}  # the KRaft Fetch of kraft.pcap
    for row in rows:
        if row["api_name"] == "Metadata" and row["response_json"]:
            for topic in json.loads(row["response_json"])["topics"]:
                if topic.get("name") and topic.get("topicId"):
                    names[topic["topicId"]] = topic["name"]
    return names


def produced_and_fetched(rows: list[dict], names: dict[str, str]):
    """(produced, fetched): "topic-partition" -> [(batch JSON, base offset, the row)] from Produce
    requests (the base offset the response gave the partition, None if it refused the batch) and
    [(batch JSON, the row)] from Fetch responses."""
    produced: dict[str, list] = {}
    fetched: dict[str, list] = {}
    for row in rows:
        if row["api_name"] == "Produce" and row["request_json"]:
            offsets = _produce_offsets(json.loads(row["response_json"] or "{}"), names)
            for topic in json.loads(row["request_json"])["topicData"]:
                name = topic.get("name") or names[topic["topicId"]]
                for part in topic["partitionData"]:
                    key = f"{name}-{part['index']}"
                    for batch in (part["records"] or {}).get("batches", []):
                        produced.setdefault(key, []).append((batch, offsets.get(key), row))
        elif row["api_name"] == "Fetch" and row["response_json"]:
            for topic in json.loads(row["response_json"])["responses"]:
                name = topic.get("topic") or names[topic["topicId"]]
                for part in topic["partitions"]:
                    key = f"{name}-{part['partitionIndex']}"
                    for batch in (part["records"] or {}).get("batches", []):
                        fetched.setdefault(key, []).append((batch, row))
    return produced, fetched


def _produce_offsets(response: dict, names: dict[str, str]) -> dict[str, int | None]:
    """The base offset the broker gave each partition's batch; None where it refused it."""
    offsets: dict[str, int | None] = {}
    for topic in response.get("responses", []):
        name = topic.get("name") or names[topic["topicId"]]
        for part in topic["partitionResponses"]:
            refused = part["errorCode"] != 0
            offsets[f"{name}-{part['index']}"] = None if refused else part["baseOffset"]
    return offsets
