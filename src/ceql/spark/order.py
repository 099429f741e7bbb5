"""The stream order of a batch DataFrame on Spark, and global positions in it, exactly and lazily.

Order. Events are in the order of ``order_by`` if given, else of the primary_time then
``tie_break``; what is still tied is in the **input order**:
- rows read from files (Spark's ``_metadata`` column): the files in the order of their paths,
  then the row in the file (Parquet: ``_metadata.row_index``; text formats: the split's first
  byte, then the row within the split, which Spark reads in file order in one task, as long as
  nothing between the file scan and ``find`` moved rows: a projection or a filter does not);
- any other DataFrame: the order Spark gives its rows (``monotonically_increasing_id``): that
  of the data for ``createDataFrame`` and a single scan, arbitrary after a shuffle
  (``repartition``, a join): name a ``tie_break`` then.
Spark does not read several files in the order of their names (it packs file splits into tasks
by size), which is why the input order is not simply the row's place in the DataFrame.

Positions. ``number_rows`` gives every row its position in that order in one pass over the
sorted data, and nothing in it depends on how Spark splits data into tasks: rows go to buckets
by value (a monotone function of the first order key, between its minimum and maximum), the
rows of each bucket are counted, and a row's position is the count of the buckets before its
own plus its rank in its bucket (a window partitioned by bucket). Every step is a function of
the rows' values, so the counts and the ranks agree whatever the partitioning, adaptive
execution or a recomputed task; no action runs until the result is used.
"""

from __future__ import annotations

import re

from ceql.errors import CeqlError
from ceql.lang.schema import TIME_UNITS, Schema

POS = "__ceql_pos"
SEQ = "__ceql_seq"
TIME = "__ceql_time"
FILE_KEY, ROW_KEY, BLOCK_KEY = "__ceql_file", "__ceql_row", "__ceql_block"
_BUCKET, _OFFSET, _COUNT, _LO, _HI = (
    "__ceql_bucket",
    "__ceql_offset",
    "__ceql_count",
    "__ceql_lo",
    "__ceql_hi",
)
NO_TIME = -(2**63)  # the time of event types without a primary_time: before any other
_INTEGRAL = ("bigint", "int", "smallint", "tinyint")
_TIME_KINDS = ("bigint", "int", "smallint", "tinyint", "timestamp", "timestamp_ntz", "string")
# Logical plan nodes that neither move rows between tasks nor reorder them.
_NARROW = {"Project", "Filter", "SubqueryAlias", "LogicalRelation"}


def time_ns(schema: Schema, df, row_id=None):
    """A Spark column with each row's primary_time in nanoseconds (null for types without one):
    integer columns scaled by their declared unit, timestamps, and ISO-8601 text (to the
    microsecond). A column of another Spark type is a CeqlError here; with ``row_id`` (a
    column that shows the row), a row whose time is missing or unreadable fails the job with
    an error naming the column and the row."""
    from pyspark.sql import functions as F

    kinds = dict(df.dtypes)
    expression = None
    for type_name, decl in schema.event_types.items():
        attribute = decl.time_attribute
        if attribute is None or attribute not in kinds:
            continue
        kind = kinds[attribute]
        if kind not in _TIME_KINDS:
            raise CeqlError(
                f"the primary_time {attribute!r} of {type_name} is a Spark {kind} column: "
                "use integers, timestamps or ISO-8601 text"
            )
        if kind in ("timestamp", "timestamp_ntz"):
            value = F.unix_micros(F.col(attribute).cast("timestamp")) * F.lit(1000)
        elif kind == "string":
            value = F.unix_micros(F.try_to_timestamp(F.col(attribute))) * F.lit(1000)
        else:
            unit = TIME_UNITS[decl.attribute(attribute).time_unit]
            value = F.col(attribute).cast("long") * F.lit(unit)
        condition = F.col("event_type") == type_name
        if row_id is not None:
            problem = "is missing" if kind != "string" else "is missing or not ISO-8601 text"
            message = F.concat(
                F.lit(f"the time column {attribute!r} of a row of type {type_name} {problem} ("),
                F.coalesce(F.concat(F.lit("'"), F.col(attribute).cast("string"), F.lit("'")), F.lit("null")),
                F.lit("): "),
                row_id,
            )
            guard = condition & value.isNull()
            expression = (
                F.when(guard, F.raise_error(message))
                if expression is None
                else expression.when(guard, F.raise_error(message))
            )
        expression = F.when(condition, value) if expression is None else expression.when(condition, value)
    return expression


