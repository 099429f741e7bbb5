"""Worked examples of the papers and of the CORE engines, as data for the golden tests.

Each case: a declaration, a stream (list of event dicts), a query, and the expected output as
{trigger: set of position tuples} (supports) or as exact Match lists, rewritten in CEQL from:

- the thesis: A. Grez, "A Framework for Complex Event Processing", MSc thesis, PUC Chile, 2017,
  section 7 (running stream S, formulas phi1..phi6, UNLESS);
- [002] M. Bucchi, A. Grez, C. Riveros, M. Ugarte, "Foundations of Complex Event Processing",
  arXiv 1709.05369 (the Q-suite and consumption examples);
- [003] A. Grez, C. Riveros, M. Ugarte, S. Vansummeren, "A Second-Order Approach to Complex Event
  Recognition" (example 15, theorem 6);
- [004] A. Grez, C. Riveros, "Towards streaming evaluation of queries with correlation in complex
  event processing", ICDT 2020 (the Twitter stream, PARTITION BY);
- CORE++ probes: small streams whose outputs were observed by running CORE++ 0.1.6 (the `pycer`
  package, `CORE-cer/CORE`), written here as data.

Where ceql deliberately differs from a source, the case says so (docs/semantics.md lists the
differences from CORE).
"""

from __future__ import annotations

# --------------------------------------------------------------------------- thesis stream S

TH_DECL = "CREATE STREAM S { EVENT T { id:int, tmp:int }, EVENT H { id:int, hum:int } }"


def _th(rows):
    out = []
    for kind, ident, value in rows:
        event = {"event_type": kind, "id": ident}
        event["tmp" if kind == "T" else "hum"] = value
        out.append(event)
    return out


TH_S = _th(
    [
        ("H", 2, 35),
        ("T", 0, 45),
        ("H", 0, 20),
        ("H", 1, 25),
        ("T", 1, 40),
        ("T", 0, 42),
        ("T", 1, 25),
        ("H", 1, 70),
        ("H", 0, 18),
    ]
)
# The Foundations paper prints 25 at index 0 and leaves its type open: results must not change.
TH_S_VARIANTS = [
    TH_S,
    [{**TH_S[0], "hum": 25}] + TH_S[1:],
    [{"event_type": "T", "id": 2, "tmp": 25}] + TH_S[1:],
]

PHI1 = "(T AS x ; H AS y) FILTER x[tmp > 40 AND id = 0] AND y[hum <= 25 AND id = 0]"
PHI2 = "((T AS x ; H AS y) OR (H AS y ; T AS x)) FILTER x[tmp > 40 AND id = 0] AND y[hum <= 25 AND id = 0]"
PHI3 = (
    "(H AS x ; (T AS y FILTER y[id = 1])+ ; H AS z) FILTER x[hum < 30 AND id = 1] AND z[hum > 60 AND id = 1]"
)
PHI4 = "(H AS x ; (T AS y)+ ; H AS z) FILTER x.id = y.id AND x[hum < 30] AND z[hum > 60] AND x.id = z.id"

