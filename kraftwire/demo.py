"""``make demo``: a KRaft quorum's story on the embedded default (our own ``schemas/``).

The codecs are regenerated and compared with ``generated/``; then three real ``kraftwire node start``
processes on 127.0.0.1, each capturing its traffic to pcapng, take writes (acks=-1), lose their leader to
kill -9, elect another, take more writes, and see the killed node restart and catch up. The captures are
finally decoded with the spark decoders in local mode and summarised per API. Ends by itself in about a
minute; every node process is stopped on the way out (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kraftwire.node.runtime import cli_quorum
from kraftwire.node.runtime.local_cluster import LocalCluster
from kraftwire.node.runtime.producer import MetadataClient
from kraftwire.records import decode_batches

REPO = Path(__file__).resolve().parents[1]
NODES = 3
RECORDS_PER_ROUND = 20
CATCH_UP_TIMEOUT_S = 60.0


def regenerate_and_compare() -> bool:
    from kraftwire.codegen.generate import generate

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "generated"
        count = generate([REPO / "schemas"], out, "kraftwire.generated")
        names = sorted(p.name for p in out.glob("*.py"))
        _, mismatch, missing = filecmp.cmpfiles(out, REPO / "generated", names, shallow=False)
        extra = sorted({p.name for p in (REPO / "generated").glob("*.py")} - set(names))
    if mismatch or missing or extra:
        print(
            f"Codecs: regenerated {count} KRaft modules from schemas/; they DIFFER from generated/ "
            f"(changed {mismatch}, missing {missing}, extra {extra})"
        )
        return False
    print(
        f"Codecs: regenerated {count} KRaft modules from schemas/, identical to generated/ byte for byte"
    )
    return True


def heading(title: str) -> None:
    print(f"\n== {title} ==", flush=True)


class CapturedCluster(LocalCluster):
    """A LocalCluster whose every node start writes its traffic to a new ``--capture`` file."""

    def __init__(self, directory: str) -> None:
        super().__init__(directory, NODES)
        self.captures: list[tuple[int, str]] = []  # (node id, pcapng path), in start order

    def start(self, node_id: int, *extra_args: str) -> None:
        run = 1 + sum(1 for node, _ in self.captures if node == node_id)
        capture = os.path.join(self.directory, f"node{node_id}-run{run}.pcapng")
        self.captures.append((node_id, capture))
        super().start(node_id, "--capture", capture, *extra_args)


# --- describe ---------------------------------------------------------------------------------


def _quorum(cluster: CapturedCluster) -> Any:
    """The leader's DescribeQuorum response, waiting (bounded) while there is no leader to ask."""
    stop = time.monotonic() + 30
    while time.monotonic() < stop:
        described = cluster.describe()
        if described is not None:
            return described
        time.sleep(0.2)
    raise TimeoutError("no node answered DescribeQuorum within 30 s")


def show_status(cluster: CapturedCluster) -> dict[str, Any]:
    """``kraftwire quorum describe --status``, voters shown by id only; returns the full fields."""
    fields = cli_quorum.status_fields(*_quorum(cluster))
    shown = {k: v for k, v in fields.items() if k not in ("ClusterId", "CurrentObservers")}
    shown["CurrentVoters"] = [{"id": voter["id"]} for voter in fields["CurrentVoters"]]
    print(_indent(cli_quorum.render_status(shown)))
    if fields["HighWatermark"] == -1:
        print(_indent(UNKNOWN_HIGH_WATERMARK))
    return fields


# Why a leader just elected shows -1: in KRaft (as in Raft) a leader knows its high watermark only
# once a majority holds an entry of its own epoch; it appends one (LeaderChange) when elected.
UNKNOWN_HIGH_WATERMARK = (
    "(HighWatermark -1: a new leader knows its high watermark only once an entry of its own\n"
    " epoch is committed; nothing acknowledged is lost, it is not known yet)"
)


def replication(cluster: CapturedCluster) -> list[dict[str, Any]]:
    return cli_quorum.replication_rows(_quorum(cluster)[1])


