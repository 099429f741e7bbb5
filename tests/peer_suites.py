"""Running the peers' MATCH_RECOGNIZE test cases (tests/data/peers, see tests/data/PROVENANCE.md)
on ceql: a case passes when ceql returns the rows the peer's own assertion expects (as a
multiset, as Trino's ``matches`` compares them, unless the case is ordered), or fails with
the error the peer expects."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

import ceql
from ceql.errors import CeqlError

PEERS = Path(__file__).parent / "data" / "peers"


def load(name: str) -> list[dict[str, Any]]:
    """The cases of one ported suite."""
    return json.loads((PEERS / name).read_text(encoding="utf-8"))["cases"]


def _value(v: Any) -> Any:
    """A value as the comparison sees it: numbers by value (an int equals the same float or
    decimal), lists as tuples, decimals from their JSON form."""
    if isinstance(v, dict) and set(v) == {"decimal"}:
        v = Decimal(v["decimal"])
    if isinstance(v, (list, tuple)):
        return tuple(_value(x) for x in v)
    if isinstance(v, dt.datetime):  # as the data files write times: ISO text, UTC, milliseconds
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return v.isoformat(timespec="milliseconds")
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, (int, float, Decimal)):
        return Decimal(str(v)).normalize() if not isinstance(v, Decimal) else v.normalize()
    return v


def rows_of(table: Any) -> list[tuple]:
    """The rows of an Arrow table as tuples of comparable values, in column order."""
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return [tuple(_value(c[r]) for c in columns) for r in range(table.num_rows)]


_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "string": pa.string(),
    "double": pa.float64(),
    "timestamp[ms]": pa.timestamp("ms"),
    "timestamp[ms, UTC]": pa.timestamp("ms", tz="UTC"),
    "proctime": pa.timestamp("ms", tz="UTC"),
}


def input_tables(case: dict[str, Any]) -> dict[str, pa.Table]:
    """The case's input tables (Flink's cases give them as rows; Trino's are VALUES in the query)."""
    out = {}
    for name, spec in case.get("tables", {}).items():
        arrays = []
        for k, (_column, kind) in enumerate(spec["columns"]):
            values = [row[k] for row in spec["rows"]]
            if kind == "proctime":  # Flink's PROCTIME(): the time each row arrives, now, in input order
                start = dt.datetime.now(dt.timezone.utc)
                arrays.append(pa.array([start + dt.timedelta(milliseconds=i) for i in range(len(values))], _TYPES[kind]))
                continue
            if kind.startswith("timestamp"):
                values = [None if v is None else dt.datetime.fromisoformat(v) for v in values]
                if "UTC" in kind:
                    values = [None if v is None else v.replace(tzinfo=dt.timezone.utc) for v in values]
            arrays.append(pa.array(values, _TYPES[kind]))
        out[name] = pa.table(arrays, names=[c for c, _ in spec["columns"]])
    return out


def check(case: dict[str, Any], tables: dict[str, Any] | None = None) -> None:
    """Run one case; AssertionError when ceql's answer is not the peer's."""
    tables = {**input_tables(case), **(tables or {})}
    if "error" in case:
        try:
            ceql.sql.run(case["query"], dict(tables or {}))
        except CeqlError:
            return
        raise AssertionError(f"expected an error like {case['error']!r}")
    got = rows_of(ceql.sql.run(case["query"], dict(tables or {})))
    expected = [tuple(_value(v) for v in row) for row in case["expected"]]
    if case.get("ordered"):
        assert got == expected, f"got {got}, expected {expected}"
    else:
        assert Counter(got) == Counter(expected), f"got {sorted(map(repr, got))}, expected {sorted(map(repr, expected))}"
