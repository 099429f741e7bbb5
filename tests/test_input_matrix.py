"""Bad input, one policy everywhere: format x fault x policy x engine.

One file per format holds every fault of that format (docs/input.md has the same table); each
policy (fail, skip, dead-letter) runs on it with the local engine and with Spark, and both must
accept the same events (same positions, same values) and reject the same lines for the same
reasons. The command line runs in this process (``ceql.cli.main``), Spark on the shared session.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ceql.cli import main
from ceql.compile.output_schema import iso_text

DECLARATION = """CREATE STREAM S {
  EVENT A { id:int, name:string, price:double, ok:boolean, ts:primary_time },
  EVENT B { id:int, ts:primary_time }
}"""
# Every event is a match of its own; the query reads id (so events must have one).
QUERY = "SELECT * FROM S WHERE (A AS a FILTER a[id != 0]) OR (B AS b FILTER b[id != 0])"
MAX_LINE = 2000
NAN, INF = float("nan"), float("inf")
# An accepted event that no complex event reports (a null is a missing value: docs/semantics.md).
NO_MATCH = ("no match",)
LONG = "y" * 3000
ISO_NS = 1_704_067_200_000_000_000  # 2024-01-01T00:00:00Z

# (line, fault, expected reason) for CSV; None: the line is accepted (its values listed).
CSV_LINES = [
    ("\ufeffevent_type,id,name,price,ok,ts,extra", "byte-order mark, unknown column extra", None),
    ("A,1,007,1.5,true,1000,x", "text kept as text", ("A", 1, "007", 1.5, True, 1000)),
    ("A,2,NA,1e3,TRUE,2000,", "NA is a string; 1e3 a number", ("A", 2, "NA", 1000.0, True, 2000)),
    ("A,3,x,1.5,true", "too few fields", "5 fields where the header has 7"),
    ("A,4,x,1.5,true,3000,z,9", "too many fields", "8 fields where the header has 7"),
    (
        "A,99999999999999999999,x,1,true,4000,",
        "int beyond int64",
        "column id: '99999999999999999999' is beyond the int64 range",
    ),
    ("A,5,x,nan,true,5000,", "NaN is a double", ("A", 5, "x", NAN, True, 5000)),
    (
        "A,6,x,1e400,true,6000,",
        "beyond the double range",
        "column price: '1e400' is beyond the range of a double",
    ),
    ("A,7.5,x,1,true,7000,", "1.5 for an int", "column id: cannot read '7.5' as an integer"),
    ("A,8,x,1,maybe,8000,", "bad boolean", "column ok: cannot read 'maybe' as a boolean"),
    ("A,9,x,1,true,yesterday,", "bad time", "column ts: cannot read 'yesterday' as a time"),
    ("Z,10,x,1,true,9000,", "unknown event type", "unknown event type 'Z'"),
    (",11,x,1,true,9000,", "no event type", "event has no event_type"),
    ("A,,x,1,true,9000,", "empty int field: a missing value, id != 0 is false", NO_MATCH),
    ("A,12,\udcff,1,true,9000,", "bad UTF-8", "the line is not valid UTF-8"),
    ('A,13,"open,1,true,9000,', "quote not closed on its line", "3 fields where the header has 7"),
    (f"A,14,{LONG},1,true,9000,", "line too long", f"line is longer than the limit of {MAX_LINE} bytes"),
    ("", "empty line", "skipped"),
    ("B,15,,,,9500,", "empty fields of undeclared columns", ("B", 15, None, None, None, 9500)),
    ("B,16,,,,9400,", "time going back", "out of order: time 9400 after 9500"),
    (
        'A,17,"q,""x""",2.5,0,2024-01-01T00:00:00Z,',
        "quotes; ISO-8601 time",
        ("A", 17, 'q,"x"', 2.5, False, ISO_NS),
    ),
    (f"B,18,,,,{ISO_NS + 1},\r", "CRLF line end; epoch ns", ("B", 18, None, None, None, ISO_NS + 1)),
]

