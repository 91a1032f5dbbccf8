"""What a data source task hands Spark: its shard's rows (unsorted) as Arrow batches of the table's
exact types, converted a batch at a time.

``to_arrow`` is checked against pyarrow's own row-by-row conversion on rows of every column type
(None included); ``arrow_batches`` for order, sizes and the rows it frees; the unsorted shard decode
and the reader's ``read`` against local mode's rows.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from captures import T0, conversation, pcap_of, write
from kraftwire.spark_decoders import decode_local
from kraftwire.spark_decoders.spark.shards import decode_shard
from kraftwire.spark_decoders.spark.datasource import KafkaPcapReader, Shard
from kraftwire.spark_decoders.kafka.rows import sort_key
from kraftwire.spark_decoders.output.tables import (
    EXCHANGES,
    TABLES,
    arrow_batches,
    arrow_schema,
    to_arrow,
    utc_aware,
)
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

PORTS = frozenset({9092, 9093})


def _values(kind: pa.DataType) -> st.SearchStrategy:
    """Values of one Arrow column type as the decoders put them in rows (None for no value)."""
    if pa.types.is_string(kind):
        plain = st.text()
    elif pa.types.is_boolean(kind):
        plain = st.booleans()
    elif pa.types.is_integer(kind):
        bits = kind.bit_width - 1
        plain = st.integers(-(1 << bits), (1 << bits) - 1)
    elif pa.types.is_floating(kind):
        plain = st.floats(allow_nan=False)
    elif pa.types.is_timestamp(kind):
        plain = st.datetimes(timezones=st.just(dt.timezone.utc))
    else:
        plain = st.lists(_values(kind.value_type), max_size=4)
    return st.none() | plain


def _rows(table: str) -> st.SearchStrategy:
    schema = arrow_schema(table)
    return st.lists(
        st.fixed_dictionaries({field.name: _values(field.type) for field in schema}), max_size=20
    )


@settings(max_examples=60, deadline=None)
@given(data=st.data(), table=st.sampled_from(TABLES))
def test_to_arrow_equals_pyarrows_row_by_row_conversion(data, table):
    rows = data.draw(_rows(table))
    schema = arrow_schema(table)
    batch = to_arrow(rows, table)
    assert batch.schema == schema
    assert batch.equals(pa.RecordBatch.from_pylist(rows, schema=schema))


def test_to_arrow_names_a_missing_column():
    row = {field.name: None for field in arrow_schema(EXCHANGES)}
    del row["status"]
    with pytest.raises(KeyError, match="status"):
        to_arrow([row])


@settings(max_examples=40, deadline=None)
@given(count=st.integers(0, 50), size=st.integers(1, 12))
def test_arrow_batches_keep_the_order_and_free_the_rows(count, size):
    rows = [{field.name: None for field in arrow_schema(EXCHANGES)} for _ in range(count)]
    for number, row in enumerate(rows):
        row["correlation_id"] = number
    held: list[dict] = rows[:]
    batches = arrow_batches(held, EXCHANGES, size)
    seen = []
    for batch in batches:
        assert 0 < batch.num_rows <= size
        assert len(held) == count - len(seen) - batch.num_rows  # converted rows are let go
        seen += batch.column("correlation_id").to_pylist()
    assert seen == list(range(count)) and held == []


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """Four connections whose exchanges interleave, and a fifth whose one request is never
    answered: its row is made when the capture ends, but sorts among the first."""
    [unanswered] = kraft_exchanges(1, seed=9)
    silent = conversation([], client=("10.0.0.9", 40009), server=("10.0.9.9", 9092), close=False)
    silent.send(True, unanswered.request, T0 + 500)
    convs = [silent] + [
        conversation(
            kraft_exchanges(6 + 3 * i, seed=i),
            client=(f"10.0.0.{i + 1}", 40000 + i),
            server=("10.0.9.9", 9092),
            t0=T0 + 1000 * i,
            mss=300,
        )
        for i in range(4)
    ]
    packets = sorted(p for c in convs for p in c.packets)
    return write(tmp_path_factory.mktemp("shard"), "four.pcap", pcap_of(packets))


@pytest.mark.parametrize("shards", [1, 2, 3])
def test_unsorted_shards_hold_local_modes_rows(capture, shards):
    local = decode_local([capture])
    unsorted = []
    for shard in range(shards):
        ordered = decode_shard([capture], None, PORTS, shard, shards)
        rows = decode_shard([capture], None, PORTS, shard, shards, in_order=False)
        assert ordered == sorted(rows, key=sort_key)
        unsorted += rows
    assert sorted(unsorted, key=sort_key) == local
    if shards == 1:  # the capture exercises the order: unsorted, the unanswered request comes last
        assert unsorted != local and unsorted[-1]["status"] == "no_response"


def test_reader_yields_its_shards_rows_as_arrow_batches(capture):
    local = decode_local([capture])
    reader = KafkaPcapReader([capture], None, PORTS, 2, EXCHANGES)
    rows = []
    for shard in reader.partitions():
        for batch in reader.read(shard):
            assert batch.schema == arrow_schema(EXCHANGES)
            rows += [utc_aware(row) for row in batch.to_pylist()]
    assert sorted(rows, key=sort_key) == local
