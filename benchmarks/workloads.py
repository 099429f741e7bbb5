"""Every benchmark row, grouped in families (one printed table per family).

A row is a plain dict (it crosses process boundaries as JSON):

- ``family``, ``workload``, ``query``: where it is printed and its name;
- ``text``: the CEQL query; ``declaration``: a key of ``DECLARATIONS``;
- ``data``: ``[generator, {keyword arguments}]`` (functions of ``generators.py``);
- ``mode``: ``run`` (time the whole run), ``stress`` (update phase and enumeration of the last
  event timed apart) or ``tail`` (the first ``split`` events are processed untimed, the rest
  timed: cost per event of the tail);
- ``competitors``: ``core`` (CORE++), ``duckdb:<query name>``;
- ``note``: a label printed with the row (e.g. why it has no output);
- ``measures_of``: for a measures row, the row it is compared with (and that row's Python-path
  twin, named with ", Python path");
- ``engine``: ceql's ``engine`` option (default "auto").
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import generators as g

HERE = Path(__file__).resolve().parent
FAMILIES = ("core", "synthetic", "stress", "duckdb", "issues", "flink")

DECLARATIONS = {
    "stocks": g.STOCK_DECLARATION,
    "homes": g.HOMES_DECLARATION,
    "taxis": g.TAXI_DECLARATION,
    "stress": g.STRESS_DECLARATION,
    "synthetic": g.synthetic_declaration(g.synthetic_types(9) + ["ZZ"]),
    "keyed": g.KEYED_DECLARATION,
    "tweets": g.TWEETS_DECLARATION,
    "values": g.VALUES_DECLARATION,
    "threads": g.THREADS_DECLARATION,
}

NO_OUTPUT = "no output by design: the last step never occurs (CORE's partial-match workload)"


def _row(family: str, workload: str, query: str, text: str, declaration: str, data: list, **extra) -> dict:
    row = {
        "family": family,
        "workload": workload,
        "query": query,
        "text": text,
        "declaration": declaration,
        "data": data,
        "mode": "run",
        "competitors": [],
        "note": "",
    }
    row.update(extra)
    return row


def _core_queries(dataset: str, names: list[str] | None) -> list[tuple[str, str]]:
    files = sorted((HERE / "queries" / dataset).glob("*.txt"), key=lambda p: (len(p.stem), p.stem))
    out = [(p.stem.replace("_none", ""), p.read_text()) for p in files]
    return [q for q in out if names is None or q[0] in names]


def core_family(quick: bool) -> list[dict]:
    """CORE's benchmark queries, verbatim, on the three data sets (CORE++ side by side)."""
    scale = 0.1 if quick else 1.0
    sets = [
        ("stocks", "stocks", "stocks", 224_473, ["q1", "q6", "other-q1", "other-q3"]),
        ("smart_homes", "homes", "smart_homes", 1_000_000, ["q1", "q6"]),
        ("taxis", "taxis", "taxis", 585_762, ["q1", "q6"]),
    ]
    rows = []
    for dataset, declaration, generator, size, quick_names in sets:
        data = [generator, {"events": int(size * scale)}]
        for name, text in _core_queries(dataset, quick_names if quick else None):
            never = "NotExists" in text or "Not Exist" in text or "household_id = 1000" in text
            rows.append(
                _row(
                    "core",
                    dataset,
                    name,
                    text,
                    declaration,
                    data,
                    competitors=["core"],
                    note=NO_OUTPUT if never else "",
                )
            )
        if dataset == "stocks":
            # q1 plus a cross-event condition (CORE++ has none): checked on enumerated CEs today.
            cross = (
                "SELECT * FROM S WHERE (SELL as T1; BUY as T2; BUY as T3) FILTER T1[name = 'INTC'] AND "
                "T2[name = 'RIMM'] AND T3[name = 'QQQ'] AND T1.price < T3.price WITHIN 10000 [stock_time]"
            )
            rows.append(_row("core", dataset, "q1+cross", cross, declaration, data))
    return rows


