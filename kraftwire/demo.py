"""``make demo``: regenerate the KRaft codecs, show they match ``generated/``, and round-trip a VoteRequest.

Runs on an embedded default (our own ``schemas/``), so it needs nothing beside the repo.
"""

from __future__ import annotations

import filecmp
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _hexdump(data: bytes) -> str:
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"  {offset:04x}  {chunk.hex(' '):<47}  {text}")
    return "\n".join(lines)


def regenerate_and_compare() -> bool:
    from kraftwire.codegen.generate import generate

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "generated"
        count = generate([REPO / "schemas"], out, "kraftwire.generated")
        names = sorted(p.name for p in out.glob("*.py"))
        _, mismatch, missing = filecmp.cmpfiles(out, REPO / "generated", names, shallow=False)
        extra = sorted({p.name for p in (REPO / "generated").glob("*.py")} - set(names))
        print(f"Regenerated {count} KRaft message modules from schemas/ into a temporary directory.")
        if mismatch or missing or extra:
            print(f"  DIFFERS from generated/: changed {mismatch}, missing {missing}, extra {extra}")
            return False
        print(f"  identical to generated/ ({len(names)} files, byte for byte)")
        return True


def vote_request_round_trip() -> None:
    import json

    from kraftwire.generated.vote_request import PartitionData, TopicData, VoteRequest

    request = VoteRequest(
        cluster_id="kraftwire-demo",
        voter_id=1,
        topics=[
            TopicData(
                topic_name="__cluster_metadata",
                partitions=[
                    PartitionData(
                        partition_index=0,
                        replica_epoch=7,
                        replica_id=2,
                        last_offset_epoch=6,
                        last_offset=1234,
                        pre_vote=True,
                    )
                ],
            )
        ],
    )
    data = request.encode(2)
    print("\nVoteRequest v2 with PreVote=true (KIP-996), encoded:")
    print(_hexdump(data))
    decoded = VoteRequest.decode(data, 2)
    print("Decoded back, in Kafka's JSON form:")
    print(json.dumps(decoded.to_json(2), indent=2))
    assert decoded == request


def main() -> int:
    ok = regenerate_and_compare()
    vote_request_round_trip()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
