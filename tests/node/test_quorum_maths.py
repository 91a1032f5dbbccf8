"""The quorum arithmetic of the core against naive reference implementations (hypothesis):

- majorities: ``VoterSet.majority``, the election tally (``EpochElection``), check-quorum's count of
  followers a leader must hear from;
- the leader's high watermark (docs/kraft.md §5.2) from the replicas' reported end offsets while
  voters come and go: the largest offset a majority of the *latest* voter set has reached, only once it
  is above the epoch start offset, and never going back;
- voter-set history (``ControlState``): the set in effect at any offset, across appends, truncations
  and prefix trims.

The references are written the slow, obvious way (count, don't sort and index) so that a shared
mistake is unlikely.
"""

from __future__ import annotations

import uuid
from typing import Iterable

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kraftwire.node.core import Endpoint, ReplicaKey, VoterSpec
from kraftwire.node.core.leader import LeaderState
from kraftwire.node.core.states import EpochElection
from kraftwire.node.core.voters import ControlState, VoterSet


def naive_majority(n: int) -> int:
    """The fewest members that are more than half of ``n``."""
    return next(m for m in range(n + 2) if 2 * m > n)


def key(node_id: int, disk: int = 0) -> ReplicaKey:
    """Node ``node_id`` on its ``disk``-th directory (a replaced disk is a new directory id)."""
    return ReplicaKey(node_id, uuid.UUID(int=node_id * 1000 + disk + 1))


def spec(k: ReplicaKey) -> VoterSpec:
    return VoterSpec(k, {"CONTROLLER": Endpoint(f"n{k.id}", 9000 + k.id)}, (0, 1))


def voter_set(keys: Iterable[ReplicaKey]) -> VoterSet:
    return VoterSet(spec(k) for k in keys)


# -- majorities ------------------------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=40))
def test_majority(n: int) -> None:
    assert voter_set(key(i) for i in range(1, n + 1)).majority() == naive_majority(n)


votes = st.lists(st.tuples(st.integers(min_value=0, max_value=9), st.booleans()), max_size=30)


@given(st.sets(st.integers(min_value=1, max_value=8), min_size=1), st.integers(0, 9), votes)
def test_election_tally(voters: set[int], local: int, answers: list[tuple[int, bool]]) -> None:
    election = EpochElection(sorted(voters), local)
    first_answer: dict[int, bool] = {local: True} if local in voters else {}
    for voter, granted in answers:
        election.record(voter, granted)
        if voter in voters:
            first_answer.setdefault(voter, granted)  # a voter's first answer is the one that counts
        granted_count = sum(1 for g in first_answer.values() if g)
        unanswered = len(voters) - len(first_answer)
        assert election.is_granted() == (granted_count >= naive_majority(len(voters)))
        # lost: even if every voter still silent granted, there would be no majority
        lost = granted_count + unanswered < naive_majority(len(voters))
        assert election.is_rejected() == lost
        assert election.unrecorded() == sorted(v for v in voters if v not in first_answer)


# -- the leader's high watermark -------------------------------------------------------------------

LEADER = key(1)


def naive_high_watermark(
    previous: int | None,
    epoch_start: int,
    voters: list[ReplicaKey],
    reported: dict[ReplicaKey, int],
) -> int | None:
    need = naive_majority(len(voters))
    reached = None
    for offset in set(reported.values()):
        count = sum(1 for v in voters if v in reported and reported[v] >= offset)
        if count >= need and (reached is None or offset > reached):
            reached = offset
    if reached is None or reached <= epoch_start or (previous is not None and reached <= previous):
        return previous
    return reached


# One step of a leader's epoch: a replica (node id, disk) reports its end offset, the leader's own
# log end moves, or a voter is added or removed (never the leader itself: removing the leader is a
# transcript of its own, remove_leader.txt).
report = st.tuples(st.just("fetch"), st.integers(2, 7), st.integers(0, 1), st.integers(0, 60))
local = st.tuples(st.just("local"), st.just(1), st.just(0), st.integers(0, 60))
change = st.tuples(
    st.sampled_from(("add", "remove")), st.integers(2, 7), st.integers(0, 1), st.just(0)
)
steps = st.lists(st.one_of(report, report, local, change), max_size=60)


