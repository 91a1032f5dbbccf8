"""Arrays of fixed-size structs (one run of plain fields, no tags on the wire) are read a whole array at
a time, one Struct.iter_unpack row per element; an element with tags sends the array down the element
by element path. Whichever path a reader takes, each element must be its own fully filled instance of
the generated class, in the array's own list type."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.generated._base import MapKeyList
from kraftwire.generated.api_versions_response import ApiVersion, ApiVersionsResponse
from kraftwire.generated.fetch_request import FetchPartition, FetchRequest, FetchTopic

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)

PARTITIONS = st.builds(
    FetchPartition,
    partition=INT32,
    current_leader_epoch=INT32,
    fetch_offset=INT64,
    last_fetched_epoch=INT32,
    log_start_offset=INT64,
    partition_max_bytes=INT32,
)


def _request(partitions: list[FetchPartition]) -> FetchRequest:
    return FetchRequest(topics=[FetchTopic(topic_id=uuid.UUID(int=7), partitions=partitions)])


def _assert_distinct_filled_copies(decoded: list, expected: list, cls: type) -> None:
    assert len(decoded) == len(expected)
    assert len({id(element) for element in decoded}) == len(decoded)  # no instance shared
    for element, wanted in zip(decoded, expected, strict=True):
        assert type(element) is cls
        # every field filled: reading one never raises (compiled classes have no __slots__)
        for attr in [*cls._KINDS, "unknown_tagged_fields"]:
            assert getattr(element, attr) == getattr(wanted, attr), attr


@settings(max_examples=60, deadline=None)
@given(st.lists(PARTITIONS, max_size=40))
def test_untagged_rows_decode_to_distinct_complete_instances(partitions):
    message = _request(partitions)
    data = message.encode(18)
    decoded = FetchRequest.decode(data, 18)
    assert decoded == message
    _assert_distinct_filled_copies(decoded.topics[0].partitions, partitions, FetchPartition)
    assert decoded.encode(18) == data


@settings(max_examples=40, deadline=None)
@given(st.lists(PARTITIONS, min_size=1, max_size=20), st.data())
def test_one_tagged_row_takes_the_element_path_with_the_same_result(partitions, data):
    tagged = data.draw(st.integers(0, len(partitions) - 1))
    partitions[tagged].high_watermark = data.draw(INT64.filter(lambda v: v != 2**63 - 1))
    message = _request(partitions)
    encoded = message.encode(18)
    decoded = FetchRequest.decode(encoded, 18)
    assert decoded == message
    _assert_distinct_filled_copies(decoded.topics[0].partitions, partitions, FetchPartition)
    assert decoded.encode(18) == encoded


def test_every_row_of_a_long_array_is_read():
    partitions = [FetchPartition(partition=i, fetch_offset=i << 40) for i in range(1000)]
    decoded = FetchRequest.decode(_request(partitions).encode(18), 18)
    _assert_distinct_filled_copies(decoded.topics[0].partitions, partitions, FetchPartition)


def test_a_keyed_row_array_keeps_its_keyed_list():
    keys = [ApiVersion(api_key=k, min_version=0, max_version=k % 5) for k in (18, 1, 55, 1)]
    message = ApiVersionsResponse(api_keys=keys)
    decoded = ApiVersionsResponse.decode(message.encode(3), 3)
    assert type(decoded.api_keys) is MapKeyList
    _assert_distinct_filled_copies(decoded.api_keys, keys, ApiVersion)
    assert decoded.api_keys.find(55) is decoded.api_keys[2]
    assert decoded.api_keys.find_all(1) == [keys[1], keys[3]]
