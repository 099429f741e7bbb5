"""One reading rule on every path (issue 38): every declared attribute present in the input is
typed and checked, also those the query does not read, and a bad value is a bad row under the
same policy everywhere. The same events, with bad values in read and unread columns, go to the
API (dicts, pandas, Arrow), the command line (CSV, JSON Lines, Parquet) and push: the same rows
are rejected for the same reasons, and the same matches are found."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ceql
from ceql.cli import main

DECL = (
    "CREATE STREAM S { EVENT A { id:int, v:double, qty:int, ok:boolean }, "
    "EVENT B { id:int, v:double, qty:int, ok:boolean } }"
)
SCHEMA = ceql.declare(DECL)
QUERY = "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[id > 0] AND b[v > 1.0]"
COLUMNS = ["event_type", "id", "v", "qty", "ok"]
# Every value as text, so that each format carries the same input; None: no value.
ROWS = [
    ["A", "1", "1.0", "1", "true"],
    ["B", "2", "2.0", "two", "true"],  # bad, in a column the query does not read
    ["B", "3", "x", "3", "true"],  # bad, in a column the query reads
    ["A", "4", "0.5", "5", "maybe"],  # bad boolean, not read
    ["B", "5", "3", "7", "false"],
    ["A", "6", "1", None, None],  # missing values are no bad rows
    ["B", "7", "4", "1e3", "true"],  # an int written as a float text: bad, not read
    ["Z", "8", "1", "1", "true"],  # an unknown type
    ["B", "9", "5", "9", "1"],
]
BAD = {1: "column qty", 2: "column v", 3: "column ok", 6: "column qty", 7: "unknown event type"}


def events() -> list[dict]:
    return [{k: v for k, v in zip(COLUMNS, row) if v is not None} for row in ROWS]


def api(data) -> tuple[list, dict[int, str]]:
    records: list[dict] = []
    query = ceql.compile(QUERY, SCHEMA)
    found = sorted(m.positions for m in query.run(data, on_error="dead-letter", dead_letter=records.append))
    return found, {r["row"]: r["reason"] for r in records}


def push() -> tuple[list, dict[int, str]]:
    """Event by event; a record names the row of its push (0), so each push is told apart here."""
    records: list[dict] = []
    evaluator = ceql.compile(QUERY, SCHEMA).evaluator(on_error="dead-letter", dead_letter=records.append)
    found = []
    rejected = {}
    for index, event in enumerate(events()):
        found += evaluator.push(event)
        if records:
            rejected[index] = records.pop()["reason"]
    found += evaluator.finish()
    return sorted(m.positions for m in found), rejected


def cli(tmp_path: Path, suffix: str) -> tuple[list, dict[int, str]]:
    table = pa.table({name: [row[i] for row in ROWS] for i, name in enumerate(COLUMNS)})
    path = tmp_path / f"events.{suffix}"
    if suffix == "csv":
        lines = [",".join(COLUMNS)] + [",".join("" if v is None else v for v in row) for row in ROWS]
        path.write_text("\n".join(lines) + "\n")
        first = 2  # the header is line 1
    elif suffix == "jsonl":
        path.write_text("".join(json.dumps(e) + "\n" for e in events()))
        first = 1
    else:
        pq.write_table(table, path)
        first = 1
    (tmp_path / "decl.core").write_text(DECL)
    out, dead = tmp_path / f"out-{suffix}.jsonl", tmp_path / f"dead-{suffix}.jsonl"
    argv = ["run", "-d", str(tmp_path / "decl.core"), "-q", QUERY, "-i", str(path), "-o", str(out)]
    argv += ["--on-error", "dead-letter", "--dead-letter", str(dead), "--quiet"]
    assert main(argv) == 0
    found = sorted(tuple(json.loads(line)["positions"]) for line in out.read_text().splitlines())
    records = [json.loads(line) for line in dead.read_text().splitlines()]
    return found, {r.get("line", r.get("row")) - first: r["reason"] for r in records}


def check(found: list, rejected: dict[int, str], expected_matches: list) -> None:
    assert found == expected_matches
    assert sorted(rejected) == sorted(BAD)
    for row, reason in BAD.items():
        assert rejected[row].startswith(reason), (row, rejected[row])


def expected() -> list:
    """The matches over the accepted events, computed on clean input (bad rows left out)."""
    kept = [e for i, e in enumerate(events()) if i not in BAD]
    return sorted(m.positions for m in ceql.compile(QUERY, SCHEMA).run(kept))


@pytest.mark.parametrize("kind", ["dicts", "pandas", "arrow"])
def test_the_api_rejects_bad_values_in_every_declared_column(kind) -> None:
    data = {
        "dicts": events,
        "pandas": lambda: pd.DataFrame([dict(zip(COLUMNS, row)) for row in ROWS]),
        "arrow": lambda: pa.Table.from_pylist([dict(zip(COLUMNS, row)) for row in ROWS]),
    }[kind]()
    check(*api(data), expected())


def test_push_rejects_bad_values_in_every_declared_column() -> None:
    check(*push(), expected())


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_the_command_line_agrees(tmp_path, suffix) -> None:
    check(*cli(tmp_path, suffix), expected())


def test_every_path_gives_the_same_rows_and_reasons(tmp_path) -> None:
    answers = {
        "dicts": api(events()),
        "pandas": api(pd.DataFrame([dict(zip(COLUMNS, row)) for row in ROWS])),
        "arrow": api(pa.Table.from_pylist([dict(zip(COLUMNS, row)) for row in ROWS])),
        "push": push(),
        **{suffix: cli(tmp_path, suffix) for suffix in ("csv", "jsonl", "parquet")},
    }
    first = answers["dicts"]
    for name, answer in answers.items():
        assert answer[0] == first[0], name
        assert answer[1] == first[1], (name, answer[1], first[1])


def test_on_error_fail_refuses_a_bad_unread_value() -> None:
    """``run([... {"event_id": "x"} ...])`` for an attribute the query does not read."""
    query = ceql.compile(QUERY, SCHEMA)
    bad = [{"event_type": "A", "id": 1, "v": 1.0, "qty": "x"}]
    with pytest.raises(ceql.EventError, match="row 0: column qty"):
        list(query.run(bad))
    with pytest.raises(ceql.EventError, match="row 0: column qty"):
        query.evaluator().push(bad[0])


# --------------------------------------------------------------------------- Spark's find


def _spark_frame(spark):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    fields = [StructField(name, StringType(), True) for name in COLUMNS] + [StructField("seq", LongType(), False)]
    return spark.createDataFrame([(*row, index) for index, row in enumerate(ROWS)], StructType(fields))


def test_spark_find_has_the_same_bad_row_policy(spark) -> None:
    from ceql.spark import find

    local_matches, local_rejected = api(events())
    rejected = []
    found = find(
        _spark_frame(spark), QUERY, DECL, order_by="seq", positions=True,
        on_error="dead-letter", dead_letter=lambda bad: rejected.extend(bad.collect()),
    )
    assert sorted(tuple(r["positions"]) for r in found.collect()) == local_matches
    by_input = {json.dumps({k: v for k, v in e.items()}, sort_keys=True): i for i, e in enumerate(events())}
    spark_rejected = {}
    for record in rejected:
        row = json.loads(record["input"])
        row.pop("seq")
        spark_rejected[by_input[json.dumps(row, sort_keys=True)]] = record["reason"]
    assert spark_rejected == local_rejected
    skipped = find(_spark_frame(spark), QUERY, DECL, order_by="seq", positions=True, on_error="skip")
    assert sorted(tuple(r["positions"]) for r in skipped.collect()) == local_matches


def test_spark_find_fails_on_a_bad_unread_value(spark) -> None:
    from ceql.spark import find

    frame = _spark_frame(spark).where("seq <= 1")  # row 1: qty=two, a column the query does not read
    with pytest.raises(Exception, match="column qty: cannot read 'two' as an integer"):
        find(frame, QUERY, DECL, order_by="seq", positions=True).collect()
