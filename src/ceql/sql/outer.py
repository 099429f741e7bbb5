"""The SQL around MATCH_RECOGNIZE, run by an embedded SQL engine (DuckDB) over Arrow.

ceql runs ``t MATCH_RECOGNIZE (...)`` itself; a query that also needs what a SQL engine does
(``WITH``, a subquery or ``VALUES`` as the input, ``ORDER BY``, ``GROUP BY``, joins, ``LIMIT``,
functions in the outer SELECT) is split at the MATCH_RECOGNIZE clauses:

1. each clause's input (a table given by name, or any table expression: a subquery,
   ``(VALUES ...) t(a, b)``, a table of the ``WITH`` clause) is computed, by DuckDB unless it is
   a table given by name;
2. ceql matches it (``SELECT * FROM input MATCH_RECOGNIZE (...)``: the clause as written);
3. the input and the clause are replaced in the text by the name of that result, and DuckDB
   runs the rest, over the tables given and the results, all Arrow (zero-copy).

DuckDB is imported only here, only for such queries (it is the ``sql`` extra: ``pip install
'ceql[sql]'``; importing it takes about a quarter of a second). ``ceql.spark.sql`` splits the
query the same way and runs the rest with Spark SQL (``split``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from ceql.errors import MissingExtraError, QueryError, QuerySyntaxError, UnsupportedQueryError
from ceql.sql.lexer import Token, tokenize
from ceql.sql.values import as_table

#: What a MATCH_RECOGNIZE result is called in the rewritten text (``_0``, ``_1``, ... appended).
RESULT_NAME = "__ceql_match_recognize"
INPUT_NAME = "__ceql_input"


@dataclass(frozen=True)
class Clause:
    """One ``input MATCH_RECOGNIZE (...)`` of a query: where its input and its clause are."""

    input_start: int  # offset of the input's first character
    input_text: str  # the input as written: a name, or a table expression with its alias
    input_name: str | None  # the input's name when it is just a name (no alias, no columns)
    input_quoted: bool
    clause_text: str  # "MATCH_RECOGNIZE ( ... )"
    end: int  # offset after the clause's closing parenthesis


@dataclass(frozen=True)
class Split:
    """A query split at its MATCH_RECOGNIZE clauses (see the module doc)."""

    text: str
    with_text: str  # "WITH ... " (the query's WITH clause, for computing inputs), or ""
    clauses: tuple[Clause, ...]

    def rest(self, names: list[str]) -> str:
        """The query with each input and clause replaced by the name of its result."""
        out = []
        at = 0
        for clause, name in zip(self.clauses, names):
            out.append(self.text[at : clause.input_start])
            out.append(name + " ")
            at = clause.end
        out.append(self.text[at:])
        return "".join(out)

    def mr_query(self, clause: Clause) -> str:
        """The text ceql runs for ``clause``: its input named INPUT_NAME."""
        return f"SELECT * FROM {INPUT_NAME} {clause.clause_text}"

    def input_query(self, clause: Clause, names: list[str] | None = None) -> str:
        """A SQL query (for the outer engine) whose result is the clause's input; ``names``: the
        results of the clauses before it (those inside the WITH clause are replaced by them)."""
        return f"{self.with_prefix(names or [])}SELECT * FROM {clause.input_text}"

    def with_prefix(self, names: list[str]) -> str:
        """The WITH clause, its MATCH_RECOGNIZE clauses replaced by the names of their results
        (``names[i]`` for clause i, computed before any clause after the WITH clause)."""
        if not self.with_text:
            return ""
        end = len(self.with_text) - 1  # with_text ends with an added space
        out = []
        at = 0
        for clause, name in zip(self.clauses, names):
            if clause.end > end:
                break
            out.append(self.text[at : clause.input_start])
            out.append(name + " ")
            at = clause.end
        out.append(self.text[at:end])
        return "".join(out) + " "


def clause_span(text: str) -> tuple[int, int] | None:
    """(start, end) of the first ``MATCH_RECOGNIZE ( ... )`` in ``text``, or None (None also if
    the text cannot be tokenized)."""
    try:
        tokens = tokenize(text)
    except QueryError:
        return None
    for i, tok in enumerate(tokens):
        if tok.upper == "MATCH_RECOGNIZE" and _is_op(tokens[i + 1], "("):
            close = _closing(tokens, i + 1)
            if close is not None:
                return tok.offset, tokens[close].offset + 1
    return None


def has_subquery(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` (a MATCH_RECOGNIZE clause) holds a ``(SELECT ...)``."""
    try:
        tokens = tokenize(text)
    except QueryError:
        return False
    return any(
        _is_op(tok, "(") and tokens[i + 1].upper in ("SELECT", "WITH", "VALUES") and start <= tok.offset < end
        for i, tok in enumerate(tokens[:-1])
    )


