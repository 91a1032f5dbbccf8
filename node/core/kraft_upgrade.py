"""The kraft.version upgrade, 0 → 1 (Kafka's ``LeaderState.maybeAppendUpgradedKRaftVersion``,
docs/kraft.md §7.6).

Under kraft.version 0 the voters are the static ``controller.quorum.voters`` ids. Each follower reports
its directory id, listeners and supported range once per leader with UpdateRaftVoter; the leader keeps
them in memory (:attr:`LeaderState.volatile_voters`). The upgrade turns that in-memory set into the
first ``VotersRecord``, written in one control batch with ``KRaftVersionRecord(1)``; from its append on,
kraft.version 1 rules (dynamic voter changes) apply.
"""

from __future__ import annotations

from kraftwire.generated import k_raft_version_record as _kv

from .api import KRaftVersionUpgradeError, NotLeaderError, UpgradeKRaftVersion
from .leader import LeaderState
from .leader_ops import append_control
from .replica import Replica

HIGHEST_KRAFT_VERSION = 1


def upgrade_kraft_version(replica: Replica, ev: UpgradeKRaftVersion) -> bool:
    """Append the upgrade; returns True when a batch was appended (False: already there, or only
    validating). Raises :class:`NotLeaderError` or :class:`KRaftVersionUpgradeError`."""
    st = replica.state
    if not isinstance(st, LeaderState) or (ev.epoch is not None and ev.epoch != st.epoch):
        raise NotLeaderError(f"not leader of epoch {ev.epoch}: {st.describe()}")
    current = replica.control.kraft_version()
    if ev.version == current:
        return False
    if ev.version < current:
        raise KRaftVersionUpgradeError(f"kraft.version cannot go down from {current} to {ev.version}")
    if ev.version > HIGHEST_KRAFT_VERSION:
        raise KRaftVersionUpgradeError(f"kraft.version {ev.version} is unknown (highest {HIGHEST_KRAFT_VERSION})")
    voters = st.volatile_voters
    static = replica.voters()
    if voters is None or voters.ids() != static.ids():
        raise KRaftVersionUpgradeError("the in-memory voter set does not match the configured voters")
    missing = [v.key.id for v in voters if v.key.directory_id is None]
    if missing:
        raise KRaftVersionUpgradeError(f"voters {missing} have not reported their directory id (UpdateRaftVoter)")
    unsupported = [v.key.id for v in voters if not v.kraft_version_range[0] <= ev.version <= v.kraft_version_range[1]]
    if unsupported:
        raise KRaftVersionUpgradeError(f"voters {unsupported} do not support kraft.version {ev.version}")
    if ev.validate_only:
        return False
    append_control(replica, st, [_kv.KRaftVersionRecord(version=0, k_raft_version=ev.version), voters.to_record()])
    st.volatile_voters = None
    st.update_voters(replica.voters(), replica.now)
    return True
