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

# =========================================================================== language extensions
#
# The papers' worked examples for the constructs of docs/semantics.md sections "Free labels",
# "PART-BY", "Quantifiers", "Aggregates, PREV and measures", "START, renaming, projection".
# Each case: (name, source, declaration, stream, query, expected, type_labels).
# ``expected`` is {trigger: {supports}} or, for cases that check labels and measures, a list of
# (trigger, positions, labels, measures) in output order. Sources are named in each comment;
# "derived" marks outputs the paper does not print, computed by hand from the semantics.

# --- thesis (Grez 2017), section 7, running stream S (TH_S above)
TH_PHI4_FREE = (
    "[H AS x ; (T AS y FILTER y.id = x.id)+ ; H AS z] FILTER (x.hum < 30 AND z.hum > 60 AND x.id = z.id)"
)
TH_PHI6_FREE = "(T AS x) ; ((T AS y FILTER x.tmp >= 40) OR (H AS y FILTER x.tmp < 40))"

# --- SO-CEL (Grez, Riveros, Ugarte, Vansummeren), Theorem 8's formula on the notes' T-003-9 stream
THM8_DECL = "CREATE STREAM S { EVENT R { v:int }, EVENT S { v:int }, EVENT T { v:int } }"
THM8_STREAM = [
    {"event_type": kind, "v": value}
    for kind, value in [("R", 5), ("S", 2), ("T", 3), ("S", 1), ("T", 4), ("S", 2), ("T", 2)]
]
THM8 = "R AS x ; ((S AS y ; T AS z) FILTER x.v = y.v + z.v)+"

# --- RMA paper (Alevizos et al.), Expression (3) on its Table 1 sensor stream
RMA_DECL = "CREATE STREAM S { EVENT T { id:int, value:int }, EVENT H { id:int, value:int } }"
RMA_TABLE1 = [
    {"event_type": kind, "id": ident, "value": value}
    for kind, ident, value in [("T", 1, 22), ("T", 1, 24), ("T", 2, 32), ("H", 1, 70), ("H", 1, 68), ("T", 2, 33)]
]

# --- login / logout (the correlated negation of issue 18), engineered
LOGIN_DECL = "CREATE STREAM S { EVENT LOGIN { user:int }, EVENT LOGOUT { user:int }, EVENT TIMEOUT { user:int } }"
LOGIN_STREAM = [
    {"event_type": kind, "user": user}
    for kind, user in [("LOGIN", 1), ("LOGIN", 2), ("LOGOUT", 2), ("TIMEOUT", 1), ("TIMEOUT", 2), ("LOGOUT", 1)]
]

_TW_PHI2_SUBSETS = set(_SUBSETS) | {(4, 5, 7)}

# SO-CEL Example 1 on S003: at 9, T = {0} with 19 increasing H runs, T = {3} with 7 (T-003-1).
_EX1_RUNS_0 = [(1,), (1, 6), (1, 7), (1, 6, 7), (2,), (2, 4), (2, 6), (2, 7), (2, 4, 6), (2, 4, 7), (2, 6, 7),
               (2, 4, 6, 7), (4,), (4, 6), (4, 7), (4, 6, 7), (6,), (7,), (6, 7)]
_EX1_RUNS_3 = [(4,), (4, 6), (4, 7), (4, 6, 7), (6,), (7,), (6, 7)]
S003_EX1 = {9: {(0, *run, 9) for run in _EX1_RUNS_0} | {(3, *run, 9) for run in _EX1_RUNS_3}}