# (name, strategy, formula, {trigger: {supports}})
THESIS_CASES = [
    ("TC-1 phi1", None, PHI1, {2: {(1, 2)}, 8: {(1, 8), (5, 8)}}),
    (
        "TC-2 phi1 LP form",
        None,
        "(T AS x FILTER x[tmp > 40 AND id = 0]) ; (H AS y FILTER y[hum <= 25 AND id = 0])",
        {2: {(1, 2)}, 8: {(1, 8), (5, 8)}},
    ),
    ("TC-3 phi2", None, PHI2, {2: {(1, 2)}, 5: {(2, 5)}, 8: {(1, 8), (5, 8)}}),
    (
        "TC-4 phi2 with ALL",
        None,
        "(T AS x ALL H AS y) FILTER x[tmp > 40 AND id = 0] AND y[hum <= 25 AND id = 0]",
        {2: {(1, 2)}, 5: {(2, 5)}, 8: {(1, 8), (5, 8)}},
    ),
    ("TC-5 phi3", None, PHI3, {7: {(3, 4, 7), (3, 6, 7), (3, 4, 6, 7)}}),
    ("TC-6 STRICT phi1", "STRICT", PHI1, {2: {(1, 2)}}),
    ("TC-7 NEXT phi1", "NEXT", PHI1, {2: {(1, 2)}, 8: {(1, 8)}}),
    ("TC-8 MAX phi1", "MAX", PHI1, {2: {(1, 2)}, 8: {(1, 8), (5, 8)}}),
    ("TC-9 MAX phi3", "MAX", PHI3, {7: {(3, 4, 6, 7)}}),
    ("TC-10 NEXT phi3", "NEXT", PHI3, {7: {(3, 4, 6, 7)}}),
    ("TC-15 phi4 (cross-event)", None, PHI4, {7: {(3, 4, 7), (3, 6, 7), (3, 4, 6, 7)}}),
    (
        "TC-16 phi6 (LP form)",
        None,
        "((T AS x FILTER x[tmp >= 40]) ; T AS y) OR ((T AS x FILTER x[tmp < 40]) ; H AS y)",
        {4: {(1, 4)}, 5: {(1, 5), (4, 5)}, 6: {(1, 6), (4, 6), (5, 6)}, 7: {(6, 7)}, 8: {(6, 8)}},
    ),
    ("TC-20 STRICT phi2", "STRICT", PHI2, {2: {(1, 2)}}),
    ("TC-20 NEXT phi2", "NEXT", PHI2, {2: {(1, 2)}, 5: {(2, 5)}, 8: {(1, 8)}}),
    ("TC-20 MAX phi2", "MAX", PHI2, {2: {(1, 2)}, 5: {(2, 5)}, 8: {(1, 8), (5, 8)}}),
    ("TC-20 STRICT phi3", "STRICT", PHI3, {}),
    ("TC-20 STRICT phi4", "STRICT", PHI4, {}),
    ("TC-20 NEXT phi4", "NEXT", PHI4, {7: {(3, 4, 6, 7)}}),
    ("TC-21 iteration", None, "(T AS y FILTER y[id = 1])+", {4: {(4,)}, 6: {(6,), (4, 6)}}),
    ("TC-21 NEXT", "NEXT", "(T AS y FILTER y[id = 1])+", {4: {(4,)}, 6: {(4, 6)}}),
    ("TC-21 MAX", "MAX", "(T AS y FILTER y[id = 1])+", {4: {(4,)}, 6: {(4, 6)}}),
    ("TC-21 STRICT", "STRICT", "(T AS y FILTER y[id = 1])+", {4: {(4,)}, 6: {(6,)}}),
    (
        "TC-22 ALL with overlap",
        None,
        "(T AS x) ALL (T AS y FILTER y[tmp > 40])",
        {1: {(1,)}, 4: {(1, 4)}, 5: {(5,), (1, 5), (4, 5)}, 6: {(1, 6), (5, 6)}},
    ),
    (
        "TC-23 AND",
        None,
        "(T AS x ; H AS y) AND ((T AS u FILTER u[tmp > 40]) ; (H AS w FILTER w[id = 0]))",
        {2: {(1, 2)}, 8: {(1, 8), (5, 8)}},
    ),
    (
        "TC-23 AND (labels reused)",
        None,
        "(T AS x ; H AS y) AND ((T AS x FILTER x[tmp > 40]) ; (H AS y FILTER y[id = 0]))",
        {2: {(1, 2)}, 8: {(1, 8), (5, 8)}},
    ),
    (
        "TC-24 MAX chi",
        "MAX",
        "(H AS y) OR (T AS x ; H AS y)",
        {
            0: {(0,)},
            2: {(1, 2)},
            3: {(1, 3)},
            7: {(1, 7), (4, 7), (5, 7), (6, 7)},
            8: {(1, 8), (4, 8), (5, 8), (6, 8)},
        },
    ),
    ("T-002-1 LAST phi1", "LAST", PHI1, {2: {(1, 2)}, 8: {(5, 8)}}),
    ("T-002-2 LAST phi2", "LAST", PHI2, {2: {(1, 2)}, 5: {(2, 5)}, 8: {(5, 8)}}),
    ("T-002-3 LAST phi3", "LAST", PHI3, {7: {(3, 4, 6, 7)}}),
]

