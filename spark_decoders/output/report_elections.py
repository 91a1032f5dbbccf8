"""The KRaft election story in decoded exchanges: who led which epoch, and when.

Each exchange of the quorum APIs says something about an epoch: a Vote request names a candidate
(``replicaId``) and the epoch it stands for (``replicaEpoch``; a pre-vote, KIP-996, asks without
starting one); a Vote, BeginQuorumEpoch or EndQuorumEpoch exchange and a DescribeQuorum response
name a leader (``leaderId``, ``leaderEpoch``; -1 while the sender knows none); a Fetch response names
the current leader (``currentLeader``). ``Elections`` collects these per epoch; ``epochs()`` gives
each epoch's leader (two leaders for one epoch would break Raft: both are kept, as a conflict),
candidates with their granted votes, and when it was first seen, led, last seen and resigned.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# The rare quorum APIs are parsed whole; Fetch, often most of a capture and carrying records, only
# through these patterns (the decoder writes keys in schema order, without spaces).
_FETCH_LEADER = re.compile(r'"currentLeader":\{"leaderId":(-?\d+),"leaderEpoch":(-?\d+)\}')
_FETCH_REPLICA = re.compile(r'"replicaId":(-?\d+)')
_FETCH_EPOCH = re.compile(r'"currentLeaderEpoch":(-?\d+)')
# DescribeCluster names no epoch, but its brokers' endpoints name a connection's server.
PARSED_APIS = frozenset(
    ("Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "DescribeQuorum", "DescribeCluster")
)


@dataclass
class Epoch:
    number: int
    leaders: dict[int, int] = field(default_factory=dict)  # leader id -> first time (µs) seen
    candidates: dict[int, list[int]] = field(default_factory=dict)  # id -> [first µs, granted]
    first: int = 0
    last: int = 0
    ended: int | None = None  # the first EndQuorumEpoch (the leader resigning)

    def seen(self, t_us: int) -> None:
        self.first = min(self.first, t_us)
        self.last = max(self.last, t_us)


# A request's or response's JSON body (None when it did not parse).
_Body = dict[str, Any] | None
_VERDICTS: dict[object, str] = {True: " granted", False: " refused"}


def partitions(body: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The partitions of a quorum request or response (``topics[].partitions[]``)."""
    if not body:
        return []
    return [p for topic in _dicts(body.get("topics")) for p in _dicts(topic.get("partitions"))]


