"""A ReadOffset answer that lies (it names the asking node leader of its own epoch) is refused and
logged like any lying response, and the read asks again: it once escaped the dispatcher and, found by
the live wire fuzzer, stopped the node."""

from __future__ import annotations

from kraft_datadriven import parse_command
from kraft_harness import Env
from kraftwire.generated import read_offset_response as ro
from kraftwire.node.core.api import ResponseReceived

METADATA_TOPIC = "__cluster_metadata"


def lying_answer(asker: int, epoch: int) -> ro.ReadOffsetResponse:
    partition = ro.PartitionData(
        partition_index=0,
        error_code=6,  # NOT_LEADER_OR_FOLLOWER, naming the asker itself as leader
        current_leader=ro.LeaderIdAndEpoch(leader_id=asker, leader_epoch=epoch),
    )
    return ro.ReadOffsetResponse(
        topics=[ro.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])]
    )


def run(env: Env, line: str) -> str:
    return env.handle(parse_command(line))


def test_a_read_offset_answer_naming_the_asker_leader_is_refused() -> None:
    env = Env()
    run(env, "bootstrap 3")
    assert "ReadOffsetRequest" in run(env, "read 3 1 timeout=60000")
    node = env.nodes[3].core._replica  # the state the public API does not show
    asked = next(r.asked for r in node.local_reads.values())
    out: list[str] = []
    epoch = node.state.epoch
    env.step(3, ResponseReceived(1, asked, 0, lying_answer(3, epoch), env.now), out)
    assert any("refused ReadOffsetResponse from 1" in line for line in out), out
    assert all(r.asked is None for r in node.local_reads.values())  # it will ask again
    assert node.state.epoch == epoch and node.state.leader_id == 1
