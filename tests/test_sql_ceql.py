"""A MATCH_RECOGNIZE query and the CEQL query ``ceql.sql.explain`` gives as its equivalent find
the same matches, on generated queries whose matches are unique per starting row (variables with
disjoint conditions, a last element of fixed length, AFTER MATCH SKIP TO NEXT ROW): the two engines check each other, and the
mapping of docs/sql.md section 6 is exact where it claims to be."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ceql
from ceql.sql.plan import to_ceql

KINDS = "abcd"


@st.composite
def cases(draw):
    count = draw(st.integers(1, 4))
    names = ["A", "B", "C", "D"][:count]
    # the last element maps a fixed number of rows: one match at most per starting row
    terms = [n + draw(st.sampled_from(["", "", "+", "{2}"] if i < count - 1 else ["", "{2}"])) for i, n in enumerate(names)]
    defines = []
    for i, name in enumerate(names):
        condition = f"kind = '{KINDS[i]}'"
        extra = draw(st.sampled_from(["", "v > 2", "v <= 5", f"{name}.v > {names[0]}.v" if i > 0 and terms[0] == names[0] else ""]))
        defines.append(f"{name} AS {condition}" + (f" AND {extra}" if extra else ""))
    partition = draw(st.booleans())
    text = (
        "SELECT * FROM e MATCH_RECOGNIZE ("
        + ("PARTITION BY k " if partition else "")
        + "ORDER BY i MEASURES FIRST(i) AS first_row, LAST(i) AS last_row AFTER MATCH SKIP TO NEXT ROW "
        + f"PATTERN ({' '.join(terms)}) DEFINE {', '.join(defines)})"
    )
    n = draw(st.integers(1, 40))
    table = pa.table(
        {
            "i": range(n),
            "k": draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)),
            "kind": draw(st.lists(st.sampled_from(KINDS[:count] + "x"), min_size=n, max_size=n)),
            "v": draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)),
        }
    )
    return text, table


@pytest.mark.filterwarnings("ignore::ceql.errors.InputWarning")  # columns CEQL's R does not declare
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_match_recognize_and_its_ceql_equivalent_agree(case) -> None:
    text, table = case
    declaration, query, reason = to_ceql(ceql.sql.check(text, table))
    assert query is not None, reason
    ours = sorted((r["first_row"], r["last_row"]) for r in ceql.sql(text, e=table).to_pylist())
    events = table.append_column("event_type", pc.cast(pa.array(["R"] * table.num_rows), pa.string()))
    theirs = sorted((min(m.positions), max(m.positions)) for m in ceql.compile(query, ceql.declare(declaration)).run(events))
    assert ours == theirs, (text, query)


def test_queries_without_an_equivalent_say_why() -> None:
    table = pa.table({"i": [1], "v": [1]})
    for text, why in [
        ("SELECT * FROM e MATCH_RECOGNIZE (ORDER BY i PATTERN (A B?))", "optional or reluctant"),
        ("SELECT * FROM e MATCH_RECOGNIZE (ORDER BY i PATTERN (A B) DEFINE B AS v > PREV(v))", "navigation"),
        ("SELECT * FROM e MATCH_RECOGNIZE (ORDER BY i PATTERN (A+ B) DEFINE B AS v > A.v)", "not the variable itself"),
        ("SELECT * FROM e MATCH_RECOGNIZE (ORDER BY i PATTERN (A+) DEFINE A AS SUM(A.v) < 3)", "aggregate in DEFINE"),
        ("SELECT * FROM e MATCH_RECOGNIZE (ORDER BY i PATTERN (PERMUTE(A, B)))", "PERMUTE"),
    ]:
        declaration, query, reason = to_ceql(ceql.sql.check(text, table))
        assert query is None and why in reason, (text, reason)