# UNLESS (thesis TC-17) on its own streams.
TH_UNLESS = "((T AS x FILTER x[tmp < 20]) ; (T AS y FILTER y[tmp > 40])) UNLESS (T AS z FILTER z[tmp >= 20 AND tmp <= 40])"
TH_S_U = _th([("T", 0, 15), ("T", 0, 30), ("T", 0, 45), ("T", 0, 10), ("H", 0, 50), ("T", 0, 41)])
UNLESS_CASES = [
    ("TC-17 UNLESS on S", None, TH_UNLESS, TH_S, {}),
    ("TC-17 UNLESS on S_U", None, TH_UNLESS, TH_S_U, {5: {(3, 5)}}),
    ("TC-17 NEXT UNLESS", "NEXT", TH_UNLESS, TH_S_U, {5: {(3, 5)}}),
    (
        "TC-17 endpoints inclusive",
        None,
        "(T AS x) UNLESS (T AS z FILTER z[tmp > 40])",
        _th([("T", 0, 45), ("T", 0, 10)]),
        {1: {(1,)}},
    ),
    # ceql (docs/semantics.md) anchors UNLESS at the span of the CE (not at the stream start as [003]).
    ("T-003-12 UNLESS is span-anchored", None, "R UNLESS T", None, None),
]

# --------------------------------------------------------------------------- Foundations Q-suite

Q_DECL = "CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int }, EVENT D { v:int } }"


def _types(letters: str):
    return [{"event_type": letter, "v": 0} for letter in letters]


Q1 = "A AS a ; B AS b ; C AS c"
Q3 = "(A AS a OR B AS b OR C AS c) ; D AS d"
Q4 = "(A AS a)+ ; B AS b"
Q5 = "(A AS a)+ ; (B AS b)+ ; C AS c"
Q6 = "((A AS a)+ ; B AS b)+ ; C AS c"
Q5_ALL = {
    (0, 1, 2, 4, 5),
    (0, 1, 2, 5),
    (0, 1, 3, 4, 5),
    (0, 1, 4, 5),
    (0, 2, 4, 5),
    (0, 2, 5),
    (0, 3, 4, 5),
    (0, 4, 5),
    (1, 2, 4, 5),
    (1, 2, 5),
    (1, 3, 4, 5),
    (1, 4, 5),
    (3, 4, 5),
}
Q6_ALL = {
    (0, 1, 2, 3, 4, 5),
    (0, 1, 2, 5),
    (0, 1, 3, 4, 5),
    (0, 1, 4, 5),
    (0, 2, 3, 4, 5),
    (0, 2, 5),
    (0, 3, 4, 5),
    (0, 4, 5),
    (1, 2, 3, 4, 5),
    (1, 2, 5),
    (1, 3, 4, 5),
    (1, 4, 5),
    (3, 4, 5),
}
Q1_ALL = {(0, 2, 5), (0, 4, 5), (1, 2, 5), (1, 4, 5), (3, 4, 5)}
Q4_2 = {(0, 1, 2), (0, 2), (1, 2)}
Q4_4 = {(0, 1, 3, 4), (0, 1, 4), (0, 3, 4), (0, 4), (1, 3, 4), (1, 4), (3, 4)}

# (name, strategy, formula, stream letters, {trigger: supports}); triggers not listed are empty
# except where the case says "only" (checked via `only`).
QSUITE_CASES = [
    ("Q1 ALL", None, Q1, "AABABC", {5: Q1_ALL}),
    ("Q1 NEXT", "NEXT", Q1, "AABABC", {5: {(0, 2, 5)}}),
    ("Q1 LAST", "LAST", Q1, "AABABC", {5: {(3, 4, 5)}}),
    ("Q1 MAX", "MAX", Q1, "AABABC", {5: Q1_ALL}),
    ("Q1 STRICT", "STRICT", Q1, "AABABC", {5: {(3, 4, 5)}}),
    ("Q4 ALL", None, Q4, "AABAB", {2: Q4_2, 4: Q4_4}),
    ("Q4 NEXT", "NEXT", Q4, "AABAB", {2: {(0, 1, 2)}, 4: {(0, 1, 3, 4)}}),
    ("Q4 LAST", "LAST", Q4, "AABAB", {2: {(0, 1, 2)}, 4: {(0, 1, 3, 4)}}),
    ("Q4 MAX", "MAX", Q4, "AABAB", {2: {(0, 1, 2)}, 4: {(0, 1, 3, 4)}}),
    ("Q4 STRICT", "STRICT", Q4, "AABAB", {2: {(0, 1, 2), (1, 2)}, 4: {(3, 4)}}),
    ("Q5 ALL", None, Q5, "AABABC", {5: Q5_ALL}),
    ("Q5 NEXT", "NEXT", Q5, "AABABC", {5: {(0, 1, 2, 4, 5)}}),
    ("Q5 LAST", "LAST", Q5, "AABABC", {5: {(0, 1, 3, 4, 5)}}),
    ("Q5 MAX", "MAX", Q5, "AABABC", {5: {(0, 1, 2, 4, 5), (0, 1, 3, 4, 5)}}),
    ("Q5 STRICT", "STRICT", Q5, "AABABC", {5: {(3, 4, 5)}}),
    ("Q6 ALL", None, Q6, "AABABC", {5: Q6_ALL}),
    ("Q6 NEXT", "NEXT", Q6, "AABABC", {5: {(0, 1, 2, 3, 4, 5)}}),
    ("Q6 LAST", "LAST", Q6, "AABABC", {5: {(0, 1, 2, 3, 4, 5)}}),
    ("Q6 MAX", "MAX", Q6, "AABABC", {5: {(0, 1, 2, 3, 4, 5)}}),
    ("Q6 STRICT", "STRICT", Q6, "AABABC", {5: {(0, 1, 2, 3, 4, 5), (1, 2, 3, 4, 5), (3, 4, 5)}}),
    ("Q3 ALL", None, Q3, "ABDCD", {2: {(0, 2), (1, 2)}, 4: {(0, 4), (1, 4), (3, 4)}}),
    ("Q3 NEXT", "NEXT", Q3, "ABDCD", {2: {(0, 2)}, 4: {(0, 4)}}),
    ("Q3 LAST", "LAST", Q3, "ABDCD", {2: {(1, 2)}, 4: {(3, 4)}}),
    ("Q3 MAX", "MAX", Q3, "ABDCD", {2: {(0, 2), (1, 2)}, 4: {(0, 4), (1, 4), (3, 4)}}),
    ("Q3 STRICT", "STRICT", Q3, "ABDCD", {2: {(1, 2)}, 4: {(3, 4)}}),
]

