"""The output contract on Spark: the case of tests/support/contract.py through ``ceql run --engine spark``
(JSON Lines equal to the local engine's byte for byte, Parquet equal in schema and rows) and
through ``ceql.spark.find`` (the output schema as Spark types, the same rows)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from ceql.cli import main
from ceql.spark import find
from ceql.spark.output import spark_batch
from tests.support.contract import (
    DECLARATION,
    compiled,
    events_table,
    file_lines,
    json_lines,
    parquet,
    write_case,
)


def _run(tmp_path, engine: str, fmt: str, *extra: str):
    declaration, query, events = write_case(tmp_path, "flips")
    out = tmp_path / f"{engine}-{fmt}-{len(extra)}"
    args = ["run", "-d", str(declaration), "-q", str(query), "-i", str(events), "-o", str(out), "-f", fmt]
    assert main([*args, "--engine", engine, "--quiet", *extra]) == 0
    return out


def test_spark_command_line_writes_the_local_engines_files(spark, tmp_path) -> None:
    for extra in ((), ("--with-events",)):
        local, remote = _run(tmp_path, "local", "jsonl", *extra), _run(tmp_path, "spark", "jsonl", *extra)
        assert remote.is_dir() and (remote / "_SUCCESS").exists()
        assert file_lines(remote) == file_lines(local) and len(file_lines(local)) > 2
    local, remote = parquet(_run(tmp_path, "local", "parquet")), parquet(_run(tmp_path, "spark", "parquet"))
    assert remote.schema == local.schema
    assert str(local.schema.field("bought").type) == "timestamp[ns, tz=UTC]"
    assert json_lines(remote) == json_lines(local)


def test_spark_defaults_to_json_lines_as_the_help_says(spark, tmp_path) -> None:
    declaration, query, events = write_case(tmp_path, "flips")
    out = tmp_path / "default"
    args = ["run", "-d", str(declaration), "-q", str(query), "-i", str(events), "-o", str(out)]
    assert main([*args, "--engine", "spark", "--quiet"]) == 0
    assert [p.suffix for p in sorted(out.glob("part-*"))] == [".jsonl"]


@pytest.mark.parametrize("positions", [True, False])
def test_find_has_the_output_schema_as_spark_types(spark, tmp_path, positions) -> None:
    """``find``'s columns are the local output schema's as Spark types (without positions, all
    but trigger, positions and labels; with id columns, then ``events`` and ``ids``), with
    the same rows (Spark timestamps hold microseconds: the case's times are whole ones)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    _, _, path = write_case(tmp_path, "flips")
    events = events_table(path)
    query = compiled("flips")
    local = query.run(events, output="arrow", name="flips")
    id_columns = [] if positions else ["qty"]
    found = find(spark.createDataFrame(events), query, DECLARATION, name="flips", positions=positions, id_columns=id_columns)
    if not positions:
        local = local.drop_columns(["trigger", "positions", "labels"])
        assert found.columns == [*local.column_names, "events", "ids"]
        found = found.drop("events", "ids")
    assert found.schema == from_arrow_schema(local.schema)
    got = found.toArrow()
    expected = pa.Table.from_batches([spark_batch(b, got.schema) for b in local.to_batches()])
    assert json_lines(got) == json_lines(expected) and len(got) > 2
