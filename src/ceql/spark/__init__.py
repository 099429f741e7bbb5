"""ceql on Apache Spark (PySpark): the same queries over batch and streaming DataFrames.

    from ceql.spark import find, session
    spark = session()                                  # local[*] by default
    matches = find(df, query_text, time_column="t")    # lazy: a DataFrame of complex events
    matches = df.transform(matcher(query_text, time_column="t"))

Needs the Spark extra: ``pip install 'ceql[spark]'`` (PySpark, and Java 17+ at run time).
The Spark chapter of the guide is docs/spark.md.
"""

try:
    import pyspark  # noqa: F401
except ImportError as exc:  # the local engine works without Spark; say how to get it
    from ceql.errors import MissingExtraError

    raise MissingExtraError(
        "the Spark engine needs PySpark: pip install 'ceql[spark]' (and Java 17 or newer)"
    ) from exc

from ceql.spark import sql  # MATCH_RECOGNIZE: ceql.spark.sql(text, t=df) (a module you can call)
from ceql.spark.batch import explain_plan, find, matcher, plan_kind
from ceql.spark.session import session
from ceql.spark.streaming import stream_end, write_stream

__all__ = ["explain_plan", "find", "matcher", "plan_kind", "session", "sql", "stream_end", "write_stream"]
