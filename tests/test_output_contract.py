"""One output contract: the same query gives the same records on every engine, format and path.

One query with measures (a time among them), a partition and labels (tests/support/contract.py) runs
through the local Python path and the local kernel path, via the command line (JSON Lines,
Parquet) and the API (Arrow, ``Match`` objects); JSON Lines must be equal byte for byte, Arrow and
Parquet equal in schema and rows, ``Match`` objects equal to the reference's and to the rows.
Spark's side of the same matrix is tests/test_spark_output_contract.py.
"""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest

import ceql
from ceql.cli import main
from ceql.runtime.kernel import unsupported
from tests.support.contract import (
    QUERIES,
    check_matches_agree,
    compiled,
    events_table,
    file_lines,
    json_lines,
    parquet,
    write_case,
)

ENGINES = {"python": "python", "kernel": "compiled"}


def _cli(tmp_path, name: str, engine: str, fmt: str, *extra: str):
    declaration, query, events = write_case(tmp_path, name)
    out = tmp_path / f"{name}-{engine}.{fmt}"
    args = ["run", "-d", str(declaration), "-q", str(query), "-i", str(events), "-o", str(out)]
    args += ["-f", fmt, "--evaluator", ENGINES[engine], "--quiet", "--overwrite", *extra]
    assert main(args) == 0
    return out


def _api(tmp_path, name: str, engine: str):
    """The API's Arrow table and Match objects, and whether the kernel ran the query."""
    _, _, events = write_case(tmp_path, name)
    table = events_table(events)
    query = compiled(name)
    evaluator = query.evaluator(engine=ENGINES[engine])
    arrow = evaluator.arrow(table, name=name)
    assert arrow.schema == evaluator.output_schema(name).arrow  # the one schema, as derived
    matches = list(query.run(table, engine=ENGINES[engine]))
    return query, table, arrow, matches, evaluator._kernel is not None


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_local_path_and_format_gives_the_same_records(tmp_path, name, engine) -> None:
    query, events, arrow, matches, on_kernel = _api(tmp_path, name, engine)
    # Every contract query, measures included, runs on the kernel (issue #25).
    assert unsupported(query.plan) is None
    assert on_kernel == (engine == "kernel")
    # The schema: every column the contract names, in order.
    expected_columns = ["query", "trigger", "positions", "labels", "partition"]
    if name == "flips":
        expected_columns += ["bought", "sold", "gain", "most", "n"]
        assert str(arrow.schema.field("bought").type) == "timestamp[ns, tz=UTC]"
        assert arrow.schema.field("most").type == pa.int64()
    assert arrow.column_names == expected_columns
    assert arrow.schema.field("query").nullable is False
    assert arrow.schema.field("partition").type == pa.struct([("user", pa.string())])
    assert arrow.schema.field("labels").type.names == ["b", "s"]
    # Match objects: the reference's, and the Arrow rows' fields.
    assert sorted(matches) == sorted(ceql.reference.run(query, events))
    check_matches_agree(matches, arrow)
    # JSON Lines from the CLI is the API's Arrow rows as JSON, byte for byte.
    json_file = _cli(tmp_path, name, engine, "jsonl")
    assert file_lines(json_file) == json_lines(arrow)
    # Parquet from the CLI: the API's schema and rows.
    table = parquet(_cli(tmp_path, name, engine, "parquet"))
    assert table.schema == arrow.schema
    assert json_lines(table) == json_lines(arrow)
    assert len(arrow) > 2


def test_json_lines_is_valid_json_with_exact_values(tmp_path) -> None:
    """NaN and infinities as strings (never invalid JSON), integers beyond 2**53 exact, times
    as ISO-8601 text with their fraction, every key present in schema order (nulls as null)."""
    lines = file_lines(_cli(tmp_path, "flips", "python", "jsonl", "--with-events"))

    def strict(text):
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"invalid JSON constant {name}"))

    records = [strict(line) for line in lines]
    assert all(list(r) == ["query", "trigger", "positions", "labels", "partition", "bought", "sold", "gain",
                           "most", "n", "events"] for r in records)  # fmt: skip
    by_trigger = {(r["trigger"], tuple(r["positions"])): r for r in records}
    nan = by_trigger[(4, (1, 4))]
    assert nan["events"][0]["price"] == "NaN" and nan["events"][1]["price"] == "Infinity"
    assert nan["gain"] is None  # a NaN measure is a missing value (docs/semantics.md 3.2)
    assert by_trigger[(5, (3, 5))]["most"] == 9007199254740993
    assert by_trigger[(2, (0, 2))]["sold"] == "2024-01-01T00:00:02.123456Z"
    assert by_trigger[(2, (0, 2))]["events"][1]["ts"] == "2024-01-01T00:00:02.123456Z"
    assert not math.isnan(by_trigger[(2, (0, 2))]["gain"])


def test_times_keep_the_inputs_unit_and_zone() -> None:
    """Timestamps with a zone keep it (Arrow type, Match value, JSON text); integers stay
    integers in their declared unit."""
    schema = ceql.declare("CREATE STREAM S { EVENT A { k:int, ts:primary_time(ms) }, EVENT B { k:int, ts:primary_time(ms) } }")
    query = ceql.compile("SELECT a.ts AS start, b.ts - a.ts AS gap FROM S WHERE A AS a ; B AS b", schema)
    paris = pa.timestamp("us", tz="Europe/Paris")
    stamped = pa.table({"event_type": ["A", "B"], "k": [1, 1], "ts": pa.array([0, 1_500_000], pa.int64()).cast(paris)})
    table = query.run(stamped, output="arrow")
    assert table.schema.field("start").type == paris
    (match,) = query.run(stamped)
    assert str(match.measures["start"].tz) == "Europe/Paris" and match.measures["gap"] == 1_500_000_000
    assert json_lines(table)[0].count('"start": "1970-01-01T01:00:00+01:00"') == 1
    integers = [{"event_type": "A", "k": 1, "ts": 1000}, {"event_type": "B", "k": 1, "ts": 2500}]
    assert query.run(integers, output="arrow").schema.field("start").type == pa.int64()
    (match,) = query.run(integers)
    assert dict(match.measures) == {"start": 1000, "gap": 1_500_000_000}
    assert ceql.reference.run(query, integers) == [match]
    assert ceql.reference.run(query, stamped) == list(query.run(stamped))


def test_the_json_encoder_on_nested_sliced_and_special_values() -> None:
    from ceql.io.writers import JsonEncoder

    table = pa.table(
        {
            "q": ["a", "b", "c"],
            "ts": pa.array([[10**9], None, [2, None]], pa.list_(pa.timestamp("ns", "UTC"))),
            "f": [float("nan"), 1.0, float("-inf")],
            "nested": pa.array([{"v": [float("inf")], "d": None}, None, {"v": [], "d": 2**63 - 1}]),
        }
    )
    encoder = JsonEncoder(table.schema)
    lines = encoder.encode(table.to_batches()[0]).splitlines()
    assert lines[0] == '{"q": "a", "ts": ["1970-01-01T00:00:01Z"], "f": "NaN", "nested": {"v": ["Infinity"], "d": null}}'
    assert encoder.encode(table.to_batches()[0].slice(1)).splitlines() == lines[1:]
    assert lines[2] == (
        '{"q": "c", "ts": ["1970-01-01T00:00:00.000000002Z", null], "f": "-Infinity", '
        '"nested": {"v": [], "d": 9223372036854775807}}'
    )
    assert all(json.loads(line) for line in lines)
