"""Log recovery's cuts, told in DescribeQuorum answers so that ``kraftwire quorum describe`` shows them.

A node whose partition directory holds side files of bytes recovery cut (see
:mod:`kraftwire.node.storage.recovery`) adds one tagged field to the DescribeQuorum responses it
sends: tag ``RECOVERY_NOTICE_TAG`` (outside the range Kafka's schemas number their tags from 0), a
UTF-8 JSON list of ``{"nodeId", "file", "bytes", "batches", "records", "firstOffset",
"lastOffset"}``. Tagged fields a reader does not know are skipped (KIP-482), so Kafka's tools read
the answer as before; with nothing cut, the answer carries no such field and is byte for byte what
it was.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from kraftwire.node.storage.recovery import CutData

RECOVERY_NOTICE_TAG = 0x6B77  # "kw"


def attach(response: Any, cuts: Sequence[CutData], node_id: int) -> None:
    """Add the notice of ``cuts`` to a DescribeQuorum response (nothing when there are none)."""
    if not cuts:
        return
    notice = [{"nodeId": node_id, **cut.as_json()} for cut in cuts]
    tags = [t for t in response.unknown_tagged_fields or () if t[0] != RECOVERY_NOTICE_TAG]
    tags.append((RECOVERY_NOTICE_TAG, json.dumps(notice).encode()))
    response.unknown_tagged_fields = sorted(tags)


def read(response: Any) -> list[dict[str, Any]]:
    """The cuts a DescribeQuorum response tells of ([] for Kafka's answers and uncut logs)."""
    for tag, value in response.unknown_tagged_fields or ():
        if tag == RECOVERY_NOTICE_TAG:
            try:
                notice = json.loads(value)
            except ValueError:
                return []
            return (
                [cut for cut in notice if isinstance(cut, dict)] if isinstance(notice, list) else []
            )
    return []


def notice_lines(cuts: list[dict[str, Any]]) -> list[str]:
    """One line per cut for the text output of ``quorum describe --status``."""
    return [
        f"LogRecoveryCut:         node {cut.get('nodeId')} lost {cut.get('batches')} batches, "
        f"{cut.get('records')} records (offsets {cut.get('firstOffset')}..{cut.get('lastOffset')})"
        f", kept in {cut.get('file')}"
        for cut in cuts
    ]