DEEP = "[" * 1_500  # deeper than Python's JSON parser goes, shorter than a line may be
JSONL_LINES = [
    ('\ufeff{"event_type":"A","id":1,"name":"007","price":1.5,"ok":true,"ts":1000,"extra":[1]}',
     "byte-order mark, unknown key", ("A", 1, "007", 1.5, True, 1000)),
    ('{"event_type":"A","id":"2","name":"NA","price":"1e3","ok":"TRUE","ts":"2000"}',
     "strings read like CSV fields", ("A", 2, "NA", 1000.0, True, 2000)),
    ('{"event_type":"A","id":1.5,"ts":3000}', "1.5 for an int", "column id: 1.5 is not an integer"),
    ('{"event_type":"A","id":99999999999999999999,"ts":4000}', "int beyond int64",
     "column id: '99999999999999999999' is beyond the int64 range"),
    ('{"event_type":"A","id":5,"price":-Infinity,"ts":5000}', "infinity is a double", ("A", 5, None, -INF, None, 5000)),
    ('{"event_type":"A","id":5,"price":"1e400","ts":5000}', "beyond the double range",
     "column price: '1e400' is beyond the range of a double"),
    ('{"event_type":5,"id":6,"ts":6000}', "event_type not a string", "event_type: cannot read integer 5 as a string"),
    ('{"event_type":"A","name":"x","ts":7000}', "a key the query reads is missing", "missing field id"),
    ('{"event_type":"A","id":null,"ts":7000}', "null: a missing value, id != 0 is false", NO_MATCH),
    (DEEP, "deeply nested JSON", "invalid JSON: it nests too deeply"),
    ("[1, 2]", "not an object", "a JSON object is expected, not an array"),
    ("{bad", "invalid JSON", "invalid JSON: Expecting property name"),
    ("\udcff", "bad UTF-8", "the line is not valid UTF-8"),
    ('{"event_type":"A","id":14,"name":"' + LONG + '","ts":9000}', "line too long",
     f"line is longer than the limit of {MAX_LINE} bytes"),
    ("   ", "blank line", "skipped"),
    ('{"event_type":"B","id":15,"ts":9500}', "an event", ("B", 15, None, None, None, 9500)),
    ('{"event_type":"B","id":16,"ts":9400}', "time going back", "out of order: time 9400 after 9500"),
    ('{"event_type":"A","id":17,"name":123,"ts":9600}', "a number for a string",
     "column name: cannot read integer 123 as a string"),
    ('{"event_type":"B","id":18,"ts":"2024-01-01T00:00:00Z"}', "ISO-8601 time", ("B", 18, None, None, None, ISO_NS)),
]  # fmt: skip


def _write_text(path: Path, lines) -> Path:
    data = "\n".join(text for text, _, _ in lines) + "\n"
    path.write_bytes(data.encode("utf-8", errors="surrogateescape"))
    return path


