"""ceql.spark.sql: MATCH_RECOGNIZE on Spark DataFrames gives the local engine's rows, batch
(partitioned or not, from a DataFrame or a temporary view) and streaming (files arriving one by
one, rows shuffled within a file)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pyarrow as pa
import pytest

import ceql

QUERIES = [
    # partitioned, navigation, aggregates, CLASSIFIER, MATCH_NUMBER
    "SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY p ORDER BY t, seq MEASURES FIRST(A.seq) AS a, LAST(B.seq) AS b, "
    "COUNT(B.*) AS n, CLASSIFIER() AS c, MATCH_NUMBER() AS m ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW "
    "PATTERN (A B+ C) DEFINE A AS A.k = 'a', B AS B.k <> 'a' AND B.v >= PREV(B.v), C AS C.k = 'c')",
    # no PARTITION BY: one task
    "SELECT T.a, T.s FROM ev MATCH_RECOGNIZE (ORDER BY t, seq MEASURES A.seq AS a, SUM(B.v) AS s "
    "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B{1,3} C?) DEFINE A AS A.v > 6, B AS B.v < A.v) AS T "
    "WHERE T.s > 3",
    # ALL ROWS PER MATCH with unmatched rows and RUNNING measures
    "SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY p ORDER BY t, seq MEASURES RUNNING COUNT(*) AS r, "
    "FINAL LAST(seq) AS f ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A B) DEFINE B AS B.v > A.v)",
    # row aggregates (Arrow lists through Spark) and string functions of CLASSIFIER()
    "SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY p ORDER BY t, seq MEASURES ARRAY_AGG(v) AS a, "
    "FINAL MAX_BY(seq, v) AS m, CONCAT_WS('', ARRAY_AGG(LOWER(CLASSIFIER()))) AS c ALL ROWS PER MATCH "
    "PATTERN (A B+) DEFINE B AS B.v >= PREV(B.v) AND LOWER(PREV(CLASSIFIER())) <> 'x')",
    # scalar functions, and MAX_BY in a condition (the matcher's accumulators)
    "SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY p ORDER BY t, seq MEASURES ROUND(SQRT(SUM(v)), 2) AS r, "
    "GREATEST(FIRST(v), LAST(v)) AS g, SUBSTRING(CONCAT(B.k, 'xy'), 2) AS s PATTERN (A B+) "
    "DEFINE B AS MAX_BY(v, CLASSIFIER()) >= POWER(2, 2) AND LENGTH(B.k) = 1)",
]


def rows_of(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out, t = [], 0
    for i in range(n):
        t += rng.choice([0, 1, 1, 2])
        out.append({"p": rng.randint(1, 3), "t": t, "k": rng.choice("abc"), "v": rng.randint(0, 9), "seq": i})
    return out


def local_rows(text: str, rows: list[dict], table_name: str = "ev") -> list[tuple]:
    return sorted(tuple(r.values()) for r in ceql.sql.run(text, {table_name: pa.Table.from_pylist(rows)}).to_pylist())


@pytest.mark.parametrize("text", QUERIES)
def test_batch_matches_local(spark, text: str) -> None:
    rows = rows_of(150, 3)
    df = spark.createDataFrame(rows).repartition(3)  # rows spread over tasks
    got = sorted(tuple(r) for r in ceql.spark.sql(text, ev=df).collect())
    assert got == local_rows(text, rows)
    assert got


def test_temporary_view_and_errors(spark) -> None:
    rows = rows_of(60, 4)
    spark.createDataFrame(rows).createOrReplaceTempView("ev_view")
    text = QUERIES[0].replace("FROM ev ", "FROM ev_view ")
    assert sorted(tuple(r) for r in ceql.spark.sql(text).collect()) == local_rows(text, rows, "ev_view")
    with pytest.raises(ceql.QueryError, match="neither given"):
        ceql.spark.sql(QUERIES[0].replace("FROM ev ", "FROM missing "))
    with pytest.raises(ceql.QueryError, match="no such column"):
        ceql.spark.sql(QUERIES[0].replace("A.k = 'a'", "A.kind = 'a'"), ev=spark.createDataFrame(rows))
    # what the compiler refuses (after analysis) is refused on the driver, before any task runs
    refused = QUERIES[0].replace("B.k <> 'a'", "CONCAT(CLASSIFIER(), B.k) <> 'a'")
    with pytest.raises(ceql.QueryError, match="computed while matching") as local:
        ceql.sql.run(refused, {"ev": pa.Table.from_pylist(rows)})
    with pytest.raises(ceql.QueryError, match="computed while matching") as on_spark:
        ceql.spark.sql(refused, ev=spark.createDataFrame(rows))
    assert str(on_spark.value) == str(local.value)


def test_streaming_matches_batch(spark, tmp_path: Path) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    rows = rows_of(300, 5)
    source = tmp_path / "in"
    source.mkdir()
    rng = random.Random(5)
    for number in range(0, len(rows), 50):
        chunk = rows[number : number + 50]
        rng.shuffle(chunk)  # only ORDER BY orders rows
        path = source / f"part{number:04d}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in chunk))
        os.utime(path, (1_700_000_000 + number, 1_700_000_000 + number))
    schema = T.StructType(
        [T.StructField(name, T.StringType() if name == "k" else T.LongType()) for name in ("p", "t", "k", "v", "seq")]
    )
    stream = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .withColumn("ts", F.timestamp_seconds("t"))
    )
    text = (
        "SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY p ORDER BY ts, seq MEASURES FIRST(A.seq) AS a, "
        "LAST(B.seq) AS b, COUNT(B.*) AS n, C.seq AS c, MATCH_NUMBER() AS m ONE ROW PER MATCH "
        "AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+ C) DEFINE A AS A.k = 'a', B AS B.k = 'b' AND "
        "B.v >= PREV(B.v), C AS C.k = 'c')"
    )
    result = ceql.spark.sql(text, ev=stream)
    query = (
        result.writeStream.format("memory").queryName("mr_stream").outputMode("append").trigger(availableNow=True).start()
    )
    query.awaitTermination()
    got = sorted(tuple(r) for r in spark.sql("SELECT * FROM mr_stream").collect())
    table = pa.Table.from_pylist(rows)
    table = table.append_column("ts", table.column("t").cast(pa.timestamp("s")))
    expected = sorted(tuple(r.values()) for r in ceql.sql(text, ev=table).to_pylist())
    assert got == expected
    assert len(got) >= 5


OUTER_QUERIES = [
    # ORDER BY, GROUP BY and WHERE around MATCH_RECOGNIZE
    "SELECT p, COUNT(*) AS matches, MAX(n) AS longest FROM ev MATCH_RECOGNIZE (PARTITION BY p ORDER BY t, seq "
    "MEASURES COUNT(B.*) AS n PATTERN (A B+) DEFINE A AS A.k = 'a', B AS B.v >= PREV(B.v)) AS r "
    "WHERE n > 0 GROUP BY p ORDER BY p",
    # WITH and a join of the result with its input
    "WITH big AS (SELECT * FROM ev WHERE v > 2) SELECT r.a, e.k FROM big MATCH_RECOGNIZE (ORDER BY t, seq "
    "MEASURES A.seq AS a PATTERN (A B) DEFINE B AS B.v > A.v) AS r JOIN ev e ON e.seq = r.a ORDER BY r.a",
]


@pytest.mark.parametrize("text", OUTER_QUERIES)
def test_the_sql_around_match_recognize_gives_the_local_rows(spark, text: str) -> None:
    rows = rows_of(60, 7)
    df = spark.createDataFrame(rows).repartition(3)
    got = [tuple(r) for r in ceql.spark.sql(text, ev=df).collect()]
    expected = [tuple(r.values()) for r in ceql.sql.run(text, {"ev": pa.Table.from_pylist(rows)}).to_pylist()]
    assert got == expected and got


def test_a_ceql_error_in_a_spark_task_is_one_ceql_message(spark, tmp_path: Path, capsys) -> None:
    # the division fails inside the Spark task that matches (mapInArrow): the user sees ceql's
    # message, one line, not Spark's PythonException with the worker's traceback and a Java stack
    import pyarrow.parquet as pq

    from ceql.cli import main

    pq.write_table(pa.table({"t": [1, 2, 3], "v": [5, 5, 7]}), tmp_path / "r.parquet")
    text = "SELECT * FROM r MATCH_RECOGNIZE (ORDER BY t MEASURES B.v AS v PATTERN (A B) DEFINE B AS 100 / (B.v - A.v) > 1)"
    assert main(["sql", text, "--engine", "spark", "--master", "local[1]", "--input", f"r={tmp_path / 'r.parquet'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "division by zero" in err, err
    assert len(err.splitlines()) == 1, err
    for noise in ("PythonException", "Traceback", "java.", "org.apache", "SparkException"):
        assert noise not in err, err


def test_many_partitions_share_tasks_and_equal_local(spark) -> None:
    """Many PARTITION BY keys (two columns, a double with both zeros, nulls) in few tasks: each
    task matches its buckets' partitions at once and the rows equal the local engine's."""
    rng = random.Random(11)
    rows = [
        {
            "p": rng.choice([0.0, -0.0, 1.5, None]),
            "q": rng.choice([None, *range(40)]),
            "t": i // 3,
            "v": rng.randint(0, 9),
            "seq": i,
        }
        for i in range(600)
    ]
    text = (
        "SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY p, q ORDER BY t, seq MEASURES FIRST(A.seq) AS a, "
        "LAST(B.seq) AS b, MATCH_NUMBER() AS m ONE ROW PER MATCH PATTERN (A B+) DEFINE B AS B.v >= PREV(B.v))"
    )
    df = spark.createDataFrame(rows, "p double, q long, t long, v long, seq long").repartition(4)
    found = ceql.spark.sql(text, ev=df)
    got = sorted((tuple(r) for r in found.collect()), key=repr)  # (None and numbers do not compare)
    local = ceql.sql.run(text, {"ev": pa.Table.from_pylist(rows)}).to_pylist()
    assert got == sorted((tuple(r.values()) for r in local), key=repr)
    assert len(got) > 50


def test_exact_decimals_through_spark(spark) -> None:
    # a DecimalType column arrives as Arrow decimal128; decimal measures go back as DecimalType,
    # and Spark SQL sums them exactly around MATCH_RECOGNIZE, as DuckDB does locally
    from decimal import Decimal

    rows = [{"p": r["p"], "t": r["t"], "seq": r["seq"], "price": Decimal(r["v"] * 37 - 150).scaleb(-2)} for r in rows_of(80, 9)]
    table = pa.Table.from_pylist(rows, schema=pa.schema([("p", pa.int64()), ("t", pa.int64()), ("seq", pa.int64()), ("price", pa.decimal128(10, 2))]))
    df = spark.createDataFrame(table.to_pandas(), schema="p long, t long, seq long, price decimal(10,2)").repartition(2)
    inner = (
        "ev MATCH_RECOGNIZE (PARTITION BY p ORDER BY t, seq MEASURES A.price AS start, LAST(B.price) - A.price AS rise, "
        "AVG(B.price) AS mean, B.price / 3 AS third PATTERN (A B+) DEFINE B AS B.price > PREV(B.price) + 0.05) AS r"
    )
    for text in (f"SELECT * FROM {inner}", f"SELECT p, SUM(rise) AS total, COUNT(*) AS n FROM {inner} GROUP BY p ORDER BY p"):
        got = sorted(tuple(r) for r in ceql.spark.sql(text, ev=df).collect())
        expected = sorted(tuple(r.values()) for r in ceql.sql.run(text, {"ev": table}).to_pylist())
        assert got == expected and got
        assert all(isinstance(v, Decimal) for row in got for v in row[1:2])
