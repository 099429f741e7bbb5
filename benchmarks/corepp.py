"""CORE++ (pycer 0.1.6) as a competitor column: same events, same query, match sets compared.

pycer ships only a CPython 3.13 wheel, so it lives in its own environment
(``bash benchmarks/setup_core.sh`` creates ``benchmarks/.venv-core``) and runs in a subprocess
(``corepp_worker.py``). Where the semantics differ the query is translated or the row is marked
not comparable (the notes on CORE++ in ``benchmarks/README.md``):

- ``WITHIN n EVENTS``: ceql admits ``max - min < n``, CORE++ ``<= n``: CORE++ gets ``n - 1``.
  Attribute windows already agree (``last - first < n`` in both).
- Selection strategies are parsed and ignored by CORE++ (always ALL): only ALL is compared.
- ``LIMIT n`` keeps any n complex events per trigger in ceql and the newest starts in CORE++:
  the sets are compared only when no trigger reaches the limit.
- Cross-event conditions and ceql's extra operators are syntax errors in CORE++.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

HERE = Path(__file__).resolve().parent
PYTHON = HERE / ".venv-core" / "bin" / "python"
DATA = HERE / ".data"
_EVENTS_WINDOW = re.compile(r"WITHIN\s+(\d+)\s+EVENTS", re.IGNORECASE)
_STRATEGY = re.compile(r"SELECT\s+(ALL|ANY|NEXT|LAST|MAX|STRICT)\b", re.IGNORECASE)
_LIMIT = re.compile(r"\bLIMIT\s+(\d+)", re.IGNORECASE)


def available() -> bool:
    return PYTHON.exists()


def translate(text: str) -> tuple[str | None, str]:
    """CORE++'s query for ceql's ``text``, or None with the reason it is not comparable."""
    strategy = _STRATEGY.search(text)
    if strategy and strategy.group(1).upper() != "ALL":
        return None, f"{strategy.group(1).upper()} ignored by CORE++"
    return _EVENTS_WINDOW.sub(lambda m: f"WITHIN {int(m.group(1)) - 1} EVENTS", text), ""


def write_csv(table: pa.Table, name: str) -> Path:
    """The events as CORE's CSV (header, ``event_type`` first), cached under benchmarks/.data."""
    DATA.mkdir(exist_ok=True)
    path = DATA / f"{name}.csv"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        pacsv.write_csv(table, tmp, pacsv.WriteOptions(quoting_style="none"))
        tmp.rename(path)
    return path


def run(table: pa.Table, data_name: str, declaration: str, text: str, timeout: float) -> dict:
    """Time CORE++ on ``text``; returns seconds, complex_events and the positions of each CE."""
    query, reason = translate(text)
    if query is None:
        return {"skipped": reason}
    events = write_csv(table, data_name)
    with tempfile.TemporaryDirectory(prefix="ceql-corepp-") as tmp:
        (Path(tmp) / "declaration.core").write_text(declaration)
        (Path(tmp) / "query.ceql").write_text(query)
        out = Path(tmp) / "matches.txt"
        try:
            result = subprocess.run(
                [
                    str(PYTHON),
                    str(HERE / "corepp_worker.py"),
                    "declaration.core",
                    "query.ceql",
                    str(events),
                    str(out),
                ],
                capture_output=True,
                text=True,
                cwd=tmp,  # pycer writes logs/ into its working directory
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
        if result.returncode != 0:
            lines = (result.stderr or result.stdout).strip().splitlines()
            return {"error": lines[-1] if lines else f"exit {result.returncode}"}
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        with open(out) as handle:
            summary["matches"] = [tuple(sorted(int(p) for p in line.split())) for line in handle]
    return summary


def compare(
    ours: list[tuple[int, ...]], theirs: list[tuple[int, ...]], text: str, per_trigger_max: int
) -> str:
    """``equal``, or why the two lists of complex events (as position tuples) differ."""
    limit = _LIMIT.search(text)
    if limit and per_trigger_max >= int(limit.group(1)):
        return "n/a (LIMIT reached: any n vs newest n)"
    mine, other = Counter(ours), Counter(theirs)
    if mine == other:
        return "equal"
    if set(mine) == set(other):
        return "same sets, different multiplicities"
    return f"DIFFERENT: {sum((mine - other).values())} only in ceql, {sum((other - mine).values())} only in CORE++"