def show_replication(rows: list[dict[str, Any]]) -> None:
    """``kraftwire quorum describe --replication`` (the directory ids left out for width)."""
    text = cli_quorum.render_table([{**row, "DirectoryId": "..."} for row in rows])
    print(_indent(text.replace("\t", " ")))


def _indent(text: str) -> str:
    return "\n".join("  " + line.rstrip() for line in text.splitlines())


# --- the story --------------------------------------------------------------------------------


def produce(cluster: CapturedCluster, values: list[bytes]) -> list[int]:
    """Write each value with acks=-1 through whichever node answers; the acknowledged offsets."""
    client = MetadataClient(cluster.endpoints[cluster.running()[0]], deadline_s=30)
    try:
        return [client.produce([value], acks=-1) for value in values]
    finally:
        client.close()


def start_quorum(cluster: CapturedCluster) -> tuple[int, int]:
    heading(f"A {NODES}-node quorum on 127.0.0.1")
    print(f"  configs, data, node logs and captures in {cluster.directory}")
    cluster.format()
    started = time.monotonic()
    cluster.start_all()
    for node, capture in cluster.captures:
        port = cluster.endpoints[node].port
        print(f"  node {node}: 127.0.0.1:{port}, capturing to {os.path.basename(capture)}")
    leader, epoch = cluster.wait_for_leader(timeout_s=60)
    print(f"  node {leader} elected leader at epoch {epoch} ({time.monotonic() - started:.1f} s)")
    return leader, epoch


def write_round(cluster: CapturedCluster, label: str) -> list[bytes]:
    values = [f"{label}-{i:02d}".encode() for i in range(RECORDS_PER_ROUND)]
    offsets = produce(cluster, values)
    print(
        f"  {len(values)} records acknowledged with acks=-1 at offsets {offsets[0]}..{offsets[-1]}"
    )
    return values


def fail_over(cluster: CapturedCluster, leader: int) -> tuple[int, int]:
    heading(f"kill -9 of the leader, node {leader}")
    cluster.kill(leader, signal.SIGKILL)
    killed_at = time.monotonic()
    print(f"  node {leader} killed")
    new_leader, epoch = cluster.wait_for_leader(timeout_s=60, not_in=(leader,))
    print(
        f"  node {new_leader} elected leader at epoch {epoch} "
        f"({time.monotonic() - killed_at:.1f} s after the kill)"
    )
    return new_leader, epoch


def restart_and_catch_up(cluster: CapturedCluster, node: int) -> list[dict[str, Any]]:
    """Restart ``node`` and wait until the leader sees it fetch up to the leader's log end offset."""
    heading(f"Restart of node {node}")
    restarted_ms = int(time.time() * 1000)
    cluster.start(node)
    print(f"  node {node} restarted, capturing to {os.path.basename(cluster.captures[-1][1])}")
    print("  just after the restart (-1: the new leader has not heard from it yet):")
    show_replication(replication(cluster))
    stop = time.monotonic() + CATCH_UP_TIMEOUT_S
    while time.monotonic() < stop:
        rows = replication(cluster)
        mine = next(row for row in rows if row["NodeId"] == node)
        if (
            mine["LastFetchTimestamp"] >= restarted_ms
            and mine["LogEndOffset"] == rows[0]["LogEndOffset"]
        ):
            print(
                f"  caught up: node {node}'s log end offset {mine['LogEndOffset']} is the leader's"
            )
            show_replication(rows)
            return rows
        time.sleep(0.2)
    raise TimeoutError(f"node {node} did not catch up within {CATCH_UP_TIMEOUT_S:.0f} s")


def check_logs(cluster: CapturedCluster, acknowledged: list[bytes]) -> None:
    """Read every stopped node's segments back and compare their data records with what was acked."""
    for node in cluster.ids:
        values = []
        for segment in sorted(Path(cluster.partition_dir(node)).glob("*.log")):
            batches, tail = decode_batches(segment.read_bytes())
            for batch in batches:
                if not batch.is_control:
                    values += [record.value for record in batch.records]
        if values != acknowledged:
            raise RuntimeError(f"node {node}'s log does not hold exactly the acknowledged records")
        print(
            f"  node {node}: {len(values)} data records: the acknowledged ones, in order, once each"
        )