def _parquet_files(tmp_path: Path) -> tuple[list[Path], list[tuple]]:
    """Three Parquet files: typed faults, a declared nested column, a corrupt row group, and a
    file whose footer is gone. Returns the files and the expected (file, row, outcome)."""
    us = pa.timestamp("us", tz="Europe/Paris")
    main_file = tmp_path / "main.parquet"
    pq.write_table(
        pa.table(
            {
                "event_type": ["A", "A", "A", "Z", "B", "B", "A"],
                "id": pa.array([1, None, 3, 4, 5, 6, 7], pa.int64()),
                "name": ["x", "x", "x", "x", None, None, "x"],
                "price": [1.5, 1.0, float("nan"), 1.0, None, None, 2.0],
                "ok": [True, True, True, True, None, None, False],
                "ts": pa.array([1, 2, 3, 4, 9, 8, 10], pa.int64()).cast(us),
                "extra": [[1], [2], [3], [4], [5], [6], [7]],  # nested, undeclared: not even read
            }
        ),
        main_file,
    )
    nested = tmp_path / "nested.parquet"
    pq.write_table(
        pa.table(
            {
                "event_type": ["A", "B"],
                "id": pa.array([2**64 - 1, 21], pa.uint64()),
                "name": [{"first": "x"}, None],
                "ts": pa.array([20, 21], pa.int64()).cast(us),
            }
        ),
        nested,
    )
    corrupt = tmp_path / "corrupt.parquet"
    rows = 30
    pq.write_table(
        pa.table(
            {
                "event_type": ["B"] * rows,
                "id": list(range(100, 100 + rows)),
                "ts": pa.array(range(10**6, 10**6 + rows), pa.int64()).cast(us),
            }
        ),
        corrupt,
        row_group_size=10,
        compression="none",
    )
    data = bytearray(corrupt.read_bytes())
    page = pq.read_metadata(corrupt).row_group(1).column(1).data_page_offset
    data[page + 8 : page + 120] = b"\x55" * 112  # the second row group's id page
    corrupt.write_bytes(bytes(data))
    footless = tmp_path / "footless.parquet"
    footless.write_bytes(bytes(data[:-12]))
    us_ns = 1000

    def stamp(ns: int) -> str:  # Parquet gave timestamps: outputs show them in their zone
        return iso_text(ns, "Europe/Paris")

    expected = [
        ("main.parquet", 1, ("A", 1, "x", 1.5, True, stamp(1 * us_ns))),
        ("main.parquet", 2, NO_MATCH),  # a null id: read, and id != 0 is false on it
        ("main.parquet", 3, ("A", 3, "x", NAN, True, stamp(3 * us_ns))),
        ("main.parquet", 4, "unknown event type 'Z'"),
        ("main.parquet", 5, ("B", 5, None, None, None, stamp(9 * us_ns))),
        ("main.parquet", 6, f"out of order: time {stamp(8 * us_ns)} after {stamp(9 * us_ns)}"),
        ("main.parquet", 7, ("A", 7, "x", 2.0, False, stamp(10 * us_ns))),
        ("nested.parquet", 1, "column id: 18446744073709551615 is beyond the int64 range"),
        ("nested.parquet", 2, ("B", 21, None, None, None, stamp(21 * us_ns))),
    ]
    for row in range(1, rows + 1):
        outcome = (
            "cannot read the Parquet file here (row group 1)"
            if 11 <= row <= 20
            else ("B", 99 + row, None, None, None, stamp((10**6 + row - 1) * us_ns))
        )
        expected.append(("corrupt.parquet", row, outcome))
    expected.append(("footless.parquet", None, "cannot read the Parquet file: "))
    return [main_file, nested, corrupt, footless], expected


@dataclass
class Outcome:
    code: int
    stderr: str
    events: list[tuple]  # (position, event_type, id, name, price, ok, ts) of every match
    dead: list[tuple]  # (source name, line, reason, input) of every rejected row


def _run(engine: str, inputs: list[Path], policy: str, tmp_path: Path, capsys) -> Outcome:
    decl = tmp_path / "decl.core"
    decl.write_text(DECLARATION)
    out = tmp_path / f"out-{engine}-{policy}"
    dead = tmp_path / f"dead-{engine}-{policy}"
    args = ["run", "-d", str(decl), "-q", QUERY, "--with-events", "--on-error", policy]
    args += ["--max-line-bytes", str(MAX_LINE), "-o", str(out)]
    for path in inputs:
        args += ["-i", str(path)]
    if policy == "dead-letter":
        args += ["--dead-letter", str(dead)]
    if engine == "spark":
        args += ["--engine", "spark", "--master", "local[2]", "-f", "jsonl"]
    else:
        args += ["-f", "jsonl"]
    capsys.readouterr()
    code = main(args)
    stderr = capsys.readouterr().err
    return Outcome(code, stderr, _events(out), _dead(dead))


def _lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    files = sorted(path.glob("part-*")) if path.is_dir() else [path]
    return [line for f in files for line in f.read_text().splitlines() if line.strip()]


