"""Markdown tables of benchmark results, one per family."""

from __future__ import annotations

from typing import Any

COMPETITOR_NAMES = {"core": "CORE++", "duckdb": "DuckDB", "flink": "Flink"}


def fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _competitor_kinds(rows: list[dict]) -> list[str]:
    kinds: list[str] = []
    for row in rows:
        for name in row.get("competitors", {}):
            kind = name.partition(":")[0]
            if kind not in kinds:
                kinds.append(kind)
    return kinds


def _competitor_cells(row: dict, kind: str) -> list[str]:
    entry = next((v for k, v in row.get("competitors", {}).items() if k.partition(":")[0] == kind), None)
    if entry is None:
        return ["", "", ""]
    if "skipped" in entry:
        return [f"n/a: {entry['skipped']}", "", ""]
    if "error" in entry:
        return [f"error: {entry['error']}", "", ""]
    theirs = entry["seconds"]
    label = seconds(theirs)
    extra = [f"{entry['threads']} threads"] if kind == "duckdb" else []
    if kind == "flink":
        extra.append(f"{entry['startup_seconds']:.1f} start-up")
    if "cpu_seconds" in entry:
        extra.append(f"{seconds(entry['cpu_seconds'])} CPU s")
    if extra:
        label += f" ({', '.join(extra)})"
    # On a shared machine wall time mostly measures the other processes: the speed-up is the
    # ratio of CPU times (work done, all threads) when both sides have one, wall time otherwise.
    ours = row.get("seconds")
    if row.get("cpu_seconds") and "cpu_seconds" in entry:
        ratio = f"{entry['cpu_seconds'] / row['cpu_seconds']:,.1f}x"
        if ours:
            ratio += f" (wall {theirs / ours:,.1f}x)"
    else:
        ratio = f"{theirs / ours:,.1f}x (wall)" if ours else "-"
    same = entry.get("same", "")
    if same == "equal":
        same = f"equal ({fmt(entry.get('complex_events'))})"
    return [label, ratio, same]


def _notes(row: dict, by_query: dict[str, dict]) -> str:
    notes = [row["note"]] if row.get("note") else []
    if "update_seconds" in row:
        notes.append(
            f"update {row['update_seconds'] * 1000:.1f} ms, {fmt(row['ces_per_s'])} CEs/s enumerated "
            f"({fmt(row.get('ces_per_cpu_s'))} per CPU s), "
            f"{row['memory_before_last_mb']:.1f} MB before the last event"
        )
    if "tail_events" in row and row.get("seconds"):
        per = row.get("cpu_seconds", row["seconds"]) / row["tail_events"] * 1000
        notes.append(
            f"{per:.3f} CPU ms per B-event ({fmt(row['complex_events'] // row['tail_events'])} per B)"
        )
    if row.get("compile_seconds", 0) >= 0.1:
        notes.append(f"compile {row['compile_seconds']:.2f} s")
    if "first_call_seconds" in row:
        notes.append(f"JIT load {row['first_call_seconds']:.2f} s (untimed)")
    name = row.get("measures_of", "")
    for base, label in ((by_query.get(name), "kernel"), (by_query.get(f"{name}, Python path"), "Python")):
        if base and row.get("cpu_seconds") and base.get("cpu_seconds"):
            notes.append(
                f"measures cost {100 * (row['cpu_seconds'] / base['cpu_seconds'] - 1):+.0f}% CPU vs {label} path"
            )
    return "; ".join(notes)


def table(rows: list[dict]) -> str:
    """One markdown table: ceql's columns, then (time, ceql speed-up, match check) per competitor."""
    kinds = _competitor_kinds(rows)
    header = ["workload", "query", "events", "complex events", "seconds", "CPU s", "events/s", "peak MB"]
    for kind in kinds:
        name = COMPETITOR_NAMES[kind]
        header += [f"{name} s", f"ceql speed-up vs {name}", f"same CEs as {name}"]
    header += ["path", "notes"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < 2 or i >= len(header) - 2 else "---:" for i in range(len(header))) + "|",
    ]
    by_query = {row["query"]: row for row in rows}
    for row in rows:
        cells = [row["workload"], row["query"], fmt(row.get("events"))]
        if "skipped" in row:
            cells += ["", "", "", "", ""]
            notes = f"skipped: {row['skipped']}"
        elif "error" in row:
            cells += ["", "", "", "", ""]
            notes = f"error: {row['error']}"
        elif "timeout" in row:
            cells += ["", f"> {row['timeout']:.0f} (timeout)", "", "", ""]
            notes = _notes(row, by_query)
        else:
            cells += [
                fmt(row["complex_events"]),
                seconds(row["seconds"]),
                seconds(row.get("cpu_seconds")),
                fmt(row["events_per_s"]),
                fmt(row["peak_mb"], 1),
            ]
            notes = _notes(row, by_query)
        for kind in kinds:
            cells += _competitor_cells(row, kind)
        cells += [row.get("path", ""), notes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
