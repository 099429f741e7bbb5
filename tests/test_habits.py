"""A data engineer's habits (issue 36): both spellings of a duration, suggestions for
misspelt words, ISO times in messages, pandas output, the ``ceql`` logger, progress, types
and the explain picture."""

from __future__ import annotations

import pytest

import ceql
from ceql.errors import EventError, QueryError, QuerySyntaxError
from ceql.lang import parse_query
from ceql.lang.printer import print_query

DECL = """CREATE STREAM S {
  EVENT view { id:int, price:double, ts:primary_time },
  EVENT buy  { id:int, price:double, ts:primary_time }
}"""


@pytest.fixture(scope="module")
def schema():
    return ceql.declare(DECL)


def _events():
    return [
        {"event_type": "view", "id": 1, "price": 2.0, "ts": "2026-01-01T00:00:00Z"},
        {"event_type": "view", "id": 2, "price": 5.0, "ts": "2026-01-01T00:02:00Z"},
        {"event_type": "buy", "id": 1, "price": 2.0, "ts": "2026-01-01T00:05:00Z"},
        {"event_type": "buy", "id": 2, "price": 5.0, "ts": "2026-01-01T00:20:00Z"},
    ]


# ---------------------------------------------------------------------- 1. durations


@pytest.mark.parametrize(
    "within",
    ["10 MINUTES", "INTERVAL '10' MINUTES", "INTERVAL '10' MINUTE", "INTERVAL '600' SECOND"],
)
def test_within_takes_both_spellings(schema, within):
    text = f"SELECT * FROM S WHERE view AS v ; buy AS b PARTITION BY [id] WITHIN {within}"
    query = ceql.compile(text, schema)
    assert [m.positions for m in query.run(_events())] == [(0, 2)]
    assert parse_query(text).within.value == 600 * 10**9


@pytest.mark.parametrize(
    "duration", ["10 MINUTES", "10 MINUTE", "INTERVAL '10' MINUTE", "600 SECONDS", "INTERVAL '600' SECONDS"]
)
def test_durations_in_expressions(schema, duration):
    text = f"SELECT * FROM S WHERE view AS v ; buy AS b FILTER b.ts < v.ts + {duration} AND v.id = b.id"
    query = ceql.compile(text, schema)
    assert [m.positions for m in query.run(_events())] == [(0, 2)]


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S WHERE view AS v ; buy AS b WITHIN INTERVAL '90' SECONDS",
        "SELECT * FROM S WHERE view AS v ; buy AS b FILTER b.ts - v.ts <= 2 DAYS",
        "SELECT * FROM S WHERE view AS v ; buy AS b FILTER b.ts > v.ts + 1.5 MINUTES",
    ],
)
def test_durations_round_trip(text):
    query = parse_query(text)
    assert parse_query(print_query(query)) == query


def test_a_timestamp_is_no_window(schema):
    with pytest.raises(QueryError, match="TIMESTAMP|number after WITHIN"):
        ceql.compile("SELECT * FROM S WHERE view WITHIN TIMESTAMP '2026-01-01'", schema)


def test_a_duration_must_be_whole_nanoseconds(schema):
    with pytest.raises(QuerySyntaxError, match="whole number of nanoseconds"):
        parse_query("SELECT * FROM S WHERE view AS v ; buy AS b FILTER b.ts < v.ts + 0.5 NANOSECONDS")


# ---------------------------------------------------------------------- 2. errors


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("SELECT * FROM S WHERE view AS v ; buy AS b WTIHIN 10 MINUTES", "did you mean WITHIN?"),
        ("SELECT * FROM S WHERE view AS v ; buy AS b PARTITON BY [id]", "did you mean PARTITION?"),
        ("SELECT * FORM S WHERE view", "did you mean FROM?"),
        ("SELECT * FROM S WHERE view AS v ; buy AS b CONSUMED BY ANY", "did you mean CONSUME?"),
        ("SELECT * FROM S WHERE veiw AS v", "did you mean view?"),
        ("SELECT * FROM S WHERE view AS v FILTER v.prise > 3", "did you mean price?"),
        ("SELECT * FROM S WHERE view AS v FILTER v[prise > 3]", "did you mean price?"),
        ("SELECT * FROM S WHERE view AS clicks ; buy FILTER clikcs.price > 3", "did you mean clicks?"),
        ("SELECT * FROM S WHERE view AS v ; buy PARTITION BY [idd]", "did you mean id?"),
    ],
)
def test_did_you_mean(schema, text, hint):
    with pytest.raises(QueryError) as caught:
        ceql.compile(text, schema)
    assert hint in str(caught.value)


