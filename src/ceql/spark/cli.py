"""``ceql run --engine spark``: read events with Spark, validate them, find matches, write them.

Input files are read as text columns and validated with Spark expressions (unknown event type,
missing or extra field, unparsable value); rejected rows go to the dead-letter output with their
reason (or fail the run, or are counted). Accepted rows are typed from the declarations and
evaluated by ``ceql.spark.find``; results are written as Parquet or JSON Lines directories.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ceql.errors import CeqlError
from ceql.lang.schema import Schema

SPARK_TYPES = {
    "int": "long",
    "primary_time": "long",
    "double": "double",
    "string": "string",
    "boolean": "boolean",
}
_INT = r"^\s*[+-]?\d+\s*$"
_FLOAT = r"^\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)\s*$"


def read_events(spark, paths: list[str], schema: Schema, input_format: str | None):
    """All input files as one DataFrame of text columns (plus the input file and row)."""
    from pyspark.sql import functions as F

    from ceql.io.readers import detect_format

    frames = []
    for path in paths:
        kind = detect_format(path, input_format)
        if kind == "csv":
            frame = spark.read.option("header", True).option("inferSchema", False).csv(path)
        elif kind == "jsonl":
            frame = spark.read.option("primitivesAsString", True).json(path)
        else:
            frame = spark.read.parquet(path)
            frame = frame.select([F.col(c).cast("string").alias(c) for c in frame.columns])
        frame = frame.withColumn("__source", F.lit(path)).withColumn("__row", F.monotonically_increasing_id())
        frames.append(frame)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame, allowMissingColumns=True)
    if "event_type" not in result.columns:
        raise CeqlError("the input has no event_type column")
    return result


def validate(df, schema: Schema):
    """(typed accepted rows, rejected rows with a ``reason`` column)."""
    from pyspark.sql import functions as F

    attributes: dict[str, str] = {}
    declares: dict[str, set[str]] = {}
    for decl in schema.event_types.values():
        for attribute in decl.attributes:
            attributes.setdefault(attribute.name, attribute.type)
            declares.setdefault(attribute.name, set()).add(decl.name)
    known = list(schema.event_types)
    reason = F.when(
        ~F.col("event_type").isin(known) | F.col("event_type").isNull(),
        F.concat(F.lit("unknown event type "), F.coalesce(F.col("event_type"), F.lit("null"))),
    )
    for name in df.columns:
        if name in ("event_type", "__source", "__row") or name in attributes:
            continue
        present = F.col(name).isNotNull() & (F.col(name) != "")
        reason = reason.when(present, F.lit(f"extra field {name} (not declared for any event type)"))
    typed = []
    for name, kind in attributes.items():
        if name not in df.columns:
            expected = F.col("event_type").isin(sorted(declares[name]))
            reason = reason.when(expected, F.lit(f"missing field {name}"))
            typed.append(F.lit(None).cast(SPARK_TYPES[kind]).alias(name))
            continue
        column = F.col(name)
        expected = F.col("event_type").isin(sorted(declares[name]))
        present = column.isNotNull() & (column != "")
        reason = reason.when(expected & ~present, F.lit(f"missing field {name}"))
        reason = reason.when(
            ~expected & present, F.lit(f"extra field {name} (not declared for this event type)")
        )
        if kind in ("int", "primary_time"):
            ok = column.rlike(_INT)
            value = F.trim(column).cast("long")
            if kind == "primary_time":
                iso = F.unix_micros(F.to_timestamp(column)) * 1000
                ok = ok | iso.isNotNull()
                value = F.when(column.rlike(_INT), F.trim(column).cast("long")).otherwise(iso)
        elif kind == "double":
            ok = column.rlike(_FLOAT)
            value = F.trim(column).cast("double")
        elif kind == "boolean":
            ok = F.lower(F.trim(column)).isin("true", "false", "1", "0")
            value = F.lower(F.trim(column)).isin("true", "1")
        else:
            ok = F.lit(True)
            value = column
        reason = reason.when(
            expected & present & ~ok,
            F.concat(F.lit(f"column {name}: cannot read "), column, F.lit(f" as {kind}")),
        )
        typed.append(F.when(expected & present, value).alias(name))
    checked = df.withColumn("reason", reason)
    accepted = checked.where(F.col("reason").isNull()).select("event_type", *typed, "__source", "__row")
    rejected = checked.where(F.col("reason").isNotNull())
    return accepted, rejected


def run_spark(args: argparse.Namespace) -> int:
    """The Spark pipeline behind ``ceql run --engine spark``."""
    from pyspark.sql import functions as F

    from ceql.cli import _compile_queries, _schema, check_run_outputs
    from ceql.io.outputs import STDOUT, Outputs
    from ceql.io.readers import resolve_inputs
    from ceql.spark.batch import explain_plan, find
    from ceql.spark.session import session

    schema = _schema(args.declaration)
    queries = _compile_queries(args.query, schema)
    paths = resolve_inputs(args.input)
    if "-" in paths:
        raise CeqlError("--engine spark reads files, not standard input")
    if not args.output or args.output == STDOUT:
        raise CeqlError("--engine spark needs --output DIRECTORY (results are written by Spark)")
    fmt = args.format or "parquet"
    if fmt not in ("parquet", "jsonl"):
        raise CeqlError("--engine spark writes parquet or jsonl")
    if args.on_error == "dead-letter" and not args.dead_letter:
        raise CeqlError("--on-error dead-letter needs --dead-letter DIRECTORY")
    check_run_outputs(args, paths, folder=True)
    started = time.perf_counter()
    spark = session(args.master)
    raw = read_events(spark, paths, schema, args.input_format).cache()
    accepted, rejected = validate(raw, schema)
    rejected_count = rejected.count()
    if rejected_count and args.on_error == "fail":
        first = rejected.orderBy("__source", "__row").first()
        raise CeqlError(f"{first['__source']}, row {first['__row']}: {first['reason']}")
    with Outputs(args.overwrite) as outputs:
        if args.dead_letter:
            # Written even when empty, like the local engine's dead-letter file.
            rejected.select(
                F.col("__source").alias("source"),
                F.col("__row").alias("row"),
                "reason",
                F.to_json(F.struct(*[c for c in raw.columns if not c.startswith("__")])).alias("input"),
            ).write.mode("errorifexists").json(outputs.folder(args.dead_letter))
        events = accepted.drop("__source", "__row")
        total = raw.count()
        results = None
        limit = args.max_matches or None
        for name, query in queries:
            if not args.quiet:
                print(f"ceql run: {name}: {explain_plan(query)}", file=sys.stderr)
            found = find(events, query, schema, with_events=args.with_events, name=name, max_matches=limit)
            results = found if results is None else results.unionByName(found)
        folder = outputs.folder(args.output)
        try:
            write = results.write.mode("errorifexists")
            # A task stopped by the match limit is expected: keep Spark from logging its trace.
            spark.sparkContext.setLogLevel("OFF" if limit else "ERROR")
            if fmt == "parquet":
                write.parquet(folder)
            else:
                write.json(folder)
        except Exception as exc:
            if "ceql.errors.LimitError" in str(exc):
                raise _too_many(args.max_matches) from None
            raise
        finally:
            spark.sparkContext.setLogLevel("ERROR")
        # Read back with the result schema: a JSON folder without matches has no columns to infer.
        reader = spark.read.schema(results.schema)
        written = reader.parquet(folder) if fmt == "parquet" else reader.json(folder)
        counts = {row["query"]: row["count"] for row in written.groupBy("query").count().collect()}
        if args.max_matches and sum(counts.values()) > args.max_matches:
            raise _too_many(args.max_matches)
        outputs.commit()
    elapsed = time.perf_counter() - started
    if not args.quiet:
        per_query = ", ".join(f"{name}: {counts.get(name, 0)}" for name, _ in queries)
        print(
            f"ceql run: {total} events read, {rejected_count} rejected, {sum(counts.values())} matches "
            f"({per_query}), {elapsed:.1f} s, results in {os.path.abspath(args.output)}",
            file=sys.stderr,
        )
    return 0


def _too_many(limit: int):
    from ceql.compile.limits import too_many_matches

    return too_many_matches(limit, "--max-matches", "; no output was written")