def bare_values(text: str) -> str:
    """``text`` with Trino's unparenthesized VALUES rows (``VALUES 1, 2``) written as rows
    (``VALUES (1), (2)``), which other engines require. Other text is unchanged."""
    tokens = tokenize(text)
    inserts: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        if tok.upper != "VALUES" or _is_op(tokens[i + 1], "("):
            continue
        depth = 0
        start = tokens[i + 1].offset
        j = i + 1
        while j < len(tokens) and tokens[j].kind != "EOF":
            t = tokens[j]
            if _is_op(t, "("):
                depth += 1
            elif _is_op(t, ")"):
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and (_is_op(t, ",") or t.upper in _AFTER_VALUES or _is_op(t, ";")):
                inserts += [(start, "("), (t.offset, ")")]
                if not _is_op(t, ","):
                    start = -1
                    break
                start = tokens[j + 1].offset
            j += 1
        if start >= 0:
            inserts += [(start, "("), (tokens[j].offset if j < len(tokens) else len(text), ")")]
    out = []
    at = 0
    for offset, piece in sorted(inserts, key=lambda x: x[0]):
        out.append(text[at:offset])
        out.append(piece)
        at = offset
    out.append(text[at:])
    return "".join(out)


_AFTER_VALUES = {"ORDER", "LIMIT", "OFFSET", "FETCH", "UNION", "EXCEPT", "INTERSECT", "WHERE", "AS"}


def constant_subqueries(clause_text: str, run_query: Any) -> str:
    """``clause_text`` (a MATCH_RECOGNIZE clause) with each uncorrelated subquery replaced by
    its value, computed once by ``run_query`` (text to Arrow table): ``(SELECT 'x')`` by
    ``'x'``, ``IN (SELECT ...)`` by the list of values, ``EXISTS (SELECT ...)`` by TRUE or
    FALSE. A subquery that reads the row (correlated) fails in ``run_query``."""
    tokens = tokenize(clause_text)
    out = []
    at = 0
    i = 0
    while i < len(tokens) - 1:
        tok = tokens[i]
        if _is_op(tok, "(") and tokens[i + 1].upper in ("SELECT", "WITH", "VALUES"):
            close = _closing(tokens, i)
            if close is None:
                break
            inner = clause_text[tokens[i + 1].offset : tokens[close].offset]
            start = tok.offset
            before = tokens[i - 1] if i > 0 else None
            table = run_query(inner)
            if before is not None and before.upper == "EXISTS":
                start = before.offset
                value = "TRUE" if table.num_rows else "FALSE"
            elif before is not None and before.upper == "IN":
                values = table.column(0).to_pylist() if table.num_columns else []
                value = "(" + (", ".join(_literal(v) for v in values) or "NULL") + ")"
            else:
                if table.num_columns != 1 or table.num_rows > 1:
                    raise UnsupportedQueryError(
                        "a scalar subquery must give one column and at most one row", clause_text, tok.offset
                    )
                value = "(" + _literal(table.column(0)[0].as_py() if table.num_rows else None) + ")"
            out.append(clause_text[at:start])
            out.append(value)
            at = tokens[close].offset + 1
            i = close + 1
            continue
        i += 1
    out.append(clause_text[at:])
    return "".join(out)


