"""MATCH_RECOGNIZE on Spark DataFrames: ``ceql.spark.sql(text, t=df)`` returns a lazy DataFrame.

Batch. The partitioned plan of ``ceql.spark.batch``: partitions go to buckets by a hash of the
PARTITION BY columns (``repartition(keys)``) and each bucket is matched in its own task by
the local engine (docs/sql.md), which keeps its partitions apart (``mapInArrow``: a Python call
per task, not per partition); without PARTITION BY the whole input is one task. Spark
has no row order of its own, so the input order that breaks ORDER BY ties is
``monotonically_increasing_id()`` (the order of the input's partitions, then of rows within
them): give ORDER BY keys that order rows fully for results that do not depend on it.

Streaming. One key per partition (``transformWithStateInPandas``): rows wait in state until
the watermark (the largest ORDER BY time seen, minus ``allowed_lateness``) passes them, then are
matched in ORDER BY order (a stream has no input order: ORDER BY must order the rows fully, with
a tie-break column after the time if times repeat). A match is reported once it cannot change: when the rows after it are
there (a greedy quantifier stops, NEXT can be read); a match that could still grow at the end of
the rows seen waits for the next row of its partition. State keeps the rows from where matching
resumes (and the PREV look-back before it). The first ORDER BY column must be the event time.

``ceql.spark.sql`` is this module (calling it runs a query), as ``ceql.sql`` is locally.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ceql.errors import CeqlError, QueryError, UnsupportedQueryError

SEQ = "ceql_seq"  # the input order (transformWithStateInPandas renames names with underscores)
STATE = "ceql_mr"


def sql(text: str, /, **dataframes: Any):
    """Run ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` over the Spark DataFrame named in FROM (a
    keyword argument, or a temporary view of the active session); a lazy DataFrame, streaming if
    the input is."""
    return run(text, dataframes)


def run(text: str, dataframes: dict[str, Any], *, allowed_lateness: str | None = None):
    """``sql`` with the DataFrames as a dict; ``allowed_lateness`` (e.g. "2 seconds") delays the
    watermark of a streaming input."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from ceql.sql import _needs_outer_engine
    from ceql.sql.analysis import analyze
    from ceql.sql.parser import parse_sql, reads_the_clock, with_the_clock_read

    if reads_the_clock(text):  # every task reads the driver's time
        text = with_the_clock_read(text)
    try:
        query = parse_sql(text)
    except QueryError as error:
        if _needs_outer_engine(text, error):
            return _outer(text, dataframes, allowed_lateness)
        raise
    df = _dataframe(query, dataframes)
    arrow_schema = to_arrow_schema(df.schema)
    checked = analyze(query, arrow_schema)
    # Compiled here too, so what the compiler refuses is one ceql error on the driver, not a
    # PythonException from every task (the workers compile again, cached: _compiled).
    from ceql.sql.compiler import compile_query

    compile_query(checked)
    if df.isStreaming:
        return _streaming(text, checked, df, allowed_lateness)
    return _batch(text, checked, df)


def _outer(text: str, dataframes: dict[str, Any], allowed_lateness: str | None):
    """The SQL around MATCH_RECOGNIZE on Spark SQL (as ``ceql.sql.outer`` does on DuckDB): each
    clause's input is a given DataFrame, a view, or computed by Spark SQL; ceql matches it; Spark
    SQL runs the rest over the results. The DataFrames given are registered as temporary views
    of their names (Spark SQL reads tables by name)."""
    from pyspark.sql import SparkSession

    from ceql.sql import outer

    spark = SparkSession.getActiveSession()
    if spark is None:
        first = next(iter(dataframes.values()), None)
        spark = first.sparkSession if first is not None else SparkSession.builder.getOrCreate()
    for name, df in dataframes.items():
        df.createOrReplaceTempView(name)
    text = outer.bare_values(text)
    parts = outer.split(text)

    def spark_query(query: str) -> Any:
        try:
            return spark.sql(query)
        except Exception as error:  # Spark's AnalysisException / ParseException: one line
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise UnsupportedQueryError(f"the SQL around MATCH_RECOGNIZE (run by Spark SQL): {first}", text, 0) from None

    names = []
    for k, clause in enumerate(parts.clauses):
        given = None
        if clause.input_name is not None:
            found = [n for n in dataframes if n == clause.input_name or (not clause.input_quoted and n.upper() == clause.input_name.upper())]
            given = dataframes[found[0]] if len(found) == 1 else None
        source = given if given is not None else spark_query(parts.input_query(clause, names))
        prefix = parts.with_prefix(names)
        clause_text = outer.constant_subqueries(
            clause.clause_text, lambda query, prefix=prefix: spark_query(prefix + query).toArrow()
        )
        mr = run(f"SELECT * FROM {outer.INPUT_NAME} {clause_text}", {outer.INPUT_NAME: source}, allowed_lateness=allowed_lateness)
        name = f"{outer.RESULT_NAME}_{k}"
        mr.createOrReplaceTempView(name)
        names.append(name)
    return spark_query(parts.rest(names))


def _dataframe(query, dataframes: dict[str, Any]):
    """The DataFrame the query reads: one given by its name (as ``ceql.sql`` finds a table),
    else a temporary view of the active session."""
    from ceql.sql import _table

    name = query.table
    try:
        return _table(query, dataframes)
    except QueryError:
        pass  # not given: a view, or the error below
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is not None and spark.catalog.tableExists(name.text):
        return spark.table(name.text)
    raise QueryError(
        f"table {name.text} is neither given (ceql.spark.sql(text, {name.text}=df)) nor a temporary view",
        query.text,
        name.pos,
    )


def output_schema(checked):
    """The Spark schema of the result."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(checked.output_schema)


# ---------------------------------------------------------------------------- batch


def _batch(text: str, checked, df):
    from pyspark.sql import functions as F

    out_schema = output_schema(checked)
    numbered = df.withColumn(SEQ, F.monotonically_increasing_id())
    keys = list(checked.partition) or None
    input_columns = tuple(df.columns)
    result_schema = checked.output_schema

    def evaluate(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _evaluate_task(batches, text=text, columns=input_columns, schema=result_schema)

    if keys is None:  # one task reads every row
        return numbered.repartition(1).mapInArrow(evaluate, out_schema)
    # Partitions hashed into buckets (the exchange's partitions, one task each), each bucket
    # matched at once by the local engine, which keeps its partitions apart: a Python call per
    # task, not per partition (groupBy(keys).applyInArrow made one per key, and a JVM sort).
    # (No number: the shuffle partitions, which adaptive execution may merge for small inputs.)
    kinds = dict(df.dtypes)
    return numbered.repartition(*[_hashed(key, kinds[key]) for key in keys]).mapInArrow(evaluate, out_schema)


def _hashed(column: str, kind: str):
    """The value a partition key is hashed by: the column, with -0.0 as 0.0 for floating point
    (equal keys must land in one bucket; Spark hashes the two zeros apart)."""
    from pyspark.sql import functions as F

    value = F.col(f"`{column}`")
    if kind in ("float", "double"):
        return F.when(value == F.lit(0.0), F.lit(0.0).cast(kind)).otherwise(value)
    return value


@functools.lru_cache(maxsize=32)
def _compiled(text: str, schema: pa.Schema):
    """Compiled once per Python worker (the query text and the input schema are the key)."""
    from ceql.sql.analysis import analyze
    from ceql.sql.compiler import compile_query
    from ceql.sql.parser import parse_sql

    return compile_query(analyze(parse_sql(text), schema))


def _evaluate_task(
    batches: Iterator[pa.RecordBatch], *, text: str, columns: tuple[str, ...], schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """One task: its rows are whole partitions (or the whole input), matched at once."""
    from ceql.spark.batch import whole_task

    return whole_task(batches, lambda table: _evaluate_group(table, text=text, columns=columns, schema=schema))


def _evaluate_group(table: pa.Table, *, text: str, columns: tuple[str, ...], schema: pa.Schema) -> pa.Table:
    """Whole partitions (or the whole input), in input order, through the local engine (which
    keeps the partitions apart)."""
    from ceql.sql import engine

    table = table.sort_by(SEQ).select(list(columns))
    result = engine.run(_compiled(text, table.schema), table)
    return result.cast(schema) if result.schema != schema else result


# ---------------------------------------------------------------------------- streaming


def _streaming(text: str, checked, df, allowed_lateness: str | None):
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    from ceql.spark.streaming import lateness_ms

    if not checked.order:
        raise CeqlError("a streaming MATCH_RECOGNIZE needs ORDER BY its event-time column")
    time_column, descending, _ = checked.order[0]
    if descending:
        raise CeqlError("a streaming MATCH_RECOGNIZE needs ORDER BY its event time ascending")
    field = df.schema[time_column]
    if not isinstance(field.dataType, (T.TimestampType, T.TimestampNTZType)):
        raise CeqlError(f"a streaming MATCH_RECOGNIZE orders rows by event time: {time_column} is not a timestamp")
    if _has_end_anchor(checked.pattern):
        raise CeqlError("$ (the partition's end) never comes in a stream: it is for batch queries")
    delay = lateness_ms_from(allowed_lateness, lateness_ms)
    millis = "ceql_ms"
    prepared = df.withColumn(millis, F.floor(F.unix_micros(F.col(time_column).cast("timestamp")) / 1000).cast("long"))
    # Spark's first watermark is 0 and a timer at the watermark is an error: shift by 1 ms.
    prepared = prepared.withColumn("ceql_event_time", F.timestamp_millis(F.col(millis) + F.lit(1)))
    prepared = prepared.withWatermark("ceql_event_time", f"{delay} milliseconds").drop("ceql_event_time")
    keys = list(checked.partition)
    if not keys:
        prepared = prepared.withColumn("ceql_key", F.lit(0))
        keys = ["ceql_key"]
    columns = list(df.columns)
    input_fields = {f.name: f for f in prepared.schema.fields}
    setup = {
        "text": text,
        "columns": columns,
        "input_schema": to_arrow_schema(T.StructType([input_fields[c] for c in [*columns, millis]])),
        "order_keys": checked.order,
        "millis": millis,
        "lookback": _lookback(checked),
        "result_schema": checked.output_schema,
    }
    return prepared.groupBy(*keys).transformWithStateInPandas(
        statefulProcessor=_processor_class()(setup),
        outputStructType=output_schema(checked),
        outputMode="Append",
        timeMode="EventTime",
    )


def lateness_ms_from(allowed_lateness: str | None, lateness_ms) -> int:
    if allowed_lateness is None:
        return 0
    from ceql.lang.schema import Schema

    return lateness_ms(Schema(), allowed_lateness)


def _has_end_anchor(pattern) -> bool:
    from ceql.sql import ast

    stack = [pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.PAnchor) and node.kind == "$":
            return True
        if isinstance(node, (ast.PConcat, ast.PAlt, ast.PPermute)):
            stack.extend(node.items)
        elif isinstance(node, (ast.PQuant, ast.PExclude)):
            stack.append(node.body)
    return False


def _lookback(checked) -> int:
    """How many rows before a match PREV can read (kept in state)."""
    from ceql.sql import ir

    deepest = 0
    nodes = [*checked.defines.values(), *(node for _, node in checked.measures)]
    for root in nodes:
        for node in ir.walk(root):
            if isinstance(node, ir.At) and isinstance(node.locator, ir.Physical) and node.locator.delta < 0:
                deepest = max(deepest, -node.locator.delta)
    return deepest


def _processor_class():
    from pyspark.sql.streaming import StatefulProcessor

    from ceql.spark.streaming import _bytes, _read_ipc, _write_ipc

    class MatchRecognizeProcessor(StatefulProcessor):
        """Buffers a partition's rows; matches those the watermark has passed; keeps the rows
        from where matching resumes."""

        def __init__(self, setup: dict[str, Any]) -> None:
            self.setup = setup

        def init(self, handle) -> None:
            from pyspark.sql.types import BinaryType, LongType, StructField, StructType

            self.handle = handle
            schema = StructType(
                [
                    StructField("waiting", BinaryType()),  # rows not yet passed by the watermark
                    StructField("rows", BinaryType()),  # rows from where matching resumes
                    StructField("resume", LongType()),  # index into rows
                    StructField("number", LongType()),  # matches found so far
                    StructField("covered", LongType()),  # last row in a match (index into rows)
                    StructField("frontier", LongType()),  # time (ms) of the last row matched
                ]
            )
            self.state = handle.getValueState(STATE, schema)

        def _load(self) -> dict[str, Any]:
            if not self.state.exists():
                return {"waiting": None, "rows": None, "resume": 0, "number": 0, "covered": -1, "frontier": None}
            waiting, rows, resume, number, covered, frontier = self.state.get()
            return {
                "waiting": _read_ipc(_bytes(waiting)),
                "rows": _read_ipc(_bytes(rows)),
                "resume": int(resume),
                "number": int(number),
                "covered": int(covered),
                "frontier": None if frontier is None else int(frontier),
            }

        def _save(self, data: dict[str, Any]) -> None:
            def blob(table):
                return _write_ipc(table) if table is not None and table.num_rows else None

            self.state.update(
                (blob(data["waiting"]), blob(data["rows"]), data["resume"], data["number"], data["covered"], data["frontier"])
            )

        def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
            from ceql.spark.streaming import input_table

            setup = self.setup
            table = input_table(rows, [*setup["columns"], setup["millis"]], setup["input_schema"])
            if table is None:
                return iter([])
            data = self._load()
            millis = table.column(setup["millis"]).to_numpy()
            if data["frontier"] is not None and (millis <= data["frontier"]).any():
                late = table.filter(pa.array(millis <= data["frontier"])).slice(0, 1).to_pylist()[0]
                shown = {k: v for k, v in late.items() if k in setup["columns"]}
                raise CeqlError(
                    f"late row {shown}: rows after it in event time were already matched (allow lateness with "
                    "ceql.spark.sql.run(..., allowed_lateness='2 seconds'))"
                )
            data["waiting"] = pa.concat_tables([data["waiting"], table]) if data["waiting"] is not None else table
            out = self._release(data, timerValues.getCurrentWatermarkInMs())
            self._save(data)
            return iter(out)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
            data = self._load()
            out = self._release(data, timerValues.getCurrentWatermarkInMs())
            self._save(data)
            return iter(out)

        def _release(self, data: dict[str, Any], watermark: int) -> list[pd.DataFrame]:
            setup = self.setup
            waiting = data["waiting"]
            if waiting is None or not waiting.num_rows:
                return []
            millis = waiting.column(setup["millis"]).to_numpy()
            ready = millis + 1 <= watermark  # event times are shifted by 1 ms, like the watermark
            out: list[pd.DataFrame] = []
            if ready.any():
                now = waiting.filter(pa.array(ready))
                data["waiting"] = waiting.filter(pa.array(~ready))
                now = now.take(_order(now, setup["order_keys"]))
                data["frontier"] = int(now.column(setup["millis"]).to_numpy().max())
                rows = pa.concat_tables([data["rows"], now]) if data["rows"] is not None else now
                result, rows, data = _match_more(setup, rows, data)
                data["rows"] = rows
                if result.num_rows:
                    out.append(result.to_pandas())
            if data["waiting"] is not None and data["waiting"].num_rows:
                due = int(data["waiting"].column(setup["millis"]).to_numpy().min()) + 1
                self.handle.registerTimer(due)
            return out

        def close(self) -> None:
            pass

    return MatchRecognizeProcessor


def _order(table: pa.Table, order) -> np.ndarray:
    """The rows of a micro-batch in ORDER BY order (stable)."""
    from ceql.sql.engine import order_permutation

    perm = order_permutation(table, order)
    return np.arange(table.num_rows) if perm is None else perm


def _match_more(setup: dict[str, Any], rows: pa.Table, data: dict[str, Any]):
    """Match the partition's rows from the saved resume point, reporting what cannot change
    any more; returns (result, the rows to keep, the new state)."""
    from ceql.sql import engine

    table = rows.select(setup["columns"])
    compiled = _compiled(setup["text"], table.schema)
    prepared = engine.Prepared(compiled, table)  # one partition, already in order
    resume = np.array([data["resume"]], dtype=np.int64)
    numbers = np.array([data["number"]], dtype=np.int64)
    covered = np.array([data["covered"]], dtype=np.int64)
    found = prepared.match((resume, numbers, covered), final=False)
    result = prepared.result(found)
    schema = setup["result_schema"]
    if result.schema != schema:
        result = result.cast(schema)
    resume_at = int(found[5][0])
    keep_from = max(0, resume_at - setup["lookback"])
    data["resume"] = resume_at - keep_from
    data["number"] = int(found[6][0])
    data["covered"] = int(found[7][0]) - keep_from
    return result, rows.slice(keep_from), data


class _CallableModule(ModuleType):
    """``ceql.spark.sql`` is a module whose call runs a query: ``ceql.spark.sql(text, t=df)``."""

    def __call__(self, text: str, /, **dataframes: Any):
        return sql(text, **dataframes)


sys.modules[__name__].__class__ = _CallableModule
