"""A small randomized smoke test of the core (the full simulator lives elsewhere): random delays, drops,
duplicates, partitions, crashes and appends over the transcript harness, checking after every step
that no epoch has two leaders, that committed data agrees across nodes, and that HWs never go back."""

from __future__ import annotations

import os
import random

import pytest

from kraft_datadriven import Command
from kraft_harness import Env
from kraftwire.node.core import Role


def _check(env: Env, leaders: dict[int, int], hws: dict, history: dict[int, bytes]) -> None:
    for nid, node in env.nodes.items():
        core = node.core
        if core is None:
            continue
        st = core.state
        if st.role is Role.LEADER:
            prev = leaders.setdefault(st.epoch, nid)
            assert prev == nid, f"two leaders in epoch {st.epoch}: {prev} and {nid}"
        hw = st.high_watermark
        if st.role is Role.LEADER and hw is not None:
            key = (nid, st.epoch)
            assert hw >= hws.get(key, -1), f"leader {nid} HW went back: {hws.get(key)} -> {hw}"
            hws[key] = hw
            reached = sum(
                1
                for v in core.voters()
                if env.nodes.get(v.key.id) and env.nodes[v.key.id].log.end_offset() >= hw
            )
            assert reached >= core.voters().majority(), f"HW {hw} not on a majority"
        for off, rec in node.committed:
            seen = history.setdefault(off, rec)
            assert seen == rec, f"node {nid} committed {rec!r} at {off}, others {seen!r}"


def _run(seed: int, steps: int) -> None:
    rng = random.Random(seed)
    env = Env()
    out: list[str] = []
    n = rng.choice([3, 5])
    env.cmd_add_nodes(Command("add-nodes", [str(n)], {}), out)
    leaders: dict[int, int] = {}
    hws: dict = {}
    history: dict[int, bytes] = {}
    counter = 0
    for _ in range(steps):
        r = rng.random()
        if r < 0.35:
            env.cmd_tick(Command("tick", [str(rng.randint(5, 200))], {}), out)
        elif r < 0.75:
            pending, env.net = env.net, []
            rng.shuffle(pending)
            for src, m in pending:
                x = rng.random()
                if x < 0.1:
                    continue  # drop
                if x < 0.2:
                    env.net.append((src, m))  # delay
                    continue
                env.deliver_one(src, m, out)
                if x > 0.97:
                    env.deliver_one(src, m, out)  # duplicate
        elif r < 0.85:
            leader = next((i for i, nd in env.nodes.items() if nd.core and nd.core.role is Role.LEADER), None)
            if leader is not None:
                counter += 1
                env.cmd_append(Command("append", [str(leader), f"v{counter}"], {}), out)
        elif r < 0.9:
            if rng.random() < 0.5:
                env.groups = {rng.randint(1, n): 1}
            else:
                env.groups.clear()
        elif r < 0.93:
            victim = rng.randint(1, n)
            node = env.nodes[victim]
            if node.core is not None:
                if node.core.role is Role.LEADER and rng.random() < 0.5:
                    # crash after the core appended but before the driver flushed/sent anything:
                    # the unflushed records are lost, and nobody ever saw them
                    counter += 1
                    node.core.append([f"v{counter}".encode()], env.now)
                    node.core.tick(env.now)
                    env.cmd_crash(Command("crash", [str(victim)], {"lose": "true"}), out)
                else:
                    env.cmd_crash(Command("crash", [str(victim)], {"lose": "false"}), out)
        elif r < 0.97:
            for i, nd in env.nodes.items():
                if nd.core is None:
                    env.cmd_restart(Command("restart", [str(i)], {}), out)
        else:
            for i, nd in env.nodes.items():
                core = nd.core
                if core is None or core.high_watermark is None or not nd.committed:
                    continue
                last = nd.committed[-1][0] + 1
                batch = core.log.batch_at(last - 1)
                if batch is not None and batch.next_offset == last and last > core.log.start_offset():
                    env.cmd_snapshot(Command("snapshot", [str(i), str(last)], {}), out)
                break
        _check(env, leaders, hws, history)
        out.clear()
    # liveness: heal, restart everyone, let time pass: someone leads and an append commits
    env.groups.clear()
    for i, nd in env.nodes.items():
        if nd.core is None:
            env.cmd_restart(Command("restart", [str(i)], {}), out)
    env.cmd_run(Command("run", ["8000"], {"step": "50"}), out)
    leader = next((i for i, nd in env.nodes.items() if nd.core.role is Role.LEADER), None)
    assert leader is not None, f"seed {seed}: no leader after healing"
    env.cmd_append(Command("append", [str(leader), "final"], {}), out)
    env.cmd_run(Command("run", ["2000"], {"step": "50"}), out)
    _check(env, leaders, hws, history)
    assert any(r == b"final" for _, r in env.nodes[leader].committed), f"seed {seed}: append did not commit"


@pytest.mark.parametrize("seed", range(int(os.environ.get("KRAFT_SEEDS", "20"))))
def test_random_faults(seed: int) -> None:
    _run(seed, int(os.environ.get("KRAFT_STEPS", "300")))
