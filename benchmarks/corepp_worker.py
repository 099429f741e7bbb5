"""Run one query on CORE++ (pycer) and write its complex events as positions.

    benchmarks/.venv-core/bin/python benchmarks/corepp_worker.py DECLARATION QUERY EVENTS_CSV OUT

Runs inside CORE++'s own Python 3.13 environment (pycer has no other wheel), so it uses the
standard library only. The CSV has a header and ``event_type`` first, then the attributes in
declaration order; every schema used by the benchmarks starts with ``id`` = the event's
position, which is how printed events are mapped back to positions. Events are converted to
pycer objects before the clock starts; the time covers ``send_events`` and ``get_output`` (what
CORE++'s own benchmark harness times), as wall and as CPU time (all of its threads). OUT gets one line per complex event (space-separated
positions, in CORE++'s order); the last line of stdout is a JSON summary.
"""

from __future__ import annotations

import csv
import json
import re
import sys
import time

import pycer

EVENT_ID = re.compile(r"\(id: \d+ attributes: \[(-?\d+)")


def load_events(path: str, info) -> list:
    """pycer events from a CSV in the declaration's attribute order."""
    lookup = {e.name: (e.id, [a.value_type for a in e.attributes_info]) for e in info.events_info}
    times = {
        name: next((i for i, t in enumerate(types) if t == pycer.PRIMARY_TIME), None)
        for name, (_, types) in lookup.items()
    }
    convert = {
        pycer.INT64: lambda s: pycer.PyIntValue(int(s)),
        pycer.DOUBLE: lambda s: pycer.PyDoubleValue(float(s)),
        pycer.STRING_VIEW: pycer.PyStringValue,
        pycer.BOOL: lambda s: pycer.PyBoolValue(s.lower() == "true"),
        # A primary_time attribute is an integer; it is also given as the event's own time.
        pycer.PRIMARY_TIME: lambda s: pycer.PyIntValue(int(s)),
    }
    events = []
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        for row in reader:
            type_id, types = lookup[row[0]]
            values = [convert[t](v) for t, v in zip(types, row[1:])]
            time_index = times[row[0]]
            if time_index is None:
                events.append(pycer.PyEvent(type_id, values))
            else:
                events.append(pycer.PyEvent(type_id, values, pycer.PyIntValue(int(row[1 + time_index]))))
    return events


def main() -> None:
    declaration, query, events_csv, out = sys.argv[1:5]
    server = pycer.PyOfflineServer()
    info = server.declare_stream(open(declaration).read())
    server.add_query(open(query).read())
    started = time.perf_counter()
    events = load_events(events_csv, info)
    load_seconds = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    server.send_events(events)
    output = server.get_output()
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    count = 0
    with open(out, "w") as handle:
        for line in output.splitlines():
            if line.startswith("["):
                handle.write(" ".join(EVENT_ID.findall(line)) + "\n")
                count += 1
    summary = {"seconds": seconds, "cpu_seconds": cpu_seconds, "load_seconds": load_seconds}
    print(json.dumps({**summary, "complex_events": count}))


if __name__ == "__main__":
    main()