def test_no_suggestion_for_unrelated_words(schema):
    with pytest.raises(QueryError) as caught:
        ceql.compile("SELECT * FROM S WHERE view AS v ; buy AS b BANANA", schema)
    assert "did you mean" not in str(caught.value)


def test_sql_where_condition_points_to_filter(schema):
    with pytest.raises(QuerySyntaxError) as caught:
        ceql.compile("SELECT * FROM S WHERE view AS v AND v.price > 3", schema)
    assert "a condition goes after FILTER: ... FILTER v.price > 3" in str(caught.value)
    assert caught.value.column == 38


def test_double_quoted_string_hint(schema):
    with pytest.raises(QuerySyntaxError) as caught:
        ceql.compile('SELECT * FROM S WHERE view AS v FILTER v.price = "x"', schema)
    assert "strings take single quotes: 'text'; back-quote a name: `name`" in str(caught.value)


@pytest.mark.parametrize("engine", ["auto", "python", "compiled"])
def test_out_of_order_names_iso_times(schema, engine):
    query = ceql.compile("SELECT * FROM S WHERE view AS v ; buy AS b WITHIN 10 MINUTES", schema)
    events = [_events()[1], _events()[0]]
    with pytest.raises(EventError, match="time 2026-01-01T00:00:00Z after 2026-01-01T00:02:00Z"):
        list(query.run(events, engine=engine))
    with pytest.raises(EventError, match="time 2026-01-01T00:00:00Z after 2026-01-01T00:02:00Z"):
        evaluator = query.evaluator(engine=engine)
        for event in events:
            evaluator.push(event)
    with pytest.raises(EventError, match="time 2026-01-01T00:00:00Z after 2026-01-01T00:02:00Z"):
        query.evaluator(engine=engine).push_batch(events)


def test_out_of_order_keeps_integers_for_integer_input(schema):
    query = ceql.compile("SELECT * FROM S WHERE view AS v ; buy AS b WITHIN 10 MINUTES", schema)
    events = [{"event_type": "view", "id": 1, "price": 1.0, "ts": 20}, {"event_type": "buy", "id": 1, "price": 1.0, "ts": 10}]
    with pytest.raises(EventError, match="time 10 after 20"):
        list(query.run(events))


# ---------------------------------------------------------------------- 3. pandas and polars

FUNNEL = (
    "SELECT v, b, b.ts - v.ts AS wait, b.price AS paid, v.ts AS seen FROM S "
    "WHERE view AS v ; buy AS b PARTITION BY [id] WITHIN 10 MINUTES"
)


def test_pandas_output_is_flat(schema):
    import pandas as pd

    frame = ceql.compile(FUNNEL, schema).run(_events(), output="pandas")
    assert list(frame.columns) == ["query", "trigger", "positions", "b", "v", "id", "wait", "paid", "seen"]
    assert frame["positions"].tolist() == [[0, 2]]
    assert frame["v"].tolist() == [[0]] and frame["b"].tolist() == [[2]]
    assert frame["id"].tolist() == [1]
    assert frame["wait"].dtype == "timedelta64[ns]"
    assert frame["wait"].iloc[0] == pd.Timedelta(minutes=5)
    assert str(frame["seen"].dtype) == "datetime64[ns, UTC]"
    assert frame["seen"].iloc[0] == pd.Timestamp("2026-01-01T00:00:00Z")
    # A groupby on the key needs no unpacking.
    assert frame.groupby("id")["wait"].max().iloc[0] == pd.Timedelta(minutes=5)


def test_pandas_output_matches_the_arrow_contract(schema):
    query = ceql.compile(FUNNEL, schema)
    table = query.run(_events(), output="arrow")
    frame = query.run(_events(), output="pandas")
    assert frame["trigger"].tolist() == table.column("trigger").to_pylist()
    assert frame["paid"].tolist() == table.column("paid").to_pylist()
    assert frame["id"].tolist() == [p["id"] for p in table.column("partition").to_pylist()]


def test_integer_times_stay_integers_but_differences_are_durations(schema):
    import pandas as pd

    events = [dict(e, ts=i * 60 * 10**9) for i, e in enumerate(_events())]
    frame = ceql.compile(FUNNEL, schema).run(events, output="pandas")
    assert frame["seen"].dtype == "int64"
    assert frame["wait"].iloc[0] == pd.Timedelta(minutes=2)


def test_pandas_names_clashes_with_their_struct(schema):
    query = ceql.compile("SELECT v, v.id AS v, b.id AS id FROM S WHERE view AS v ; buy AS b PARTITION BY [id]", schema)
    frame = query.run(_events(), output="pandas")
    assert {"labels.v", "partition.id", "v", "id"} <= set(frame.columns)