def _literal(value: Any) -> str:
    """A Python value as a SQL literal ceql parses."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else "CAST(NULL AS DOUBLE)"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise UnsupportedQueryError(f"a subquery's value {value!r} (type {type(value).__name__}) cannot be a constant")


def split(text: str) -> Split:
    """Find the MATCH_RECOGNIZE clauses of ``text`` and their inputs."""
    tokens = tokenize(text)
    clauses = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.upper == "MATCH_RECOGNIZE" and _is_op(tokens[i + 1], "("):
            close = _closing(tokens, i + 1)
            if close is None:
                raise QueryError("MATCH_RECOGNIZE's '(' is not closed", text, tokens[i + 1].offset)
            clause = _clause(text, tokens, i, close)
            if clauses and clause.input_start < clauses[-1].end:
                raise UnsupportedQueryError(
                    "a MATCH_RECOGNIZE in the input of another (name the inner result with WITH instead)",
                    text,
                    clause.input_start,
                )
            clauses.append(clause)
            i = close + 1
            continue
        i += 1
    if not clauses:
        raise QueryError("the query has no MATCH_RECOGNIZE", text, 0)
    return Split(text, _with_clause(text, tokens), tuple(clauses))


def run(text: str, tables: dict[str, Any], *, max_steps: int | None = None) -> pa.Table:
    """The whole query: ceql for each MATCH_RECOGNIZE, DuckDB for the rest (the module doc)."""
    from ceql import sql as ceql_sql

    duckdb = _duckdb()
    shown = text
    text = bare_values(text)
    parts = split(text)
    con = duckdb.connect()
    try:
        if "TUMBLE" in text.upper():
            _group_windows(con)
        arrow_tables = {name: as_table(value, name) for name, value in tables.items()}
        for name, table in arrow_tables.items():
            con.register(name, table)
        names = []
        for k, clause in enumerate(parts.clauses):
            source = _given(arrow_tables, clause)
            if source is None:
                source = _hugeints(_outer(con, parts.input_query(clause, names), text, clause.input_start))
            prefix = parts.with_prefix(names)
            clause_text = constant_subqueries(
                clause.clause_text, lambda query, at=clause.end, prefix=prefix: _outer(con, prefix + query, text, at)
            )
            if clause_text != clause.clause_text:
                clause = replace(clause, clause_text=clause_text)
            try:
                result = ceql_sql.run(parts.mr_query(clause), {INPUT_NAME: source}, max_steps=max_steps)
            except QueryError as error:
                raise _moved(error, shown if shown == text else text, clause, parts.mr_query(clause)) from None
            if result.num_columns == 0:  # no PARTITION BY, no MEASURES, ONE ROW PER MATCH
                raise UnsupportedQueryError(
                    "this MATCH_RECOGNIZE gives rows without columns (no PARTITION BY, no MEASURES): the query around "
                    "it has nothing to read (add a measure, such as MATCH_NUMBER() AS n)",
                    text,
                    clause.end - len(clause.clause_text),
                )
            name = f"{RESULT_NAME}_{k}"
            con.register(name, result)
            names.append(name)
        return _outer(con, parts.rest(names), text, 0)
    finally:
        con.close()


# ---------------------------------------------------------------------------- internals


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise MissingExtraError(
            "the SQL around MATCH_RECOGNIZE (WITH, ORDER BY, GROUP BY, joins, a subquery or VALUES as the input) "
            "runs on DuckDB, which is not installed: pip install 'ceql[sql]'"
        ) from None
    return duckdb


#: Flink's group windows (``GROUP BY TUMBLE(t, size)``, and in the SELECT list the window's
#: ``TUMBLE_START``, ``TUMBLE_END`` and ``TUMBLE_ROWTIME``, its last millisecond) as DuckDB
#: macros: windows of ``size`` aligned on the epoch, as Flink's are. ``t`` is a timestamp
#: without time zone (Flink's rowtime). The SELECT list's are aggregates (every row of a group
#: has the same window), as DuckDB does not match them to the GROUP BY key.
_BUCKET = "time_bucket(size, CAST(t AS TIMESTAMP), TIMESTAMP '1970-01-01')"
GROUP_WINDOWS = (
    f"CREATE MACRO tumble(t, size) AS {_BUCKET}",
    f"CREATE MACRO tumble_start(t, size) AS min({_BUCKET})",
    f"CREATE MACRO tumble_end(t, size) AS min({_BUCKET}) + size",
    f"CREATE MACRO tumble_rowtime(t, size) AS min({_BUCKET}) + size - INTERVAL 1 MILLISECOND",
)


def _hugeints(table: pa.Table) -> pa.Table:
    """DuckDB's HUGEINT (its SUM of integers: Arrow ``decimal128(38, 0)``) as BIGINT where every
    value fits, as Trino's and Flink's SUM of integers are: the matcher computes with 64-bit
    integers, not decimals."""
    for i, field in enumerate(table.schema):
        if field.type == pa.decimal128(38, 0):
            try:
                column = table.column(i).cast(pa.int64())
            except pa.ArrowInvalid:  # a value past 64 bits: kept as it is
                continue
            table = table.set_column(i, pa.field(field.name, pa.int64(), field.nullable), column)
    return table


def _group_windows(con: Any) -> None:
    for macro in GROUP_WINDOWS:
        con.execute(macro)


def _outer(con: Any, query: str, text: str, offset: int) -> pa.Table:
    """Run ``query`` on DuckDB; its errors become UnsupportedQueryError at ``offset`` of ``text``."""
    import duckdb

    try:
        result = con.sql(query).to_arrow_table()
    except duckdb.Error as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        # DuckDB's parser errors are syntax errors, its binder's and catalog's (no such column,
        # table or function) errors in the query; others are what DuckDB does not run
        kind: type[QueryError] = UnsupportedQueryError
        if isinstance(error, duckdb.ParserException):
            kind = QuerySyntaxError
        elif isinstance(error, (duckdb.BinderException, duckdb.CatalogException)):
            kind = QueryError
        raise kind(f"the SQL around MATCH_RECOGNIZE (run by DuckDB): {message}", text, offset) from None
    return result


def _given(tables: dict[str, pa.Table], clause: Clause) -> pa.Table | None:
    """The table a clause reads when its input is the name of a given table."""
    if clause.input_name is None:
        return None
    if clause.input_name in tables:
        return tables[clause.input_name]
    if not clause.input_quoted:
        found = [k for k in tables if k.upper() == clause.input_name.upper()]
        if len(found) == 1:
            return tables[found[0]]
    return None


def _moved(error: QueryError, text: str, clause: Clause, inner: str) -> QueryError:
    """``error`` (raised on ``inner``, the clause after a made-up SELECT) at its place in
    ``text``."""
    if error.line is None or error.column is None:
        return error
    lines = inner.split("\n")
    offset = sum(len(line) + 1 for line in lines[: error.line - 1]) + error.column - 1
    prefix = len(inner) - len(clause.clause_text)
    if offset < prefix:
        return error
    message = error.message.replace(INPUT_NAME, clause.input_text.strip())
    return type(error)(message, text, clause.end - len(clause.clause_text) + (offset - prefix), error.expected)


def _is_op(tok: Token, op: str) -> bool:
    return tok.kind == "OP" and tok.value == op


def _matching(tokens: list[Token], at: int, step: int) -> int | None:
    """The parenthesis matching the one at ``at``: after it (``step`` 1, from a ``(``) or before
    it (-1, from a ``)``); None if there is none."""
    opening, closing = ("(", ")") if step > 0 else (")", "(")
    depth = 0
    for j in range(at, len(tokens) if step > 0 else -1, step):
        if _is_op(tokens[j], opening):
            depth += 1
        elif _is_op(tokens[j], closing):
            depth -= 1
            if depth == 0:
                return j
    return None


def _closing(tokens: list[Token], open_at: int) -> int | None:
    return _matching(tokens, open_at, 1)


def _opening(tokens: list[Token], close_at: int) -> int | None:
    return _matching(tokens, close_at, -1)


_BEFORE_INPUT = {"FROM", "JOIN", "LATERAL", "ON", "USING", "SELECT", "WHERE"}


def _is_name(tok: Token) -> bool:
    return tok.kind == "QIDENT" or (tok.kind == "IDENT" and tok.upper not in _BEFORE_INPUT and tok.upper != "AS")


def _clause(text: str, tokens: list[Token], at: int, close: int) -> Clause:
    """The clause at token ``at`` (MATCH_RECOGNIZE) and its input, found by reading back: an
    optional alias (``t``, ``AS t``, ``t(a, b)``), then a name (``a.b``) or a parenthesized
    table expression."""
    j = at - 1
    alias = False
    # an alias with columns: t(a, b)
    if j >= 0 and _is_op(tokens[j], ")"):
        open_at = _opening(tokens, j)
        if open_at is not None and open_at >= 1 and _is_name(tokens[open_at - 1]):
            before = tokens[open_at - 2] if open_at >= 2 else None
            if before is not None and (_is_op(before, ")") or _is_name(before) or before.upper == "AS"):
                j = open_at - 2
                alias = True
    elif j >= 1 and _is_name(tokens[j]):
        before = tokens[j - 1]
        if _is_op(before, ")") or _is_name(before) or before.upper == "AS":
            j -= 1
            alias = True
    if alias and j >= 0 and tokens[j].upper == "AS":
        j -= 1
    if j < 0:
        raise QueryError("MATCH_RECOGNIZE needs an input before it (FROM t MATCH_RECOGNIZE (...))", text, tokens[at].offset)
    if _is_op(tokens[j], ")"):
        start_at = _opening(tokens, j)
        if start_at is None:
            raise QueryError("unbalanced ')' before MATCH_RECOGNIZE", text, tokens[j].offset)
        name = None
        quoted = False
    elif _is_name(tokens[j]):
        start_at = j
        while start_at >= 2 and _is_op(tokens[start_at - 1], ".") and _is_name(tokens[start_at - 2]):
            start_at -= 2
        single = start_at == j and not alias
        name = str(tokens[j].value) if single else None
        quoted = tokens[j].kind == "QIDENT"
    else:
        raise QueryError(
            f"expected a table or a table expression before MATCH_RECOGNIZE, found {tokens[j].describe()}",
            text,
            tokens[j].offset,
        )
    start = tokens[start_at].offset
    clause_start = tokens[at].offset
    end = tokens[close].offset + 1
    return Clause(start, text[start:clause_start], name, quoted, text[clause_start:end], end)


def _with_clause(text: str, tokens: list[Token]) -> str:
    """The query's leading ``WITH name [(columns)] AS (...), ...`` text (with a trailing space),
    or ''."""
    if not tokens or tokens[0].upper != "WITH":
        return ""
    j = 1
    if tokens[j].upper == "RECURSIVE":
        j += 1
    while True:
        j += 1  # the name
        if _is_op(tokens[j], "("):
            close = _closing(tokens, j)
            if close is None:
                return ""
            j = close + 1
        if tokens[j].upper != "AS":
            return ""
        j += 1
        if tokens[j].upper in ("MATERIALIZED", "NOT"):
            j += 2 if tokens[j].upper == "NOT" else 1
        if not _is_op(tokens[j], "("):
            return ""
        close = _closing(tokens, j)
        if close is None:
            return ""
        j = close + 1
        if not _is_op(tokens[j], ","):
            break
        j += 1
    return text[: tokens[j].offset] + " "
