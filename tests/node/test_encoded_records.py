"""A batch whose decoded records the log dropped (:func:`keep_encoded`, once they were delivered) still
reads as the same batch: same length, same values, equal to the batch it was, for data and control
batches alike; and a batch with no encoded bytes yet keeps its records (nothing could restore them).
"""

from __future__ import annotations

from kraftwire.generated.leader_change_message import LeaderChangeMessage, Voter
from kraftwire.node.core import batches
from kraftwire.node.core.api import LogBatch


def encoded(batch: LogBatch) -> LogBatch:
    return batches.decode_batches(batches.encode_batches([batch]))[0]


def test_a_data_batch_left_encoded_reads_the_same():
    original = LogBatch(7, 3, (b"a", b"", b"c" * 300), False, 1234)
    batch = encoded(original)
    batches.keep_encoded(batch)
    assert isinstance(batch.records, batches.EncodedRecords)
    assert len(batch.records) == 3 and batch.next_offset == 10 and batch.last_offset == 9
    assert list(batch.records) == [b"a", b"", b"c" * 300]
    assert batch.records[2] == b"c" * 300 and batch.records[:2] == (b"a", b"")
    assert batch == original and hash(batch) == hash(original)
    assert batches.encode_batches([batch]) == batch.raw  # served from its bytes as before


def test_a_control_batch_left_encoded_decodes_its_control_records():
    change = LeaderChangeMessage(leader_id=2, voters=[Voter(voter_id=2)], granting_voters=[])
    batch = encoded(LogBatch(0, 5, (change,), True, 99))
    batches.keep_encoded(batch)
    assert isinstance(batch.records, batches.EncodedRecords)
    assert list(batch.records) == [change]


def test_records_without_encoded_bytes_are_kept():
    batch = LogBatch(0, 1, (b"x",))
    batches.keep_encoded(batch)
    assert batch.records == (b"x",) and type(batch.records) is tuple