@settings(max_examples=300)
@given(st.integers(2, 6), st.integers(0, 20), steps)
# a voter removed and added back keeps the offset it reported before (here the one that decides)
@example(
    3,
    0,
    [
        ("fetch", 3, 0, 20),
        ("local", 1, 0, 5),
        ("remove", 3, 0, 0),
        ("local", 1, 0, 20),
        ("add", 3, 0, 0),
    ],
)
# an observer's progress counts as soon as it becomes a voter
@example(2, 0, [("fetch", 4, 0, 9), ("local", 1, 0, 9), ("add", 4, 0, 0)])
def test_high_watermark(initial_voters: int, epoch_start: int, script: list[tuple]) -> None:
    voters = [key(i) for i in range(1, initial_voters + 1)]
    leader = LeaderState(3, LEADER, LEADER, epoch_start, voter_set(voters), {1}, 0, 1000)
    reported: dict[ReplicaKey, int] = {}
    hw = None
    for now, (what, node_id, disk, offset) in enumerate(script, start=1):
        k = key(node_id, disk)
        if what == "fetch":
            moved = leader.update_replica(k, offset, now, leader_leo=60)
            reported[k] = offset
        elif what == "local":
            moved = leader.update_local_end_offset(offset, now)
            reported[k] = offset
        else:
            if what == "add" and not any(v.id == node_id for v in voters):
                voters.append(k)
            elif what == "remove" and k in voters:
                voters.remove(k)
            else:
                continue  # not a valid single-member change
            leader.update_voters(voter_set(voters), now)
            moved = leader.maybe_update_high_watermark()
        expected = naive_high_watermark(hw, epoch_start, voters, reported)
        assert leader.high_watermark == expected, (what, k, offset, voters, reported)
        assert moved == (expected != hw)
        hw = expected
        # check quorum: the leader must hear from enough followers to make a majority with itself
        assert leader.required_fetchers() == naive_majority(len(voters)) - 1


# -- voter-set history -----------------------------------------------------------------------------

history_step = st.one_of(
    st.tuples(st.just("voters"), st.integers(1, 4), st.sets(st.integers(1, 6), min_size=1)),
    st.tuples(st.just("truncate"), st.integers(0, 40), st.just(frozenset())),
    st.tuples(st.just("trim"), st.integers(0, 40), st.just(frozenset())),
)


def naive_voters_at(entries: list[tuple[int, VoterSet]], static: VoterSet, offset: int) -> VoterSet:
    found = static
    for at, voters in entries:
        if at <= offset:
            found = voters  # entries are in offset order: the last one at or before wins
    return found


@settings(max_examples=200)
@given(st.lists(history_step, max_size=25))
def test_voters_at(script: list[tuple]) -> None:
    static = voter_set([key(1)])
    bootstrap = voter_set([key(1), key(2), key(3)])
    control = ControlState(static, bootstrap, 1)
    entries: list[tuple[int, VoterSet]] = [(-1, bootstrap)]
    end, trimmed_to = 0, -1
    for what, amount, ids in script:
        if what == "voters":
            end += amount  # some data, then the VotersRecord as the last record
            voters = voter_set(key(i) for i in sorted(ids))
            control.apply_record(end - 1, voters.to_record())
            entries.append((end - 1, voters))
        elif what == "truncate":
            cut = max(amount, trimmed_to + 1)  # never below what a snapshot already covers
            control.truncate_new_entries(cut)
            entries = [(at, v) for at, v in entries if at < cut]
            end = min(end, cut)
        elif amount < end:
            control.trim_prefix(amount)
            trimmed_to = max(trimmed_to, amount)
        for offset in range(trimmed_to, end + 2):
            assert control.voters_at(offset) == naive_voters_at(entries, static, offset), offset
        assert control.latest_voters() == naive_voters_at(entries, static, end + 100)
