"""ceql and Flink SQL (PyFlink 2.3) give the same rows for the same MATCH_RECOGNIZE text, on
generated queries and generated partitioned streams, for every construct Flink supports; and the
constructs Flink rejects or reads differently are the ones docs/sql.md lists.

A test of the bench kind: skipped, with the reason, when ``benchmarks/.venv-flink`` (``bash
benchmarks/setup_flink.sh``) or Java is missing, so CI stays green without Flink. All the
generated queries run in one Flink job (about a minute). ``CEQL_FLINK_QUERIES`` sets how many.

The generated queries stay inside Flink's subset (ONE ROW PER MATCH, a sequence of variables
with quantifiers, no PREV/NEXT, CLASSIFIER, MATCH_NUMBER, SUBSET, alternation, groups, anchors
or exclusion) and state AFTER MATCH explicitly (Flink's default is SKIP TO NEXT ROW, the
standard's SKIP PAST LAST ROW). Each variable's condition starts with a test of a ``kind``
column that no two variables share: Flink's greedy quantifiers do not backtrack (docs/sql.md),
so rows that two neighbouring variables both accept would make Flink miss standard matches.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import flink_sql  # noqa: E402

import ceql  # noqa: E402

pytestmark = [
    pytest.mark.bench,
    pytest.mark.skipif(
        not flink_sql.available(),
        reason="Flink is not installed: bash benchmarks/setup_flink.sh (needs Java 17)",
    ),
]

QUERIES = int(os.environ.get("CEQL_FLINK_QUERIES", "120"))
VARIABLES = ["A", "B", "C", "D"]
KINDS = {"A": "a", "B": "b", "C": "c", "D": "d"}


def stream(rng: random.Random, rows: int) -> pa.Table:
    """Partitions 1-3, strictly increasing millisecond times, a kind (per partition, mostly the
    next letter after the previous row's, so that sequences of variables match), integers with
    nulls, doubles."""
    t, out = 0, []
    previous = {1: "d", 2: "d", 3: "d"}
    for _ in range(rows):
        t += rng.choice([1, 200, 700, 1000, 1500, 2500])
        p = rng.randint(1, 3)
        step = rng.choices([1, 0, rng.randint(0, 3)], weights=[6, 2, 2])[0]
        kind = "abcd"[("abcd".index(previous[p]) + step) % 4]
        previous[p] = kind
        out.append(
            {
                "p": p,
                "t": t,
                "k": kind,
                "v": rng.choice([None, -2, 0, 1, 2, 3, 5, 8, 13]),
                "w": rng.choice([0.5, 1.25, 2.0, 3.5, -1.0]),
            }
        )
    return pa.Table.from_pylist(
        out,
        schema=pa.schema([("p", pa.int64()), ("t", pa.int64()), ("k", pa.string()), ("v", pa.int64()), ("w", pa.float64())]),
    )


def condition(rng: random.Random, var: str, earlier: list[str]) -> str:
    """The variable's kind, and sometimes a condition on the match so far."""
    base = f"{var}.k = '{KINDS[var]}'"
    others = earlier or [var]
    x = rng.choice(others)
    extra = rng.choice(
        [
            None,
            None,
            f"{var}.v > {rng.randint(-1, 5)}",
            f"{var}.v > {x}.v",
            f"{var}.v >= LAST({x}.v, 1)",
            f"LAST({var}.v, 1) IS NULL OR {var}.v > LAST({var}.v, 1)",
            f"SUM({var}.v) < {rng.randint(3, 15)}",
            f"COUNT({var}.v) <= 2",
            f"{var}.w * 2 > FIRST({x}.w)",
            f"{var}.v + {x}.v <> 4",
            f"MAX({x}.v) - MIN({x}.v) < 6",
            f"AVG({var}.w) > 0",
            f"CASE WHEN {var}.v IS NULL THEN TRUE ELSE {var}.v % 2 = 0 END",
            f"{var}.v BETWEEN 0 AND 5",
            f"{var}.v IN (1, 2, 3)",
            f"NOT ({var}.w < 1)",
        ]
    )
    return base if extra is None else f"{base} AND ({extra})"


def query(rng: random.Random) -> str:
    count = rng.randint(2, 4)
    names = VARIABLES[:count]
    terms = []
    for i, var in enumerate(names):
        last = i == count - 1
        options = ["", "", "+?", "*?", "{1,2}?", "{2,}?"] if last else ["", "", "+", "*", "?", "+?", "*?", "{2}", "{1,3}", "{1,2}?", "{2,}"]
        terms.append(var + rng.choice(options))
    if all(t.endswith(("*", "*?", "?")) and not t.endswith("+?") for t in terms):
        terms[0] = names[0]
    # Flink ends a match as soon as the rest of the pattern is optional, without waiting for a
    # greedy quantifier to take more rows (docs/sql.md): a greedy term needs a mandatory one after it
    if any(t[len(n):] in ("+", "*", "?", "{1,3}", "{2,}") for n, t in zip(names, terms)):
        if terms[-1].endswith("*?"):
            terms[-1] = names[-1]
    # Flink: "Optional pattern cannot be preceded by greedy pattern"
    for i in range(1, count):
        optional = terms[i].endswith(("*", "*?")) or terms[i] == names[i] + "?"
        greedy = terms[i - 1][-1:] in ("+", "*", "}") or terms[i - 1].endswith("}")
        if optional and greedy and not terms[i - 1].endswith("?"):
            terms[i - 1] = names[i - 1]
    defines = [f"{v} AS {condition(rng, v, names[:i])}" for i, v in enumerate(names)]
    x = rng.choice(names)
    measures = rng.sample(
        [
            f"FIRST({x}.v) AS m_first",
            f"LAST({x}.v) AS m_last",
            f"LAST({x}.v, 1) AS m_last1",
            f"FIRST({x}.v, 1) AS m_first1",
            f"{x}.w AS m_w",
            f"SUM({x}.v) AS m_sum",
            f"COUNT({x}.v) AS m_count",
            "COUNT(*) AS m_rows",
            f"MIN({x}.v) AS m_min",
            f"MAX({x}.w) AS m_max",
            f"AVG({x}.w) AS m_avg",
            f"FIRST({names[0]}.t) AS m_start",
            f"LAST({names[-1]}.t) AS m_end",
            f"{names[0]}.v + {names[-1]}.v AS m_plus",
            f"CASE WHEN {x}.v > 2 THEN 'big' ELSE 'small' END AS m_case",
        ],
        rng.randint(1, 4),
    )
    # SKIP TO LAST v must find v after the first row (else it is an error, on both engines)
    mandatory = [i for i, (v, term) in enumerate(zip(names, terms)) if term == v or term[len(v)] in "+{"]
    skips = ["AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW"]
    skips += [f"AFTER MATCH SKIP TO LAST {names[i]}" for i in mandatory if i > mandatory[0]]
    within = f" WITHIN INTERVAL '{rng.choice(['1', '2', '3', '5'])}' SECOND" if rng.random() < 0.3 else ""
    return (
        "SELECT * FROM data MATCH_RECOGNIZE ("
        f" PARTITION BY p ORDER BY rt MEASURES {', '.join(measures)} ONE ROW PER MATCH {rng.choice(skips)}"
        f" PATTERN ({' '.join(terms)}){within} DEFINE {', '.join(defines)})"
    )


def test_flink_and_ceql_give_the_same_rows() -> None:
    rng = random.Random(2028)
    jobs, results = [], []
    for _ in range(QUERIES):
        text = query(rng)
        table = stream(rng, rng.randint(40, 120))
        jobs.append(flink_sql.Job(text, table, "t"))
        results.append(ceql.sql(text, data=flink_sql.with_rowtime(table, "t")))
    flink = flink_sql.run_flink(jobs, [r.schema for r in results])
    differences = []
    rejected = []
    rows = 0
    for job, ours, theirs in zip(jobs, results, flink):
        if "error" in theirs:  # a shape Flink's planner does not support: nothing to compare
            rejected.append((job.query, theirs["error"]))
            continue
        expected = flink_sql.canonical_rows(theirs["rows"], ours.schema)
        got = flink_sql.canonical_rows(flink_sql.ceql_rows(ours), ours.schema)
        rows += len(got)
        if got != expected:
            differences.append((job.query, got, expected))
    assert not differences, differences[:3]
    compared = QUERIES - len(rejected)
    assert compared >= 0.8 * QUERIES, rejected[:5]  # the generator stays inside Flink's subset
    assert rows > compared  # and the generated queries do match
    print(f"{compared} of {QUERIES} queries compared, {rows} rows, all equal; Flink rejected {len(rejected)}")


def test_what_flink_rejects_is_what_the_docs_list() -> None:
    """docs/sql.md lists these as Flink's gaps; each is refused by Flink and run by ceql."""
    table = pa.table({"p": [1, 1, 1, 2, 2], "t": [1000, 2000, 3000, 4000, 5000], "k": list("abcab"), "v": [1, 2, 3, 4, 5]})
    body = "PARTITION BY p ORDER BY rt MEASURES {m} AS m ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN ({p}) {d}"
    cases = {
        "PREV": ("PREV(B.v)", "A B", "DEFINE B AS B.v > PREV(B.v)"),
        "CLASSIFIER": ("CLASSIFIER()", "A B", ""),
        "MATCH_NUMBER": ("MATCH_NUMBER()", "A B", ""),
        "alternation": ("A.v", "A | B", "DEFINE A AS A.v > 2"),
        "group": ("A.v", "(A B)+", ""),
        "empty match": ("A.v", "A*", "DEFINE A AS A.v > 2"),
        "PERMUTE": ("A.v", "PERMUTE(A, B)", ""),
        "anchor": ("A.v", "^ A", ""),
    }
    jobs, outputs = [], []
    for measure, pattern, define in cases.values():
        text = f"SELECT * FROM data MATCH_RECOGNIZE ({body.format(m=measure, p=pattern, d=define)})"
        outputs.append(ceql.sql(text, data=flink_sql.with_rowtime(table, "t")).schema)
        jobs.append(flink_sql.Job(text, table, "t"))
    flink = flink_sql.run_flink(jobs, outputs)
    accepted = [name for name, result in zip(cases, flink) if "error" not in result]
    assert not accepted, f"Flink now runs {accepted}: update docs/sql.md"


def test_where_flink_reads_differently() -> None:
    """The differences docs/sql.md lists (section 9), on Flink itself: each query gives the
    standard's rows on ceql and other rows on Flink."""
    table = pa.table({"p": [1, 1, 1, 1, 2, 2, 1, 2, 1, 1], "t": list(range(1000, 11000, 1000)), "v": [1, 5, 3, 4, 2, 8, 7, 1, 9, 0]})
    head = "SELECT * FROM data MATCH_RECOGNIZE (PARTITION BY p ORDER BY rt "
    cases = {
        # greedy quantifiers do not backtrack on Flink: every C row also satisfies B
        "greedy": (
            head + "MEASURES COUNT(B.v) AS n, C.v AS c ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
            "PATTERN (A B* C) DEFINE B AS B.v > 1, C AS C.v > 3)",
            [(1, 4, 9), (2, 0, 8)],
            [],
        ),
        # Flink's default is AFTER MATCH SKIP TO NEXT ROW
        "default skip": (
            head + "MEASURES A.v AS a ONE ROW PER MATCH PATTERN (A B) DEFINE B AS B.v > A.v)",
            [(1, 1), (1, 3), (1, 7), (2, 2)],
            [(1, 1), (1, 3), (1, 4), (1, 7), (2, 2)],
        ),
        # Flink ends a match as soon as the rest of the pattern is optional
        "optional rest": (
            head + "MEASURES COUNT(*) AS n ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
            "PATTERN (A B? C*?) DEFINE A AS A.v = 4, B AS B.v = 7)",
            [(1, 2)],
            [(1, 1)],
        ),
        # AVG of integers is an integer on Flink
        "avg": (
            head + "MEASURES AVG(A.v) AS m ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
            "PATTERN (A+ B) DEFINE A AS A.v < 6, B AS B.v > 6)",
            [(1, 3.25), (2, 2.0)],
            [(1, 3), (2, 2)],
        ),
    }
    jobs, outputs, expected = [], [], []
    for text, ours, theirs in cases.values():
        result = ceql.sql(text, data=flink_sql.with_rowtime(table, "t"))
        assert sorted(tuple(r.values()) for r in result.to_pylist()) == ours, text
        jobs.append(flink_sql.Job(text, table, "t"))
        outputs.append(result.schema)
        expected.append(theirs)
    flink = flink_sql.run_flink(jobs, outputs)
    for name, schema, result, theirs in zip(cases, outputs, flink, expected):
        assert "error" not in result, (name, result)
        got = [tuple(v for v in row) for row in flink_sql.canonical_rows(result["rows"], schema)]
        assert got == sorted(theirs), (name, got)


def test_flink_skip_to_the_first_row() -> None:
    """SKIP TO LAST v landing on the match's first row is an error on ceql (as on Trino and
    Oracle) and on Flink (the job fails)."""
    table = pa.table({"p": [1] * 4, "t": [1000, 2000, 3000, 4000], "v": [1, 2, 3, 4]})
    text = (
        "SELECT * FROM data MATCH_RECOGNIZE (PARTITION BY p ORDER BY rt MEASURES A.v AS a ONE ROW PER MATCH "
        "AFTER MATCH SKIP TO LAST A PATTERN (A B) DEFINE B AS B.v > A.v)"
    )
    with pytest.raises(ceql.EventError, match="would resume at the first row"):
        ceql.sql(text, data=flink_sql.with_rowtime(table, "t"))
    schema = pa.schema([("p", pa.int64()), ("a", pa.int64())])
    (result,) = flink_sql.run_flink([flink_sql.Job(text, table, "t")], [schema])
    assert "Could not skip to first element of a match" in result.get("error", ""), result