def synthetic_family(quick: bool) -> list[dict]:
    """The CORE paper's synthetic experiments: 1M events uniformly over 9 types."""
    data = ["uniform", {"events": 100_000 if quick else 1_000_000}]
    queries = [
        ("sequence", "SELECT ALL * FROM S WHERE (AA; AB; AC) WITHIN 100 EVENTS CONSUME BY ANY", ""),
        ("kleene", "SELECT ALL * FROM S WHERE (AA; AB+; AC) WITHIN 100 EVENTS CONSUME BY ANY", ""),
        ("sequence-5", "SELECT ALL * FROM S WHERE (AA; AB; AC; AD; AE) WITHIN 100 EVENTS CONSUME BY ANY", ""),
        (
            "disjunction",
            "SELECT ALL * FROM S WHERE (AA; (AB OR AC); AD) WITHIN 100 EVENTS CONSUME BY ANY",
            "",
        ),
    ]
    for strategy in ("ALL", "NEXT", "LAST", "MAX"):
        queries.append(
            (
                f"no-last-{strategy}",
                f"SELECT {strategy} * FROM S WHERE (AA; AB; AC; ZZ) WITHIN 100 EVENTS",
                "no output by design: ZZ never occurs (partial-match maintenance)",
            )
        )
    names = {"sequence", "kleene"} if quick else None
    return [
        _row("synthetic", "synthetic", name, text, "synthetic", data, competitors=["core"], note=note)
        for name, text, note in queries
        if names is None or name in names
    ]


def stress_family(quick: bool) -> list[dict]:
    """Foundations' stress test Q2: the last event fires every (A, B, C) triple before it."""
    return [
        _row(
            "stress",
            "stress",
            f"Q2 n={n}",
            "SELECT * FROM S WHERE A; B; C; D",
            "stress",
            ["stress", {"events": n}],
            mode="stress",
        )
        for n in ([200, 400] if quick else [200, 400, 800, 1200, 1600, 2000])
    ]


CORRELATION = "SELECT * FROM S WHERE (T AS x ; R AS y) FILTER x.id = y.tweet WITHIN {n} EVENTS"


def duckdb_family(quick: bool) -> list[dict]:
    """Workloads whose matches DuckDB expresses exactly, timed side by side, sets compared."""
    stock_q1 = (HERE / "queries" / "stocks" / "q1_none.txt").read_text()
    stock_events = 100_000 if quick else 10_000_000
    keyed_events = 100_000 if quick else 1_000_000
    tweet_events = 2_000 if quick else 200_000
    rows = [
        _row(
            "duckdb",
            "stocks",
            "q1 (self-joins)",
            stock_q1,
            "stocks",
            ["stocks", {"events": stock_events}],
            competitors=["duckdb:stock-q1"],
        ),
        _row(
            "duckdb",
            "keyed",
            "A : B : C PARTITION BY [k] (LAG)",
            "SELECT * FROM S WHERE A : B : C PARTITION BY [k]",
            "keyed",
            ["keyed", {"events": keyed_events}],
            competitors=["duckdb:contiguous", "core"],
        ),
    ]
    for n in (100, 1_000) if quick else (1_000, 20_000):
        rows.append(
            _row(
                "duckdb",
                "tweets",
                f"correlation WITHIN {n:,} EVENTS (join)",
                CORRELATION.format(n=n),
                "tweets",
                ["tweets", {"events": tweet_events}],
                competitors=[f"duckdb:correlation-{n}"],
            )
        )
    return rows


EXAMPLE4 = (
    "SELECT * FROM S WHERE [ (T AS X ; ((R+) PARTITION BY [user]) AS Y ; R AS Z) "
    "FILTER Y[kind = 0] AND Z[kind = 1] ] PARTITION BY [X.id, Y.tweet, Z.tweet]"
)


