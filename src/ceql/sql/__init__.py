"""SQL row pattern recognition: ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` on Arrow tables,
pandas and polars frames (docs/sql.md).

    import ceql
    result = ceql.sql(text, t=table)          # an Arrow table; t is the name used in FROM
    checked = ceql.sql.check(text, table)     # parse and resolve against the input's columns
    print(ceql.sql.explain(text, table))      # the plan: masks, VM conditions, CEQL equivalent

``ceql.sql`` is this module, and calling it runs a query. The layers: ``lexer``/``parser``
(text to ``ast``), ``analysis`` (names and types against the input: ``ir``), ``program`` and
``compiler`` (the matcher's program, row masks, VM code), ``engine`` and ``vm`` (running it).
``ceql.reference.match_recognize`` is the literal oracle of the semantics.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

import pyarrow as pa

from ceql.errors import QueryError
from ceql.sql.analysis import Checked, analyze
from ceql.sql.parser import parse_sql, reads_the_clock
from ceql.sql.values import as_table

__all__ = ["Checked", "check", "explain", "parse_sql", "run", "sql"]


def sql(text: str, /, **tables: Any) -> pa.Table:
    """Run a ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` query over the table named in FROM
    (an Arrow table, a pandas or polars DataFrame, given as a keyword argument) and return the
    result as an Arrow table."""
    return run(text, tables)


def run(text: str, tables: dict[str, Any], *, max_steps: int | None = None) -> pa.Table:
    """``sql`` with the tables as a dict (and the matcher's step bound, see engine.MAX_STEPS)."""
    from ceql.sql import engine

    try:
        query = parse_sql(text)
    except QueryError as error:
        if _needs_outer_engine(text, error):
            from ceql.sql import outer

            return outer.run(text, tables, max_steps=max_steps)
        raise
    table = as_table(_table(query, tables), query.table.text)
    compiled = _compile.__wrapped__(text, table.schema) if reads_the_clock(text) else _compile(text, table.schema)
    options = {} if max_steps is None else {"max_steps": max_steps}
    return engine.run(compiled, table, **options)


def _needs_outer_engine(text: str, error: QueryError) -> bool:
    """Whether ``error`` (from ceql's parser) is about the SQL around MATCH_RECOGNIZE: it is
    outside the first ``MATCH_RECOGNIZE ( ... )``, which then runs on ceql, the rest on DuckDB
    (``ceql.sql.outer``). An error inside the clause is ceql's to report."""
    from ceql.sql import outer

    span = outer.clause_span(text)
    if span is None or error.line is None or error.column is None:
        return False
    if outer.has_subquery(text, *span):  # evaluated first by the outer engine
        return True
    lines = text.split("\n")
    offset = sum(len(line) + 1 for line in lines[: error.line - 1]) + error.column - 1
    return not span[0] <= offset < span[1]


def check(text: str, table_or_schema: Any) -> Checked:
    """Parse ``text`` and resolve it against an input (a table, a frame or an Arrow schema); of a
    query with SQL around MATCH_RECOGNIZE, its (first) MATCH_RECOGNIZE clause."""
    schema = table_or_schema if isinstance(table_or_schema, pa.Schema) else as_table(table_or_schema).schema
    try:
        query = parse_sql(text)
    except QueryError as error:
        if not _needs_outer_engine(text, error):
            raise
        from ceql.sql import outer  # the SQL around it: check the (first) MATCH_RECOGNIZE clause

        parts = outer.split(outer.bare_values(text))
        query = parse_sql(parts.mr_query(parts.clauses[0]))
    return analyze(query, schema)


def explain(text: str, table_or_schema: Any) -> str:
    """How ceql runs the query: its CEQL equivalent where there is one, the row masks, the
    conditions that run in the VM, and the matcher's program."""
    from ceql.sql.plan import describe

    schema = table_or_schema if isinstance(table_or_schema, pa.Schema) else as_table(table_or_schema).schema
    try:
        return describe(_compile(text, schema))
    except QueryError as error:
        if not _needs_outer_engine(text, error):
            raise
    # the SQL around MATCH_RECOGNIZE (ceql.sql.outer): each clause over the input given, then the rest
    from ceql.sql import outer

    parts = outer.split(outer.bare_values(text))
    names = [f"{outer.RESULT_NAME}_{k}" for k in range(len(parts.clauses))]
    lines = [f"the SQL around MATCH_RECOGNIZE, run by DuckDB (Spark SQL on Spark): {parts.rest(names).strip()}"]
    for name, clause in zip(names, parts.clauses):
        plan = describe(_compile(parts.mr_query(clause), schema)).replace(outer.INPUT_NAME, clause.input_text.strip())
        lines += ["", f"{name}:", plan]
    return "\n".join(lines)


@functools.lru_cache(maxsize=64)
def _compile(text: str, schema: pa.Schema):
    from ceql.sql.compiler import compile_query

    return compile_query(analyze(parse_sql(text), schema))


def _table(query, tables: dict[str, Any]) -> Any:
    name = query.table
    if name.text in tables:
        return tables[name.text]
    matches = [k for k in tables if not name.quoted and k.upper() == name.text.upper()]
    if len(matches) == 1:
        return tables[matches[0]]
    given = ", ".join(sorted(tables)) or "none"
    raise QueryError(
        f"table {name.text} is not given (tables given: {given}; pass it as ceql.sql(text, {name.text}=...))",
        query.text,
        name.pos,
    )


class _CallableModule(ModuleType):
    """``ceql.sql`` is a module whose call runs a query: ``ceql.sql(text, t=table)``."""

    def __call__(self, text: str, /, **tables: Any) -> pa.Table:
        return sql(text, **tables)


sys.modules[__name__].__class__ = _CallableModule
