"""``kraftwire dump-log --cluster-metadata-decoder`` (alias ``--record-values metadata``): data records
print as Kafka's DumpLogSegments prints them with that flag. Line for line equality with Kafka's tool
on a real Kafka cluster's log is in tests/interop/test_kafka_cluster.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kraftwire.node.core.api import LogBatch
from kraftwire.node.runtime.dump_metadata import NoMetadataCodecs, metadata_package, type_name
from kraftwire.node.storage import FileLog
from kraftwire.records import encode_metadata_record
from shared import shared_path


def kraftwire(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def schemas() -> str:
    return str(shared_path("kafka-schemas", "metadata"))


@pytest.fixture
def segment(tmp_path, schemas):
    from kraftwire.codegen.package_cache import generated_codecs, parse_schema_dirs

    metadata, _ = generated_codecs(parse_schema_dirs(schemas))
    topic = metadata.lookup("TopicRecord")(
        name="orders", topic_id=metadata.lookup("TopicRecord")().topic_id
    )
    level = metadata.lookup("FeatureLevelRecord")(name="metadata.version", feature_level=27)
    log = FileLog.open(str(tmp_path))
    values = (encode_metadata_record(level, 0), encode_metadata_record(topic, 0), b"\x07not one")
    log.append([LogBatch(0, 1, values)])
    log.close()
    return tmp_path / "00000000000000000000.log"


def test_type_names_are_kafkas_constants():
    assert type_name("RegisterBrokerRecord") == "REGISTER_BROKER_RECORD"
    assert type_name("NoOpRecord") == "NO_OP_RECORD"


@pytest.mark.parametrize("flag", [["--cluster-metadata-decoder"], ["--record-values", "metadata"]])
def test_records_print_as_kafkas_decoder_prints_them(segment, schemas, flag):
    result = kraftwire("dump-log", *flag, "--schemas", schemas, str(segment))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("| offset:")]
    assert lines[0].endswith(
        'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,'
        '"data":{"name":"metadata.version","featureLevel":27}}'
    )
    assert '"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":' in lines[1]
    assert lines[2].endswith(
        "payload: (not a metadata record: unknown metadata record frame version 7 "
        "(only 1 is supported) at offset 0)"
    )
    dumped = json.loads(
        kraftwire("dump-log", "--json", *flag, "--schemas", schemas, str(segment)).stdout
    )
    assert dumped[0]["batches"][0]["records"][0]["metadata"]["data"]["featureLevel"] == 27


def test_without_the_specs_it_says_what_to_pass(segment):
    result = kraftwire("dump-log", "--cluster-metadata-decoder", str(segment))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "pass --schemas DIR" in result.stderr


def test_a_schemas_folder_without_specs_is_named_once(tmp_path):
    """The codec cache's error already says ``--schemas: <folder>: ...``; dump-log added its own
    ``--schemas <folder>:`` in front of it."""
    empty = tmp_path / "no-specs"
    empty.mkdir()
    with pytest.raises(NoMetadataCodecs) as refused:
        metadata_package(str(empty))
    message = str(refused.value)
    assert message.count("--schemas") == 1 and message.count(str(empty)) == 1, message