def row_label(columns: list[str]):
    """A Spark column showing a row by the given columns (JSON), for error messages."""
    from pyspark.sql import functions as F

    return F.to_json(F.struct(*[F.col(f"`{c}`") for c in columns]))


def input_order(df):
    """``df`` with the columns that give its input order (see the module docstring), and their
    names. Only columns Spark can always evaluate: the file columns when the file scan is
    reachable, else a row id in the order of Spark's partitions."""
    from pyspark.sql import functions as F

    source = _file_source(df)
    if source is None:
        return df.withColumn(SEQ, F.monotonically_increasing_id()), [SEQ]
    rank, ranked = _file_rank(df)
    if source == "rows":  # Parquet: the row index in the file survives any shuffle
        row = F.col("_metadata.row_index")
        if ranked:  # one long: the file's rank, then the row (fewer than 2**40 rows a file)
            return df.withColumn(ROW_KEY, rank * F.lit(1 << 40) + row), [ROW_KEY]
        return df.withColumn(FILE_KEY, rank).withColumn(ROW_KEY, row), [FILE_KEY, ROW_KEY]
    block = F.col("_metadata.file_block_start")
    if ranked:  # one long: the file's rank, then the split's first byte (files under 2**44 bytes)
        df = df.withColumn(BLOCK_KEY, rank * F.lit(1 << 44) + block)
        keys = [BLOCK_KEY, SEQ]
    else:
        df = df.withColumn(FILE_KEY, rank).withColumn(BLOCK_KEY, block)
        keys = [FILE_KEY, BLOCK_KEY, SEQ]
    return df.withColumn(SEQ, F.monotonically_increasing_id()), keys


_RANKED_FILES = 64  # up to this many files, a row carries its file's rank, not its path


def _file_rank(df):
    """A column that orders the rows' files by path, and whether it is a small integer (the
    file's rank among the input's, 1, 2, ...) rather than the path itself (many files). Paths
    are compared as the local engine sorts them (decoded, not as URIs)."""
    from urllib.parse import unquote, urlparse

    from pyspark.sql import functions as F

    path = F.col("_metadata.file_path")
    files = sorted(set(df.inputFiles()), key=lambda uri: (unquote(urlparse(uri).path), uri))
    if len(files) > _RANKED_FILES:
        return path, False
    # Spark lists files as URIs (file:///x) and gives rows Hadoop paths (file:/x): both spellings.
    spellings = [spelling for uri in files for spelling in (uri, re.sub(r"^file:///", "file:/", uri))]
    found = F.array_position(F.array(*[F.lit(text) for text in spellings]), path)
    missing = F.raise_error(F.concat(F.lit("ceql: a row from a file not among the input's: "), path))
    return F.when(found > F.lit(0), F.ceil(found / F.lit(2))).otherwise(missing).cast("long"), True


def _file_source(df) -> str | None:
    """ "rows" when the rows come from Parquet files (with their row index), "blocks" when they
    come straight from files of another format (no operator in between moves them), None
    otherwise (or when the plan cannot be inspected, e.g. Spark Connect)."""
    if "_metadata" in df.columns:  # the user's own column of that name hides Spark's
        return None
    try:
        plan = df._jdf.queryExecution().analyzed()
        metadata = plan.metadataOutput()
        fields = [metadata.apply(i) for i in range(metadata.size())]
        found = [f for f in fields if f.name() == "_metadata"]
        if len(found) != 1:  # none, or ambiguous (a join of two scans)
            return None
        if "row_index" in found[0].dataType().simpleString():
            return "rows"
        node = plan
        while node.children().size() == 1 and node.nodeName() in _NARROW:
            node = node.children().apply(0)
        return "blocks" if node.children().size() == 0 and node.nodeName() == "LogicalRelation" else None
    except Exception:  # noqa: BLE001 - no JVM plan to inspect: Spark's own order
        return None