def _events(out: Path) -> list[tuple]:
    events = []
    for line in _lines(out):
        for event in json.loads(line)["events"]:
            values = tuple(_same(event.get(k)) for k in ("event_type", "id", "name", "price", "ok", "ts"))
            events.append((event["position"], *values))
    return sorted(events)


def _same(value):
    """NaN and infinities as JSON writers spell them (a NaN equals nothing, not even itself)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _dead(path: Path) -> list[tuple]:
    records = [json.loads(line) for line in _lines(path)]
    return sorted((Path(r["source"]).name, r.get("line") or 0, r["reason"], r.get("input")) for r in records)


def _expected_from_lines(name: str, lines) -> list[tuple]:
    return [
        (name, number, outcome)
        for number, (_, _, outcome) in enumerate(lines, start=1)
        if number > 1 or outcome
    ]


def _check(outcome: Outcome, expected: list[tuple], policy: str) -> None:
    """The outcome of one run against the table of expected outcomes."""
    rejected = [
        (name, line, reason)
        for name, line, reason in expected
        if isinstance(reason, str) and reason != "skipped"
    ]
    accepted = [(name, line, values) for name, line, values in expected if isinstance(values, tuple)]
    if policy == "fail":
        assert outcome.code == 2 and "Traceback" not in outcome.stderr
        name, line, reason = rejected[0]
        unit = "row" if name.endswith(".parquet") else "line"
        assert f"{name}, {unit} {line}: {reason}" in outcome.stderr, outcome.stderr
        return
    assert outcome.code == 0, outcome.stderr
    positions = [
        (position, *map(_same, values))
        for position, (_, _, values) in enumerate(accepted)
        if values is not NO_MATCH
    ]
    assert outcome.events == positions
    if policy == "dead-letter":
        got = [(name, line, reason) for name, line, reason, _ in outcome.dead]
        assert len(got) == len(rejected)
        for (name, line, reason), (g_name, g_line, g_reason) in zip(
            sorted(rejected, key=lambda r: (r[0], r[1] or 0)), got
        ):
            assert (g_name, g_line) == (name, line or 0) and g_reason.startswith(reason), (g_line, g_reason)


def _inputs(fmt: str, tmp_path: Path) -> tuple[list[Path], list[tuple]]:
    if fmt == "csv":
        return [_write_text(tmp_path / "events.csv", CSV_LINES)], _expected_from_lines(
            "events.csv", CSV_LINES
        )
    if fmt == "jsonl":
        return [_write_text(tmp_path / "events.jsonl", JSONL_LINES)], _expected_from_lines(
            "events.jsonl", JSONL_LINES
        )
    return _parquet_files(tmp_path)


FORMATS = ["csv", "jsonl", "parquet"]
POLICIES = ["fail", "skip", "dead-letter"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_local_engine(fmt: str, policy: str, tmp_path, capsys) -> None:
    inputs, expected = _inputs(fmt, tmp_path)
    outcome = _run("local", inputs, policy, tmp_path, capsys)
    _check(outcome, expected, policy)
    if policy == "skip":
        rejected = sum(1 for *_, r in expected if isinstance(r, str) and r != "skipped")
        read = rejected + sum(1 for *_, r in expected if isinstance(r, tuple))
        assert f"{read} events read, {rejected} rejected (" in outcome.stderr
    if fmt != "parquet":
        assert "warning: " in outcome.stderr and "extra is not declared" in outcome.stderr


@pytest.mark.parametrize("policy", ["fail", "dead-letter"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_spark_agrees_with_local_row_for_row(spark, fmt: str, policy: str, tmp_path, capsys) -> None:
    inputs, expected = _inputs(fmt, tmp_path)
    local = _run("local", inputs, policy, tmp_path, capsys)
    on_spark = _run("spark", inputs, policy, tmp_path, capsys)
    _check(on_spark, expected, policy)
    assert on_spark.events == local.events
    assert on_spark.dead == local.dead  # same lines, same reasons, same input text
    if policy == "fail":
        assert on_spark.stderr.strip().splitlines()[-1] == local.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_header_faults(engine: str, request, tmp_path, capsys) -> None:
    if engine == "spark":
        request.getfixturevalue("spark")
    duplicate = tmp_path / "duplicate.csv"
    duplicate.write_text("event_type,id,id,ts\nA,1,2,3\nB,2,3,4\n")
    outcome = _run(engine, [duplicate], "dead-letter", tmp_path, capsys)
    assert outcome.code == 0 and outcome.events == []
    assert [d[:3] for d in outcome.dead] == [
        ("duplicate.csv", 2, "the header names column id more than once"),
        ("duplicate.csv", 3, "the header names column id more than once"),
    ]
    misspelt = tmp_path / "misspelt.csv"
    misspelt.write_text("event_type,idd,ts\nA,1,2\n")
    for policy in ("skip", "fail"):
        outcome = _run(engine, [misspelt], policy, tmp_path, capsys)
        assert outcome.code == 2
        assert (
            "misspelt.csv: the input has no column id (declared by A, B), which the query reads"
            in outcome.stderr
        )
    no_type = tmp_path / "no_type.parquet"
    pq.write_table(pa.table({"kind": ["A"], "id": [1]}), no_type)
    outcome = _run(engine, [no_type], "skip", tmp_path, capsys)
    assert outcome.code == 2 and "no_type.parquet: the input has no event_type column" in outcome.stderr


# --------------------------------------------------------------------------- splits and order


def _read_local(paths: list[Path], options) -> tuple[list[tuple], list[tuple]]:
    """Accepted (file, line, event type, id) and rejected (file, line, reason) of a whole-file read."""
    import ceql
    from ceql.compile.catalog import Catalog
    from ceql.io.errors import RejectList
    from ceql.io.readers import EventReader

    catalog = Catalog.of_schema(ceql.declare(DECLARATION), {"id"})
    rejects = RejectList()
    accepted = []
    for chunk in EventReader(catalog, rejects, options=options).read([str(p) for p in paths]):
        for line, row in zip(chunk.lines.tolist(), chunk.table.to_pylist()):
            accepted.append((Path(chunk.source).name, line, row["event_type"], row["id"]))
    return accepted, [(Path(e.source).name, e.line, e.reason) for e in rejects.errors]


def _read_in_splits(paths: list[Path], options) -> tuple[list[tuple], list[tuple]]:
    """The same, reading each file as many byte ranges (as Spark tasks do), lines counted."""
    import ceql
    from ceql.compile.catalog import Catalog
    from ceql.io.formats import detect_format
    from ceql.io.formats.base import count_lines, number_splits
    from ceql.runtime.batches import Notices

    catalog = Catalog.of_schema(ceql.declare(DECLARATION), {"id"})
    accepted, rejected = [], []
    for index, path in enumerate(paths):
        fmt = detect_format(str(path))
        splits = fmt.plan(str(path), index, catalog, options, Notices(), False)
        assert len(splits) > 3
        splits = number_splits(splits, [count_lines(s.path, s.start, s.end, options) for s in splits])
        for split in splits:
            for parsed in fmt.read_split(split, catalog, options, Notices()):
                rows = parsed.table.to_pylist()
                accepted += [
                    (path.name, line, r["event_type"], r["id"])
                    for line, r in zip(parsed.lines.tolist(), rows)
                ]
                rejected += [(path.name, e.line, e.reason) for e in parsed.rejects]
    return accepted, rejected


def test_a_file_read_in_byte_ranges_gives_the_same_rows_and_lines(tmp_path) -> None:
    from ceql.io.formats import ReadOptions

    paths = [
        _write_text(tmp_path / "events.csv", CSV_LINES),
        _write_text(tmp_path / "events.jsonl", JSONL_LINES),
    ]
    whole = ReadOptions(max_line_bytes=MAX_LINE)
    for split_bytes, block_bytes in ((97, 1 << 20), (150, 64), (1000, 333)):
        options = ReadOptions(max_line_bytes=MAX_LINE, split_bytes=split_bytes, block_bytes=block_bytes)
        accepted, rejected = _read_local(paths, whole)
        assert _read_in_splits(paths, options) == (
            accepted,
            sorted(rejected, key=lambda r: (r[0] != "events.csv", r[1])),
        )


def test_spark_reads_byte_ranges_like_the_local_reader(spark, tmp_path) -> None:
    from pyspark.sql import functions as F

    import ceql
    from ceql.compile.catalog import Catalog
    from ceql.io.formats import ReadOptions
    from ceql.spark.cli import ACCEPTED, FILE, KIND, LINE, REASON, REJECTED, read_events

    paths = [
        _write_text(tmp_path / "events.csv", CSV_LINES),
        _write_text(tmp_path / "events.jsonl", JSONL_LINES),
    ]
    accepted, rejected = _read_local(paths, ReadOptions(max_line_bytes=MAX_LINE))
    schema = ceql.declare(DECLARATION)
    options = ReadOptions(max_line_bytes=MAX_LINE, split_bytes=128, block_bytes=100)
    parsed = read_events(
        spark, [str(p) for p in paths], schema, None, Catalog.of_schema(schema, {"id"}), options
    )
    names = [p.name for p in paths]
    rows = parsed.where(F.col(KIND) == ACCEPTED).orderBy(FILE, LINE).collect()
    assert [(names[r[FILE]], r[LINE], r["event_type"], r["id"]) for r in rows] == accepted
    bad = parsed.where(F.col(KIND) == REJECTED).collect()
    assert sorted((names[r[FILE]], r[LINE], r[REASON]) for r in bad) == sorted(rejected)


QUARANTINE = DECLARATION + "\nCREATE QUARANTINE { FIXED_TIME 2 seconds {S} }"
SECOND = 10**9


@pytest.mark.parametrize("mode", ["quarantine", "sort"])
def test_spark_orders_events_like_the_local_engine(spark, mode: str, tmp_path, capsys) -> None:
    times = [0, 3, 1, 2, 6, 9, 4, 10, 12, 11]  # seconds: 1 and 2 wait for 3; 4 is too late
    events = tmp_path / "events.csv"
    events.write_text(
        "event_type,id,name,price,ok,ts\n"
        + "".join(f"{'AB'[i % 2]},{i + 1},n,1.0,true,{t * SECOND}\n" for i, t in enumerate(times))
    )
    declaration = QUARANTINE if mode == "quarantine" else DECLARATION
    extra = ["--sort"] if mode == "sort" else []
    outcomes = {}
    for engine in ("local", "spark"):
        decl = tmp_path / "decl.core"
        decl.write_text(declaration)
        out, dead = tmp_path / f"out-{engine}", tmp_path / f"dead-{engine}"
        args = ["run", "-d", str(decl), "-q", QUERY, "-i", str(events), "--with-events", "-o", str(out)]
        args += ["-f", "jsonl", "--on-error", "dead-letter", "--dead-letter", str(dead), *extra]
        if engine == "spark":
            args += ["--engine", "spark", "--master", "local[2]"]
        capsys.readouterr()
        assert main(args) == 0, capsys.readouterr().err
        outcomes[engine] = (_events(out), _dead(dead))
    events_local, dead_local = outcomes["local"]
    assert [e[2] for e in events_local] == (
        [1, 3, 4, 2, 7, 5, 6, 8, 10, 9] if mode == "sort" else [1, 3, 4, 2, 5, 6, 8, 10, 9]
    )  # ids in stream order
    assert [d[1:3] for d in dead_local] == (
        []
        if mode == "sort"
        else [
            (
                8,
                "late: time 4000000000 is older than events already released (6000000000); the allowed lateness is 2000000000 ns",
            )
        ]
    )
    assert outcomes["spark"] == outcomes["local"]