# --------------------------------------------------------------------------- [003] examples

S003_DECL = "CREATE STREAM S { EVENT T { value:int }, EVENT H { value:int } }"
S003 = [{"event_type": k, "value": v} for k, v in zip("THHTHTHHTH", [-2, 30, 20, -1, 27, 2, 45, 50, -2, 65])]
EX15 = "SELECT H WHERE ((H AS X) OR T):+ : (H AS Y) FILTER X[value < 40] AND T[value < 0] AND Y[value > 45]"
S003_ENGINEERED = [{"event_type": k, "value": v} for k, v in zip("THTHH", [-1, 30, -5, 35, 50])]
RT_DECL = "CREATE STREAM S { EVENT R { a:int }, EVENT T { a:int } }"
RT_STREAM = [{"event_type": k, "a": v} for k, v in zip("RRTT", [1, 2, 3, 1])]

# --------------------------------------------------------------------------- [004] Twitter stream

TW_DECL = """CREATE STREAM S {
  EVENT T { id:int, user_id:int, post:string },
  EVENT R { id:int, user_id:int, tweet_id:int, reply:string }
}"""
TW_STREAM = [
    {"event_type": "T", "id": 123, "user_id": 11, "post": "#vote"},
    {"event_type": "R", "id": 155, "user_id": 48, "tweet_id": 123, "reply": "#ihate"},
    {"event_type": "R", "id": 165, "user_id": 48, "tweet_id": 343, "reply": "#ihate"},
    {"event_type": "R", "id": 223, "user_id": 48, "tweet_id": 123, "reply": "#ihate"},
    {"event_type": "T", "id": 252, "user_id": 13, "post": "#vote"},
    {"event_type": "R", "id": 352, "user_id": 13, "tweet_id": 252, "reply": "#ihate"},
    {"event_type": "T", "id": 355, "user_id": 33, "post": "#ihate"},
    {"event_type": "R", "id": 411, "user_id": 79, "tweet_id": 123, "reply": "#stop"},
]
TW_PHI1 = "(T AS X ; R AS Y) FILTER X[post = '#vote'] AND Y[reply = '#ihate']"
TW_PHI2 = (
    "(T AS X ; R+ AS Y ; R AS Z) FILTER X[post = '#vote'] AND Y[reply = '#ihate'] AND Z[reply = '#stop']"
)
_SUBSETS = [
    tuple(sorted({0, 7} | {p for bit, p in enumerate((1, 2, 3, 5)) if mask >> bit & 1}))
    for mask in range(1, 16)
]
TW_CASES = [
    ("TC-A1", f"SELECT * WHERE {TW_PHI1}", {1: {(0, 1)}, 2: {(0, 2)}, 3: {(0, 3)}, 5: {(0, 5), (4, 5)}}),
    ("TC-A2", f"SELECT * WHERE {TW_PHI2}", {7: set(_SUBSETS) | {(4, 5, 7)}}),
    (
        "TC-A3 per-type partition key",
        f"SELECT * WHERE {TW_PHI1} PARTITION BY [tweet_id], [id]",
        {1: {(0, 1)}, 3: {(0, 3)}, 5: {(4, 5)}},
    ),
]