def issues_family(quick: bool) -> list[dict]:
    """Rows asked by the issues: correlation cost and memory, cross-event conditions under +,
    selection-strategy cost per event, consumption, measures."""
    rows = []
    # Equality correlation (issue 12): cost against the window, memory (also in the DuckDB table).
    tweet_events = 2_000 if quick else 20_000
    for n in [1_000] if quick else [1_000, 4_000, 20_000]:
        rows.append(
            _row(
                "issues",
                "tweets",
                f"correlation WITHIN {n:,} EVENTS",
                CORRELATION.format(n=n),
                "tweets",
                ["tweets", {"events": tweet_events}],
            )
        )
    # Cross-event condition under + (issue 12): target < 1 s at WITHIN 40 EVENTS.
    for window in [10] if quick else [10, 16, 20, 40]:
        rows.append(
            _row(
                "issues",
                "values",
                f"(A;B+;C) a.v > c.v + 990 WITHIN {window}",
                f"SELECT * FROM S WHERE (A AS a ; B+ ; C AS c) FILTER a.v > c.v + 990 WITHIN {window} EVENTS",
                "values",
                ["values", {"events": 3_000}],
            )
        )
    # Selection strategies (issue 18): nA A-events, then 200 B-events, one output per B (NEXT,
    # LAST, ANY) or nA outputs per B (MAX): the cost per B-event.
    sizes = [200] if quick else [1_000, 4_000, 16_000]
    for strategy in ("NEXT", "LAST", "ANY"):
        for n in sizes:
            rows.append(
                _row(
                    "issues",
                    "a-then-b",
                    f"{strategy} A AS a ; B AS b, nA={n:,}",
                    f"SELECT {strategy} * FROM S WHERE A AS a ; B AS b",
                    "values",
                    ["a_then_b", {"a_events": n}],
                    mode="tail",
                    split=n,
                )
            )
    for n in [20] if quick else [100, 200, 400, 1_000]:
        rows.append(
            _row(
                "issues",
                "a-then-b",
                f"MAX A AS a ; B AS b, {n} outputs per B",
                "SELECT MAX * FROM S WHERE A AS a ; B AS b",
                "values",
                ["a_then_b", {"a_events": n}],
                mode="tail",
                split=n,
            )
        )
    # Costs that must not grow with the live partial matches (issue 25; side by side with more
    # sizes: python -m benchmarks.flatness): the PART-BY paper's Example 4 (nested PART-BY,
    # every tweet stays live) and NEXT/LAST with a window that never cuts (every A stays live).
    for n in [1_000] if quick else [1_000, 4_000, 16_000]:
        rows.append(
            _row(
                "issues",
                "threads",
                f"Example 4 (nested PART-BY), {n:,} events before",
                EXAMPLE4,
                "threads",
                ["threads", {"events": n + 2_000}],
                mode="tail",
                split=n,
            )
        )
    for strategy in ("NEXT", "LAST"):
        for n in sizes:
            rows.append(
                _row(
                    "issues",
                    "a-then-b",
                    f"{strategy} A AS a ; B AS b WITHIN 10,000,000 EVENTS, nA={n:,}",
                    f"SELECT {strategy} * FROM S WHERE A AS a ; B AS b WITHIN 10000000 EVENTS",
                    "values",
                    ["a_then_b", {"a_events": n}],
                    mode="tail",
                    split=n,
                )
            )
    # Measures (issue 16): the stock benchmark with and without SELECT measures. The kernel does
    # not compute measures, so the query with measures runs on the Python path: it is compared
    # with the query without measures as it runs by default (kernel) and on the Python path.
    stock_events = 22_447 if quick else 224_473
    measures = {
        "q1": "T1.price AS sale, T3.price AS buy, AVG(T2.price) AS rimm, COUNT(*) AS trades",
        "other-q4": "msft.price AS sale, amat.price AS close, AVG(oracle.price) AS orcl, COUNT(*) AS trades",
    }
    for name, items in measures.items():
        text = (HERE / "queries" / "stocks" / f"{name}_none.txt").read_text()
        data = ["stocks", {"events": stock_events}]
        base = f"{name} without measures"
        rows.append(_row("issues", "stocks", base, text, "stocks", data))
        rows.append(_row("issues", "stocks", f"{base}, Python path", text, "stocks", data, engine="python"))
        # ``*`` keeps the whole complex event in the output, as without measures.
        measured = text.replace("SELECT * FROM", f"SELECT *, {items} FROM", 1)
        rows.append(
            _row("issues", "stocks", f"{name} with measures", measured, "stocks", data, measures_of=base)
        )
    return rows


def flink_family(quick: bool) -> list[dict]:
    """Flink SQL MATCH_RECOGNIZE on the patterns it shares with ceql (see flink_side.py)."""
    from benchmarks import flink_side

    events = 20_000 if quick else 1_000_000
    return [
        _row(
            "flink",
            workload,
            name,
            text,
            declaration,
            [generator, {"events": events}],
            competitors=[f"flink:{name}"],
        )
        for name, (workload, declaration, generator, text) in flink_side.WORKLOADS.items()
    ]


BUILDERS = {
    "core": core_family,
    "synthetic": synthetic_family,
    "stress": stress_family,
    "duckdb": duckdb_family,
    "issues": issues_family,
    "flink": flink_family,
}


def rows_of(families: list[str], quick: bool) -> list[dict]:
    out = []
    for family in families:
        out.extend(BUILDERS[family](quick))
    return out