EXTENSION_CASES = [
    # Thesis TC-15: phi4, the inner filter names x, bound outside the iteration.
    ("thesis phi4 (free label in an iteration)", "thesis 7.2 TC-15", TH_DECL, TH_S,
     f"SELECT * WHERE {TH_PHI4_FREE}", {7: {(3, 4, 7), (3, 6, 7), (3, 4, 6, 7)}}, False),
    # Thesis TC-16: phi6, a conditional filter on the outer x: the 8 complex events.
    ("thesis phi6 (conditional filter)", "thesis 7.2 TC-16", TH_DECL, TH_S,
     f"SELECT * WHERE {TH_PHI6_FREE}",
     {4: {(1, 4)}, 5: {(1, 5), (4, 5)}, 6: {(1, 6), (4, 6), (5, 6)}, 7: {(6, 7)}, 8: {(6, 8)}}, False),
    # SO-CEL Theorem 8: x is injected into every iteration ({0,1,2,3,4} needs it).
    ("SO-CEL Theorem 8", "SO-CEL Thm 8; notes T-003-9", THM8_DECL, THM8_STREAM,
     f"SELECT * WHERE {THM8}", {2: {(0, 1, 2)}, 4: {(0, 3, 4), (0, 1, 2, 3, 4)}}, False),
    # RMA Expression (3): every T of the iteration has the id of the H after it (derived).
    ("RMA Expression 3", "RMA paper Expr. (3), Table 1; derived", RMA_DECL, RMA_TABLE1,
     "SELECT * WHERE (T AS x FILTER x.id = y.id)+ ; (H AS y)",
     {3: {(0, 3), (1, 3), (0, 1, 3)}, 4: {(0, 4), (1, 4), (0, 1, 4)}}, False),
    # RMA Expression (1) (TC-B2, with the notes' correction: {2,4} excluded too).
    ("RMA Expression 1", "RMA paper Expr. (1), Table 1; notes TC-B2", RMA_DECL, RMA_TABLE1,
     "SELECT * WHERE (T AS x);(H AS y) FILTER (x.id = y.id)", {3: {(0, 3), (1, 3)}, 4: {(0, 4), (1, 4)}}, False),
    # PART-BY paper, Figure 1 stream (positions 0-based): Examples 1-4 (notes TC-A1..A4).
    ("PART-BY Example 1", "PART-BY paper Ex. 1; notes TC-A1", TW_DECL, TW_STREAM,
     f"SELECT * WHERE {TW_PHI1}", {1: {(0, 1)}, 2: {(0, 2)}, 3: {(0, 3)}, 5: {(0, 5), (4, 5)}}, False),
    ("PART-BY Example 2", "PART-BY paper Ex. 2; notes TC-A2", TW_DECL, TW_STREAM,
     f"SELECT * WHERE {TW_PHI2}", {7: _TW_PHI2_SUBSETS}, False),
    ("PART-BY Example 3 (over labels)", "PART-BY paper Ex. 3; notes TC-A3", TW_DECL, TW_STREAM,
     f"SELECT * WHERE {TW_PHI1} PARTITION BY [X.id, Y.tweet_id]", {1: {(0, 1)}, 3: {(0, 3)}, 5: {(4, 5)}}, False),
    ("PART-BY Example 4 (nested)", "PART-BY paper Ex. 4; notes TC-A4", TW_DECL, TW_STREAM,
     "SELECT * WHERE [ (T AS X ; ((R+) PARTITION BY [user_id]) AS Y ; R AS Z) "
     "FILTER X[post = '#vote'] AND Y[reply = '#ihate'] AND Z[reply = '#stop'] ] "
     "PARTITION BY [X.id, Y.tweet_id, Z.tweet_id]",
     {7: {(0, 1, 7), (0, 3, 7), (0, 1, 3, 7)}}, False),
    # SO-CEL Example 15 with the projection inside the formula (notes T-003-6 and T-003-7).
    ("SO-CEL Example 15 (PROJECT)", "SO-CEL Ex. 15; notes T-003-6", S003_DECL, S003,
     "SELECT * WHERE PROJECT[H](((H AS X) OR T):+ : (H AS Y) "
     "FILTER X[value < 40] AND T[value < 0] AND Y[value > 45])",
     [(9, (9,), {"H": (9,)}, {})], True),
    ("SO-CEL Example 15 (PROJECT), engineered stream", "notes T-003-7", S003_DECL, S003_ENGINEERED,
     "SELECT * WHERE PROJECT[H](((H AS X) OR T):+ : (H AS Y) "
     "FILTER X[value < 40] AND T[value < 0] AND Y[value > 45])",
     [(4, (1, 3, 4), {"H": (1, 3, 4)}, {}), (4, (3, 4), {"H": (3, 4)}, {})], True),
    # SO-CEL Example 1 ("freezing plantation"), HS.incr written with PREV: 26 CEs at 9 (T-003-1).
    ("SO-CEL Example 1 (PREV)", "SO-CEL Ex. 1; notes T-003-1", S003_DECL, S003,
     "SELECT * WHERE (T ; H+ AS HS ; H AS HH) FILTER T[value < 0] AND HS.value > PREV(HS.value) AND HH[value >= 60]",
     S003_EX1, False),
    # SO-CEL Example 2: the same with renaming; labels T, HS, HH and no H (T-003-3; the label
    # names are checked in test_reference.py).
    ("SO-CEL Example 2 (renaming)", "SO-CEL Ex. 2; notes T-003-3", S003_DECL, S003,
     "SELECT * WHERE (T ; (H+)[H -> HS] ; H[H -> HH]) "
     "FILTER T[value < 0] AND HS.value > PREV(HS.value) AND HH[value >= 60]",
     S003_EX1, True),
    # SO-CEL+ START (derived): CEs that begin at the first event of the stream.
    ("SO-CEL+ START", "SO-CEL section 6; derived", S003_DECL, S003,
     "SELECT * WHERE START(T ; H)", {1: {(0, 1)}, 2: {(0, 2)}, 4: {(0, 4)}, 6: {(0, 6)}, 7: {(0, 7)}, 9: {(0, 9)}},
     False),
    # Correlated negation: a login, then a timeout of the same user, no logout of that user
    # in between (engineered, derived).
    ("correlated UNLESS", "issue 18; derived", LOGIN_DECL, LOGIN_STREAM,
     "SELECT * WHERE (LOGIN AS l ; TIMEOUT AS t FILTER l.user = t.user) UNLESS (LOGOUT AS o FILTER o.user = l.user)",
     {3: {(0, 3)}}, False),
]