# --------------------------------------------------------------------------- CORE++ probes

CORE_DECL = (
    "CREATE STREAM S { EVENT BUY { id:int, name:string, price:double, t:int }, "
    "EVENT SELL { id:int, name:string, price:double, t:int } }"
)


def _core(rows):
    return [{"event_type": k, "id": i, "name": n, "price": p, "t": i} for k, i, n, p in rows]


CORE_S1 = _core(
    [
        ("SELL", 1, "A", 1.0),
        ("BUY", 2, "B", 1.0),
        ("BUY", 3, "B", 1.0),
        ("SELL", 4, "C", 1.0),
        ("BUY", 5, "B", 1.0),
    ]
)
CORE_S2 = _core(
    [
        ("SELL", 1, "A", 5.0),
        ("BUY", 2, "A", 7.0),
        ("SELL", 3, "B", 9.0),
        ("BUY", 4, "B", 1.0),
        ("BUY", 5, "A", 8.0),
    ]
)
CORE_CASES = [
    (
        "seq",
        CORE_S1,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y",
        {1: {(0, 1)}, 2: {(0, 2)}, 4: {(3, 4), (0, 4)}},
    ),
    (
        "consume any",
        CORE_S1,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y CONSUME BY ANY",
        {1: {(0, 1)}, 4: {(3, 4)}},
    ),
    ("contiguous", CORE_S1, "SELECT * FROM S WHERE SELL AS x : BUY AS y", {1: {(0, 1)}, 4: {(3, 4)}}),
    (
        "kleene",
        CORE_S1,
        "SELECT * FROM S WHERE SELL AS x; BUY+ AS y",
        {1: {(0, 1)}, 2: {(0, 1, 2), (0, 2)}, 4: {(3, 4), (0, 1, 2, 4), (0, 2, 4), (0, 1, 4), (0, 4)}},
    ),
    (
        "attribute window",
        CORE_S1,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y WITHIN 2 [t]",
        {1: {(0, 1)}, 4: {(3, 4)}},
    ),
    (
        "events window (max - min < n)",
        CORE_S1,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y WITHIN 2 EVENTS",
        {1: {(0, 1)}, 4: {(3, 4)}},
    ),
    (
        "events window 3",
        CORE_S1,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y WITHIN 3 EVENTS",
        {1: {(0, 1)}, 2: {(0, 2)}, 4: {(3, 4)}},
    ),
    ("not", CORE_S1, "SELECT * FROM S WHERE SELL AS x; NOT(SELL); BUY AS y", {2: {(0, 2)}, 4: {(0, 4)}}),
    (
        "composite label filter",
        CORE_S2,
        "SELECT * FROM S WHERE (SELL; BUY) AS z FILTER z[price > 4]",
        {1: {(0, 1)}, 4: {(2, 4), (0, 4)}},
    ),
    (
        "partition",
        CORE_S2,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y PARTITION BY [name]",
        {1: {(0, 1)}, 3: {(2, 3)}, 4: {(0, 4)}},
    ),
    (
        "partition consume",
        CORE_S2,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y PARTITION BY [name] CONSUME BY PARTITION",
        {1: {(0, 1)}, 3: {(2, 3)}},
    ),
    (
        "like",
        CORE_S2,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y FILTER x[name LIKE 'A.*']",
        {1: {(0, 1)}, 3: {(0, 3)}, 4: {(0, 4)}},
    ),
    (
        "in range",
        CORE_S2,
        "SELECT * FROM S WHERE SELL AS x; BUY AS y FILTER x[price IN RANGE(4, 6)]",
        {1: {(0, 1)}, 3: {(0, 3)}, 4: {(0, 4)}},
    ),
    (
        "contiguous iteration",
        CORE_S2,
        "SELECT * FROM S WHERE BUY:+ AS b",
        {1: {(1,)}, 3: {(3,)}, 4: {(4,), (3, 4)}},
    ),
    ("select none", CORE_S1, "SELECT NONE FROM S WHERE SELL AS x; BUY AS y", {1: {()}, 2: {()}, 4: {()}}),
    (
        "projection",
        CORE_S1,
        "SELECT x FROM S WHERE SELL AS x; BUY AS y",
        {1: {(0,)}, 2: {(0,)}, 4: {(3,), (0,)}},
    ),
]
