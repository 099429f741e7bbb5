"""ceql on Apache Spark (PySpark): the same queries over batch and streaming DataFrames.

from ceql.spark import find, session
spark = session()                     # local[*] by default
matches = find(df, query_text, declaration_text)
"""

from ceql.spark.batch import explain_plan, find, plan_kind
from ceql.spark.session import session

__all__ = ["explain_plan", "find", "plan_kind", "session"]