def run_story(cluster: CapturedCluster) -> None:
    leader, _ = start_quorum(cluster)

    heading("Writes")
    acknowledged = write_round(cluster, "before")
    show_status(cluster)

    new_leader, _ = fail_over(cluster, leader)
    show_status(cluster)
    acknowledged += write_round(cluster, "after")

    restart_and_catch_up(cluster, leader)

    heading("Logs on disk (every node stopped with SIGTERM first)")
    cluster.stop_all(graceful_s=10)
    check_logs(cluster, acknowledged)

    heading("Captured traffic, decoded by kraftwire.spark_decoders (local mode)")
    show_exchanges(cluster)


# --- decoding ---------------------------------------------------------------------------------


def captured_exchanges(cluster: CapturedCluster) -> list[dict[str, Any]]:
    """Every exchange once: each node's capture holds both ends of its connections, so a connection
    between two nodes is in both their files; decoded together, their sightings are merged."""
    from kraftwire.spark_decoders.api import decode_local

    ports = frozenset(endpoint.port for endpoint in cluster.endpoints.values())
    return decode_local([capture for _, capture in cluster.captures], ports=ports)


def exchange_table(rows: list[dict[str, Any]]) -> list[tuple[str, int, int, str]]:
    """(API, exchanges, answered, p50 latency in ms) per API, the busiest first."""
    by_api: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_api[row["api_name"] or f"api key {row['api_key']}"].append(row)
    table = []
    for api, group in by_api.items():
        latencies = [r["latency_us"] for r in group if r["latency_us"] is not None]
        p50 = f"{statistics.median(latencies) / 1000:.1f}" if latencies else "-"
        answered = sum(1 for r in group if r["response_frame"] is not None)
        table.append((api, len(group), answered, p50))
    return sorted(table, key=lambda entry: (-entry[1], entry[0]))


def show_exchanges(cluster: CapturedCluster) -> None:
    rows = captured_exchanges(cluster)
    print(f"  {len(rows)} exchanges in {len(cluster.captures)} capture files")
    header = ("API", "exchanges", "answered", "p50 ms")
    table = [header] + [tuple(str(cell) for cell in entry) for entry in exchange_table(rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:], widths[1:])]
        print("  " + "  ".join(cells))
    unusual: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["status"] != "ok":
            unusual[row["status"]] += 1
    if unusual:
        notes = ", ".join(f"{count} {status}" for status, count in sorted(unusual.items()))
        print(f"  other statuses: {notes} (see kraftwire decode for each exchange)")


# --- entry point ------------------------------------------------------------------------------


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kraftwire.demo", description=__doc__)
    parser.add_argument(
        "--dir",
        help="a new or empty directory to keep the configs, logs, data and captures in "
        "(default: a temporary directory, removed at the end)",
    )
    return parser.parse_args(argv)


def _work_directory(requested: str | None) -> tuple[str, bool]:
    """(directory, whether the demo created it and may remove it)."""
    if requested is None:
        return tempfile.mkdtemp(prefix="kraftwire-demo-"), True
    if os.path.exists(requested) and (not os.path.isdir(requested) or os.listdir(requested)):
        raise ValueError(f"--dir {requested} is not a new or empty directory")
    os.makedirs(requested, exist_ok=True)
    return requested, False


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        directory, created = _work_directory(args.dir)
    except (ValueError, OSError) as exc:
        print(f"kraftwire demo: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally below on SIGTERM
    ok = regenerate_and_compare()
    cluster = CapturedCluster(directory)
    failed = True
    try:
        run_story(cluster)
        failed = False
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
    except Exception as exc:  # the demo's one-line report; the node logs have the details
        print(f"\nkraftwire demo: stopped: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        cluster.stop_all(graceful_s=10)
        if created and not failed:
            shutil.rmtree(directory, ignore_errors=True)
            print(f"\nremoved {directory}")
        else:
            print(f"\nconfigs, node logs and captures are in {directory}")
    return 1 if failed or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