def test_empty_pandas_output_keeps_the_columns(schema):
    frame = ceql.compile(FUNNEL, schema).run([], output="pandas")
    assert len(frame) == 0 and "wait" in frame.columns


def test_polars_output():
    polars = pytest.importorskip("polars")
    frame = ceql.compile(FUNNEL, ceql.declare(DECL)).run(_events(), output="polars")
    assert isinstance(frame, polars.DataFrame)
    assert frame["wait"].dtype == polars.Duration("ns")


def test_polars_missing_is_a_clear_error(schema, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "polars", None)  # as if not installed
    with pytest.raises(ceql.CeqlError, match="needs polars"):
        ceql.compile(FUNNEL, schema).run(_events(), output="polars")


def test_unknown_output_names_the_choices(schema):
    with pytest.raises(ValueError, match="'matches', 'arrow', 'pandas', 'polars'"):
        ceql.compile(FUNNEL, schema).run(_events(), output="csv")  # type: ignore[call-overload]


# ---------------------------------------------------------------------- 4. types


def test_run_is_typed_by_output():
    import typing

    import ceql.api

    names = vars(ceql.api) | _typing_names()
    overloads = typing.get_overloads(ceql.api.Query.run)
    hints = [typing.get_type_hints(f, globalns=names) for f in overloads]
    assert [h["output"] for h in hints] == [
        typing.Literal["matches"], typing.Literal["arrow"], typing.Literal["pandas"], typing.Literal["polars"]
    ]
    assert [h["return"].__name__ for h in hints][:3] == ["Matches", "Table", "DataFrame"]
    assert "Iterable" in str(hints[0]["events"]) and "DataFrame" in str(hints[0]["events"])


def _typing_names() -> dict:
    import pandas
    import pyarrow

    names = {"pandas": pandas, "pyarrow": pyarrow}
    try:
        import polars

        names["polars"] = polars
    except ImportError:
        names["polars"] = type("polars", (), {"DataFrame": object})
    return names


def test_package_ships_py_typed():
    from importlib import resources

    assert resources.files("ceql").joinpath("py.typed").is_file()


# ---------------------------------------------------------------------- 5. the ceql logger


def test_logger_has_a_null_handler():
    import logging

    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("ceql").handlers)


def test_logger_says_why_workers_were_not_used(schema, caplog):
    import logging

    query = ceql.compile(FUNNEL, schema)
    with caplog.at_level(logging.INFO, logger="ceql"):
        list(query.run(_events(), workers=4))
    assert "workers=4 not used: the input is not an Arrow table or a pandas DataFrame" in caplog.text


def test_logger_names_the_engine_and_input_warnings(schema, caplog):
    import logging

    query = ceql.compile("SELECT * FROM S WHERE view AS v ; buy AS b", schema)
    events = [dict(e, extra=1) for e in _events()]
    with caplog.at_level(logging.INFO, logger="ceql"), pytest.warns(ceql.errors.InputWarning):
        list(query.run(events, engine="compiled"))
    assert "engine: the compiled kernel" in caplog.text
    assert "input: column extra is not declared for any event type" in caplog.text


def test_logger_is_silent_by_default(schema, capsys):
    list(ceql.compile(FUNNEL, schema).run(_events(), workers=4))
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


# ---------------------------------------------------------------------- 6. progress


def test_api_progress_bar_has_a_total(schema, monkeypatch):
    import io

    from ceql.io import progress

    err = io.StringIO()
    err.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(progress.sys, "stderr", err)
    query = ceql.compile(FUNNEL, schema)
    found = list(query.run(_events(), progress=True))
    assert len(found) == 1
    assert "4/4" in err.getvalue() and "100%" in err.getvalue()
    frame = query.run(_events(), output="pandas", progress=True)
    assert len(frame) == 1


def test_heartbeat_line_when_not_a_terminal():
    import io

    from ceql.io.progress import Progress

    out = io.StringIO()
    done = [0]
    bar = Progress(lambda: done[0], 1000, interactive=False, stream=out, heartbeat_s=0.0)
    done[0] = 250
    bar.tick(matches=7)
    bar.close()
    line = out.getvalue().strip()
    assert line.startswith("ceql run: 250 events, 25% of the input, 7 matches,")
    assert "s left" in line


def test_no_heartbeat_on_short_runs():
    import io

    from ceql.io.progress import Progress

    out = io.StringIO()
    bar = Progress(lambda: 5, 10, interactive=False, stream=out)
    bar.tick()
    bar.close()
    assert out.getvalue() == ""


