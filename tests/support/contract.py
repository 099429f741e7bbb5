"""The output contract's shared case (tests/test_output_contract.py, and on Spark
tests/test_spark_output_contract.py): one query with measures (a time among them), a
partition and labels, one input, and the helpers that turn every output into comparable rows.

The input has what tends to break writers: ISO-8601 times with fractions (microseconds, so
Spark's timestamps hold them exactly), NaN and infinity doubles, an integer beyond 2**53.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

import ceql
from ceql.io.writers import JsonEncoder

DECLARATION = (
    "CREATE STREAM S { EVENT BUY { user:string, price:double, qty:int, ts:primary_time }, "
    "EVENT SELL { user:string, price:double, qty:int, ts:primary_time } }"
)
EVENTS = """event_type,user,price,qty,ts
BUY,u1,10.5,1,2024-01-01T00:00:00Z
BUY,u2,nan,2,2024-01-01T00:00:01.5Z
SELL,u1,12.0,1,2024-01-01T00:00:02.123456Z
BUY,u1,11.0,9007199254740993,2024-01-01T00:00:03Z
SELL,u2,inf,3,2024-01-01T00:00:04Z
SELL,u1,9.0,2,2024-01-01T00:00:05Z
BUY,u3,1.0,1,2024-01-01T00:00:06Z
"""
#: name -> query text; ``flips`` has measures (the kernel does not evaluate them yet), ``pairs``
#: the same pattern without them (so the kernel path is covered today).
QUERIES = {
    "flips": (
        "SELECT b, s, b.ts AS bought, LAST(s).ts AS sold, s.price - b.price AS gain, MAX(b.qty) AS most, "
        "COUNT(*) AS n FROM S WHERE BUY AS b ; SELL AS s PARTITION BY [user] WITHIN 10 SECONDS"
    ),
    "pairs": "SELECT b, s FROM S WHERE BUY AS b ; SELL AS s PARTITION BY [user] WITHIN 10 SECONDS",
}


def write_case(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """The declaration, query (named ``name``) and events files of the case."""
    declaration = folder / "decl.core"
    declaration.write_text(DECLARATION)
    query = folder / f"{name}.ceql"
    query.write_text(QUERIES[name])
    events = folder / "events.csv"
    events.write_text(EVENTS)
    return declaration, query, events


def events_table(path: Path) -> pa.Table:
    """The events as an Arrow table holding what the file holds (times as text)."""
    options = pcsv.ConvertOptions(column_types={"ts": pa.string(), "user": pa.string()}, null_values=[])
    return pcsv.read_csv(path, convert_options=options)


def compiled(name: str) -> ceql.Query:
    return ceql.compile(QUERIES[name], ceql.declare(DECLARATION))


def json_lines(table: pa.Table) -> list[str]:
    """A table's rows as JSON Lines (the writers' encoder), sorted."""
    encoder = JsonEncoder(table.schema)
    return sorted(line for batch in table.to_batches() for line in encoder.encode(batch).splitlines())


def file_lines(path: Path) -> list[str]:
    """The lines of a JSON Lines file, or of every part of a folder, sorted."""
    files = sorted(path.glob("part-*")) if path.is_dir() else [path]
    return sorted(line for f in files for line in f.read_text(encoding="utf-8").splitlines())


def parquet(path: Path) -> pa.Table:
    """A Parquet file, or the parts of a folder, as one table."""
    files = sorted(path.glob("part-*.parquet")) if path.is_dir() else [path]
    return pa.concat_tables([pq.read_table(f) for f in files])


def sorted_rows(table: pa.Table) -> list[str]:
    """Rows in a comparable form: each as JSON (NaN-safe), sorted."""
    return json_lines(table)


def check_matches_agree(matches: list, table: pa.Table) -> None:
    """``Match`` objects expose the row's fields: trigger, positions, labels, partition, measures."""
    rows = table.to_pylist()
    assert len(matches) == len(rows)
    fixed = {"query", "trigger", "positions", "labels", "partition"}
    for match, row in zip(matches, rows):
        assert match.trigger == row["trigger"] and list(match.positions) == row["positions"]
        assert dict(match.labels) == {k: tuple(v) for k, v in (row.get("labels") or {}).items() if v}
        partition = row.get("partition")
        assert match.partition == (tuple(partition.values()) if partition is not None else None)
        measures = {k: v for k, v in row.items() if k not in fixed}
        assert json.dumps(dict(match.measures), default=str, sort_keys=True) == json.dumps(
            {k: tuple(v) if isinstance(v, list) else v for k, v in measures.items()}, default=str, sort_keys=True
        )
