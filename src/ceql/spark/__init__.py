"""ceql on Apache Spark (PySpark): the same queries over batch and streaming DataFrames.

from ceql.spark import find, session
spark = session()                     # local[*] by default
matches = find(df, query_text, declaration_text)

Needs the Spark extra: ``pip install 'ceql[spark]'`` (PySpark, and Java 17+ at run time).
"""

try:
    import pyspark  # noqa: F401
except ImportError as exc:  # the local engine works without Spark; say how to get it
    from ceql.errors import MissingExtraError

    raise MissingExtraError(
        "the Spark engine needs PySpark: pip install 'ceql[spark]' (and Java 17 or newer)"
    ) from exc

from ceql.spark.batch import explain_plan, find, plan_kind
from ceql.spark.session import session

__all__ = ["explain_plan", "find", "plan_kind", "session"]