def _cli_files(tmp_path, rows: int):
    decl = tmp_path / "decl.ceql"
    decl.write_text(DECL)
    lines = ["event_type,id,price,ts"]
    for i in range(rows):
        kind = "view" if i % 2 == 0 else "buy"
        lines.append(f"{kind},{i // 2},1.5,2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z")
    events = tmp_path / "events.csv"
    events.write_text("\n".join(lines) + "\n")
    return decl, events


def test_cli_bar_has_total_percentage_and_eta(tmp_path, monkeypatch, capsys):
    import io

    from ceql import cli
    from ceql.io import progress

    decl, events = _cli_files(tmp_path, 2000)
    err = io.StringIO()
    err.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(progress, "BAR_MIN_BYTES", 0)
    monkeypatch.setattr(progress.sys, "stderr", err)
    query = "SELECT * FROM S WHERE view AS v ; buy AS b PARTITION BY [id] WITHIN 1 MINUTES"
    status = cli.main(["run", "-d", str(decl), "-q", query, "-i", str(events), "-o", str(tmp_path / "out.jsonl")])
    assert status == 0
    shown = err.getvalue().split("\r")[-1]
    size = events.stat().st_size
    assert shown.startswith("ceql run: 100%")
    assert f"/{size / 1024:.1f}k" in shown  # the total: the file's size
    assert "<00:00" in shown  # the ETA
    assert "matches=1000" in shown


def test_cli_heartbeat_when_redirected(tmp_path, monkeypatch):
    import io

    from ceql import cli
    from ceql.io import progress

    decl, events = _cli_files(tmp_path, 200)
    err = io.StringIO()  # not a terminal
    monkeypatch.setattr(progress.sys, "stderr", err)
    query = "SELECT * FROM S WHERE view AS v ; buy AS b PARTITION BY [id]"
    original = progress.Progress.__init__

    def immediate(self, *args, **kwargs):  # every tick is "30 s later"
        kwargs["heartbeat_s"] = 0.0
        original(self, *args, **kwargs)

    monkeypatch.setattr(progress.Progress, "__init__", immediate)
    assert cli.main(["run", "-d", str(decl), "-q", query, "-i", str(events), "-o", str(tmp_path / "o.jsonl")]) == 0
    assert "ceql run: 200 events, 100% of the input, 100 matches," in err.getvalue()
    assert "\r" not in err.getvalue()


# ---------------------------------------------------------------------- 7. the explain picture


def test_dot_shows_window_key_and_conditions(schema):
    query = ceql.compile(
        "SELECT * FROM S WHERE view AS v ; view+ AS w ; buy AS b FILTER b.price > v.price "
        "PARTITION BY [id] WITHIN 10 MINUTES",
        schema,
    )
    dot = query.explain(dot=True)
    assert "window: WITHIN 10 MINUTES: the last event's time minus the first's is under 10 minutes" in dot
    assert "partition key: [id]: this automaton runs once per key value" in dot
    assert "c0: b.price > v.price (decided " in dot
    assert "c0.v" in dot and "cN.x: condition cN reads this event as x" in dot
    assert "#0" not in dot


def test_dot_self_loops_share_one_label(schema):
    query = ceql.compile("SELECT * FROM S WHERE view AS v ; view+ AS w ; buy AS b", schema)
    dot = query.explain(dot=True)
    edges = [line.split("[")[0].strip() for line in dot.splitlines() if "->" in line and "start" not in line]
    assert len(edges) == len(set(edges))  # one edge (one label) per pair of states
    assert 'label="any event (skipped)\\ntype=view / {view, w}"' in dot


def test_dot_text_is_valid_graphviz_when_dot_is_installed(schema, tmp_path):
    import shutil
    import subprocess

    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    texts = ceql.declare("CREATE STREAM T { EVENT A { s:string }, EVENT B { s:string } }")
    query = ceql.compile(
        "SELECT * FROM T WHERE A AS a ; A+ AS r ; B AS b FILTER a[s = 'it''s \\\\ \"x\"'] AND b.s = a.s", texts
    )
    done = subprocess.run(["dot", "-Tsvg"], input=query.explain(dot=True), text=True, capture_output=True)
    assert done.returncode == 0, done.stderr


def test_text_explain_shows_the_window_as_written(schema):
    text = ceql.compile("SELECT * FROM S WHERE view ; buy WITHIN INTERVAL '90' SECONDS", schema).explain()
    assert "  window: WITHIN 1 MINUTE 30 SECONDS; expired partial matches are pruned" in text