class Elections:
    def __init__(self) -> None:
        self.epochs: dict[int, Epoch] = {}
        self.pre_votes: list[tuple[int, int, int]] = []  # (µs, candidate, epoch it stood in)
        self.endpoints: dict[str, int] = {}  # "host:port" -> node id

    def _epoch(self, number: int, t_us: int) -> Epoch:
        epoch = self.epochs.get(number)
        if epoch is None:
            epoch = self.epochs[number] = Epoch(number, first=t_us, last=t_us)
        epoch.seen(t_us)
        return epoch

    def leader(self, leader_id: int, number: int, t_us: int) -> None:
        if not (isinstance(number, int) and isinstance(leader_id, int)) or number < 0:
            return  # no epoch named (or fields not of the types Kafka's specs give them)
        epoch = self._epoch(number, t_us)
        if leader_id >= 0:
            epoch.leaders[leader_id] = min(epoch.leaders.get(leader_id, t_us), t_us)

    def add(
        self, row: dict[str, Any], request_us: int | None, response_us: int | None
    ) -> tuple[str, int]:
        """Take what ``row`` says about the quorum; returns a short note for the exchange table
        and the node id of the request's sender (-1 when the request does not say)."""
        api = row["api_name"]
        if api == "Fetch":
            return self._fetch(row, request_us, response_us)
        if api not in PARSED_APIS:
            return "", -1
        request = _parsed(row["request_json"])
        response = _parsed(row["response_json"])
        self._learn_endpoints(request, response)
        if api == "Vote":
            notes = self._vote(request, response, request_us)
            sender = next((p.get("replicaId", -1) for p in partitions(request)), -1)
        else:
            notes, sender = self._leader_request(api, request, request_us)
        for part in partitions(response):
            if "leaderId" in part and response_us is not None:
                self.leader(part["leaderId"], part.get("leaderEpoch", -1), response_us)
        return "; ".join(notes), sender if isinstance(sender, int) else -1

    def _leader_request(
        self, api: str, request: _Body, request_us: int | None
    ) -> tuple[list[str], int]:
        """BeginQuorumEpoch and EndQuorumEpoch come from the leader they name."""
        notes, sender = [], -1
        for part in partitions(request):
            if "leaderId" not in part:
                continue
            sender, number = part["leaderId"], part.get("leaderEpoch", -1)
            notes.append(f"leader {sender}, epoch {number}")
            if request_us is None or not isinstance(number, int):
                continue
            self.leader(sender, number, request_us)
            epoch = self.epochs.get(number)
            if api == "EndQuorumEpoch" and epoch is not None and epoch.ended is None:
                epoch.ended = request_us
        return notes, sender

    def _vote(self, request: _Body, response: _Body, request_us: int | None) -> list[str]:
        granted = [p.get("voteGranted") for p in partitions(response)]
        notes = []
        for part in partitions(request):
            candidate, number = part.get("replicaId", -1), part.get("replicaEpoch", -1)
            if not (isinstance(candidate, int) and isinstance(number, int)):
                continue
            verdict = _VERDICTS.get(granted[0] if granted else None, "")
            if part.get("preVote"):
                if request_us is not None:
                    self.pre_votes.append((request_us, candidate, number))
                notes.append(f"pre-vote for {candidate}, epoch {number}{verdict}")
                continue
            notes.append(f"vote for {candidate}, epoch {number}{verdict}")
            if request_us is None or number < 0:
                continue
            entry = self._epoch(number, request_us).candidates.setdefault(
                candidate, [request_us, 0]
            )
            entry[0] = min(entry[0], request_us)
            entry[1] += sum(1 for g in granted if g)
        return notes

    def _fetch(
        self, row: dict[str, Any], request_us: int | None, response_us: int | None
    ) -> tuple[str, int]:
        note, sender = "", -1
        replica = _FETCH_REPLICA.search(row["request_json"] or "")
        epoch = _FETCH_EPOCH.search(row["request_json"] or "")
        if replica and int(replica.group(1)) >= 0:
            sender = int(replica.group(1))
            note = f"replica {sender}"
            if epoch:
                note += f" at epoch {epoch.group(1)}"
        found = _FETCH_LEADER.search(row["response_json"] or "")
        if found and response_us is not None:
            leader_id, number = int(found.group(1)), int(found.group(2))
            self.leader(leader_id, number, response_us)
            if leader_id >= 0:
                note += f"; leader {leader_id}, epoch {number}"
        return note.lstrip("; "), sender

    def _learn_endpoints(self, request: _Body, response: _Body) -> None:
        """Node ids of the quorum's listeners, to name a connection's server."""
        for body in (request, response):
            if not body:
                continue
            for key in ("nodeEndpoints", "brokers"):
                for entry in _dicts(body.get(key)):
                    node = entry.get("nodeId", entry.get("brokerId"))
                    if isinstance(node, int) and "host" in entry:
                        self.endpoints[f"{entry['host']}:{entry.get('port')}"] = node
            leaders = {p["leaderId"] for p in partitions(body) if "leaderId" in p}
            if len(leaders) == 1:
                for entry in _dicts(body.get("leaderEndpoints")):
                    self.endpoints[f"{entry.get('host')}:{entry.get('port')}"] = next(iter(leaders))

    def summary(self, t0_us: int, limit: int) -> dict[str, Any]:
        """The epochs (the latest ``limit``) and pre-votes as offsets from ``t0_us``, for the page."""
        numbers = sorted(self.epochs)
        shown = numbers[-limit:]
        epochs = []
        for number in shown:
            epoch = self.epochs[number]
            epochs.append(
                {
                    "epoch": number,
                    "leaders": sorted(epoch.leaders, key=epoch.leaders.__getitem__),
                    "led_from": min(epoch.leaders.values()) - t0_us if epoch.leaders else None,
                    "first": epoch.first - t0_us,
                    "last": epoch.last - t0_us,
                    "ended": None if epoch.ended is None else epoch.ended - t0_us,
                    "candidates": [
                        [c, first - t0_us, votes]
                        for c, (first, votes) in sorted(epoch.candidates.items())
                    ],
                }
            )
        low = shown[0] if shown else 0
        pre_votes = sorted({(t - t0_us, c, e) for t, c, e in self.pre_votes if e >= low})
        return {"epochs": epochs, "epochs_total": len(numbers), "pre_votes": pre_votes[:limit]}


def _dicts(value: object) -> list[dict[str, Any]]:
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def _parsed(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
