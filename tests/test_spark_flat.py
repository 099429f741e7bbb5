"""``find(..., layout="flat")``: the same matches as the nested layout, with no struct or list
column (``ceql.spark.output.flat_batch``): the text of lists and the naming of struct fields
on hand-made batches (no Spark), then on every plan (partitioned, sharded, single; positions;
NOT FOLLOWED BY per key with the stream's triggers) against the nested rows flattened, and the
nested rows against the local engine."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet
import pytest

import ceql
import ceql.spark
from ceql.errors import CeqlError
from ceql.spark.output import flat_batch


def test_flat_batch_writes_lists_as_text_and_names_struct_fields() -> None:
    """A list of one-field structs is its values separated by spaces; of two-field structs,
    each element's fields joined by a comma; a null value is empty text, a null list null, an
    empty list empty text; struct fields become ``<column>_<field>`` (nulls carried)."""
    one = pa.list_(pa.struct([("id", pa.int64())]))
    two = pa.list_(pa.struct([("card", pa.string()), ("id", pa.int64())]))
    batch = pa.RecordBatch.from_pydict(
        {
            "query": ["q", "q", "q", "q"],
            "partition": pa.array(
                [{"card": "c1"}, {"card": None}, None, {"card": "c2"}], pa.struct([("card", pa.string())])
            ),
            "n": [1, 2, 3, 4],
            "events": pa.array([[{"id": 101}, {"id": 102}], [], None, [{"id": None}, {"id": 7}]], one),
            "ids": pa.array(
                [{"b": [{"card": "c1", "id": 1}]}, {"b": []}, {"b": None}, None], pa.struct([("b", two)])
            ),
            "positions": pa.array([[0, 5], [1], [], None], pa.list_(pa.int64())),
        }
    )
    flat = flat_batch(batch)
    assert flat.schema.names == ["query", "partition_card", "n", "events", "ids_b", "positions"]
    assert all(not pa.types.is_nested(f.type) for f in flat.schema)
    assert flat.to_pydict() == {
        "query": ["q", "q", "q", "q"],
        "partition_card": ["c1", None, None, "c2"],
        "n": [1, 2, 3, 4],
        "events": ["101 102", "", None, " 7"],
        "ids_b": ["c1,1", "", None, None],
        "positions": ["0 5", "1", "", None],
    }
    # A slice (what a task yields in pieces) keeps each row's own list.
    assert flat_batch(batch.slice(3, 1)).column("events").to_pylist() == [" 7"]
    assert flat_batch(batch.slice(1, 2)).column("positions").to_pylist() == ["1", ""]


def test_flat_batch_refuses_two_columns_of_one_name() -> None:
    batch = pa.RecordBatch.from_pydict({"partition": pa.array([{"card": "c1"}]), "partition_card": ["x"]})
    with pytest.raises(CeqlError, match="partition_card"):
        flat_batch(batch)


DECLARATION = """CREATE STREAM S {
EVENT A { id:int, k:int, v:int, t:primary_time },
EVENT B { id:int, k:int, v:int, t:primary_time }
}"""

QUERIES = [
    # partitioned
    ("SELECT * FROM S WHERE A AS x; B+ AS y FILTER y.v > x.v PARTITION BY [k] WITHIN 5 SECONDS", {}),
    # partitioned, with positions (global numbering)
    ("SELECT * FROM S WHERE A AS x; B AS y PARTITION BY [k] WITHIN 4 SECONDS", {"positions": True}),
    # sharded
    ("SELECT * FROM S WHERE A AS x; B AS y WITHIN 3 SECONDS", {}),
    # single, measures
    ("SELECT LAST x, COUNT(y) AS n WHERE A AS x; B+ AS y", {}),
    # NOT FOLLOWED BY per key, the stream's triggers found afterwards
    (
        "SELECT * FROM S WHERE A AS x NOT FOLLOWED BY B AS y PARTITION BY [k] WITHIN 3 SECONDS",
        {"positions": True},
    ),
]


@pytest.mark.parametrize("seed", [1, 2])
def test_flat_layout_is_the_nested_one_flattened_on_every_plan(spark, seed: int) -> None:
    rng = random.Random(seed)
    rows, now = [], 0
    for index in range(150):
        now += rng.randint(0, 1)
        rows.append(
            {
                "event_type": rng.choice("AB"),
                "id": index,
                "k": rng.randint(0, 3),
                "v": rng.randint(0, 4),
                "t": now,
            }
        )
    table = pa.Table.from_pylist(rows)
    df = spark.createDataFrame(table.to_pandas()).repartition(3)
    schema = ceql.declare(DECLARATION)
    for text, options in QUERIES:
        nested = ceql.spark.find(
            df, text, DECLARATION, tie_break="id", id_columns=["id"], **options
        ).toArrow()
        flat = ceql.spark.find(
            df, text, DECLARATION, tie_break="id", id_columns=["id"], layout="flat", **options
        )
        assert all(not _nested_type(f.dataType) for f in flat.schema.fields), text
        flat_rows = flat.toArrow()
        expected = [row for batch in nested.to_batches() for row in flat_batch(batch).to_pylist()]
        assert sorted(flat_rows.to_pylist(), key=repr) == sorted(expected, key=repr), text
        assert flat_rows.column_names == flat_batch(nested.to_batches()[0]).schema.names, text
        # ... and the nested rows are the local engine's (the events of each match by id).
        local = ceql.compile(text, schema).run(table, output="arrow")
        local_ids = sorted(
            tuple(table.column("id")[p].as_py() for p in m) for m in local.column("positions").to_pylist()
        )
        spark_ids = sorted(tuple(e["id"] for e in m) for m in nested.column("events").to_pylist())
        assert spark_ids == local_ids, text
        assert sorted(r["events"] for r in flat_rows.to_pylist()) == sorted(
            " ".join(map(str, m)) for m in local_ids
        )


def test_flat_layout_is_for_batch_and_named_right(spark, tmp_path) -> None:
    """A misspelt layout is refused; so is the flat layout on a stream (streams keep the
    nested rows)."""
    events = pa.table({"event_type": ["A"], "id": [1], "k": [1], "v": [1], "t": [1]})
    df = spark.createDataFrame(events.to_pandas())
    with pytest.raises(CeqlError, match="layout= must be"):
        ceql.spark.find(df, QUERIES[0][0], DECLARATION, tie_break="id", layout="flattened")
    pyarrow.parquet.write_table(events, tmp_path / "events.parquet")
    stream = spark.readStream.schema(df.schema).parquet(str(tmp_path))
    with pytest.raises(CeqlError, match="layout are for batch"):
        ceql.spark.find(stream, QUERIES[0][0], DECLARATION, tie_break="id", layout="flat")


def _nested_type(kind) -> bool:
    from pyspark.sql import types as T

    return isinstance(kind, (T.StructType, T.ArrayType, T.MapType))