def with_order_keys(df, schema: Schema, order_by: list[str], tie_break: list[str], row_id=None):
    """The DataFrame with the columns that give the stream order, their names, and the
    column whose values are a non-decreasing function of that order (for ``number_rows``)."""
    from pyspark.sql import functions as F

    df, tail = input_order(df)
    if order_by:
        first = order_by[0]
        return df, [*order_by, *tail], first if dict(df.dtypes)[first] in _INTEGRAL else None
    time = time_ns(schema, df, row_id)
    if time is None:
        first = (tie_break or tail)[0]
        return df, [*tie_break, *tail], first if dict(df.dtypes)[first] in _INTEGRAL else None
    column = _shared_time_column(schema, df)
    if column is not None:  # the column itself holds the times (checked in place): no copy
        return df.withColumn(column, time), [column, *tie_break, *tail], column
    # Types without a time come first, as Spark sorts nulls (and the group sort must agree).
    return df.withColumn(TIME, F.coalesce(time, F.lit(NO_TIME))), [TIME, *tie_break, *tail], TIME


def _shared_time_column(schema: Schema, df) -> str | None:
    """The column that is every event type's primary_time, when it holds nanoseconds as longs
    (its values are then the times)."""
    decls = list(schema.event_types.values())
    names = {d.time_attribute for d in decls}
    if len(names) != 1 or None in names:
        return None
    (name,) = names
    units = {d.attribute(name).time_unit for d in decls}
    if dict(df.dtypes).get(name) != "bigint" or len(units) != 1 or TIME_UNITS[units.pop()] != 1:
        return None
    return name


def number_rows(df, sort_keys: list[str], bucket_key: str | None, buckets: int):
    """``df`` with ``__ceql_pos``, each row's position in the order of ``sort_keys`` (0, 1, ...),
    lazily and exactly (see the module docstring). ``bucket_key`` names an integer column that
    never decreases along that order (or None: one bucket, numbered in one task)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if bucket_key is None or buckets <= 1:
        placed = df.withColumn(_BUCKET, F.lit(0))
    else:
        key = F.col(bucket_key)
        if bucket_key == TIME:  # types without a time sort first: bucket -1
            key = F.when(key != F.lit(NO_TIME), key)
        bounds = df.select(key.alias(_BUCKET)).agg(F.min(_BUCKET).alias(_LO), F.max(_BUCKET).alias(_HI))
        # A monotone function of the key (doubles: exact enough to never reorder, as each
        # operation rounds monotonically), the same for equal keys.
        share = (key.cast("double") - F.col(_LO).cast("double")) / (
            F.col(_HI).cast("double") - F.col(_LO).cast("double") + F.lit(1.0)
        )
        bucket = F.least(F.greatest(F.floor(share * F.lit(buckets)), F.lit(0)), F.lit(buckets - 1))
        placed = (
            df.crossJoin(F.broadcast(bounds))
            .withColumn(_BUCKET, F.when(key.isNull(), F.lit(-1)).otherwise(bucket).cast("int"))
            .drop(_LO, _HI)
        )
    counts = placed.groupBy(_BUCKET).agg(F.count(F.lit(1)).alias(_COUNT))
    running = Window.partitionBy(F.lit(0)).orderBy(_BUCKET)  # a few rows: one per bucket
    offsets = counts.select(_BUCKET, (F.sum(_COUNT).over(running) - F.col(_COUNT)).alias(_OFFSET))
    rank = F.row_number().over(Window.partitionBy(_BUCKET).orderBy(*sort_keys))
    numbered = placed.join(F.broadcast(offsets), _BUCKET)
    return numbered.withColumn(POS, F.col(_OFFSET) + rank - F.lit(1)).drop(_BUCKET, _OFFSET)


def row_count(df):
    """A one-row DataFrame with the number of rows of ``df`` (lazy)."""
    from pyspark.sql import functions as F

    return df.agg(F.count(F.lit(1)).alias(_COUNT))
