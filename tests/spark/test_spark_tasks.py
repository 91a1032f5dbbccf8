"""The decoders' Spark tasks keep PySpark's after-task collection small (``spark_tasks``).

A reused PySpark worker runs ``gc.collect()`` after every task. Run in a child process (freezing
objects is for good), a reader's tasks are given a task context as PySpark's worker gives them one;
each must leave the collector on, walking a small fraction of what it walked before, with the same
rows, and nothing must be frozen outside a task.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from captures import conversation, pcap_of, write
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

TASKS = """
import gc, json, sys
from pyspark import TaskContext
from kraftwire.spark_decoders.spark.datasource import KafkaPcapReader

reader = KafkaPcapReader([sys.argv[1]], None, frozenset({9092, 9093}), 2, "exchanges")


def run_tasks():
    tasks = []
    for shard in reader.partitions():
        rows, paused = 0, True
        for batch in reader.read(shard):
            rows += batch.num_rows
            paused = paused and not gc.isenabled()
        tasks.append({"rows": rows, "paused": paused, "enabled_after": gc.isenabled(),
                      "walked": len(gc.get_objects()), "frozen": gc.get_freeze_count()})
        gc.collect()  # as pyspark.daemon does after each task
    return tasks


gc.collect()
walked_before = len(gc.get_objects())
outside = run_tasks()
TaskContext._getOrCreate()  # what PySpark's worker does before a task
inside = run_tasks() + run_tasks()
print(json.dumps({"walked_before": walked_before, "outside": outside, "inside": inside}))
"""


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    convs = [
        conversation(kraft_exchanges(5, seed=i), client=(f"10.0.0.{i + 1}", 40000 + i))
        for i in range(4)
    ]
    packets = [packet for conv in convs for packet in conv.packets]
    return write(tmp_path_factory.mktemp("tasks"), "tasks.pcap", pcap_of(packets))


def test_tasks_leave_little_for_the_collection_after_them(capture):
    done = subprocess.run(
        [sys.executable, "-c", TASKS, capture], capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout)
    outside, inside = report["outside"], report["inside"]
    assert sum(task["rows"] for task in outside) == 20
    assert [task["rows"] for task in inside] == [task["rows"] for task in outside] * 2
    for task in outside + inside:
        assert task["paused"] and task["enabled_after"]
    assert all(task["frozen"] == 0 for task in outside)  # local use freezes nothing
    # Outside a task, the collection walks every object the worker holds; after a task, little.
    assert min(task["walked"] for task in outside) > 20_000
    assert max(task["walked"] for task in inside) < report["walked_before"] / 20
    # Later tasks freeze nothing new: what they leave behind does not pile up.
    later = [task["frozen"] for task in inside[1:]]
    assert max(later) - min(later) < 200
