"""Matches as an Arrow table, in the layout of the compiled kernel (runtime/kernel/output.py)
plus one typed column per measure:

- ``trigger`` int64; ``positions`` list<int64>;
- ``labels.<name>`` list<int64> per label the projection reports;
- ``partition.<attribute>`` per attribute of a single PARTITION BY group (``partition`` as
  list<string> with several groups);
- ``<measure name>`` per measure, typed by the query's analysis (int64, double, string, bool,
  timestamp[ns], or a list of those for labels that may hold several events);
- ``deadline`` int64 for ``NOT FOLLOWED BY`` queries (``Match.deadline``), last.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from ceql.compile.plan import Plan
from ceql.errors import UnsupportedQueryError
from ceql.match import Match

_SCALARS = {
    "int": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "timestamp": pa.timestamp("ns"),
}
_RESERVED = ("trigger", "positions", "partition")


def measure_type(kind: str | None) -> pa.DataType | None:
    """The Arrow type of a measure type name (None: inferred from the values)."""
    if kind is None:
        return None
    if kind.startswith("list<") and kind.endswith(">"):
        inner = measure_type(kind[5:-1])
        return pa.list_(inner) if inner is not None else None
    return _SCALARS.get(kind)


def reported_labels(plan: Plan, type_labels: bool = False) -> tuple[str, ...]:
    """The label columns, in order."""
    labels = set(plan.as_labels)
    if type_labels:
        labels |= set(plan.checked.label_types)
    projection = plan.projection
    if projection is not None and projection.kind == "none":
        return ()
    if projection is not None and projection.kind == "list":
        labels &= {item.label for item in projection.items}
    return tuple(sorted(labels))


def matches_table(plan: Plan, matches: Iterable[Match], type_labels: bool = False) -> pa.Table:
    """The matches as one Arrow table (see the module docstring)."""
    rows = list(matches)
    labels = reported_labels(plan, type_labels)
    columns: dict[str, pa.Array] = {
        "trigger": pa.array([m.trigger for m in rows], pa.int64()),
        "positions": pa.array([list(m.positions) for m in rows], pa.list_(pa.int64())),
    }
    for label in labels:
        columns[f"labels.{label}"] = pa.array([list(m.labels.get(label, ())) for m in rows], pa.list_(pa.int64()))
    groups = plan.partition_groups if plan.partition_groups and not plan.auto_partition else ()
    if len(groups) == 1:
        for i, attribute in enumerate(groups[0]):
            kind = plan.catalog.arrow_types.get(attribute)
            values = [m.partition[i] if m.partition is not None else None for m in rows]
            columns[f"partition.{attribute}"] = pa.array(values, kind)
    elif groups:
        columns["partition"] = pa.array(
            [[str(v) for v in m.partition] if m.partition is not None else None for m in rows],
            pa.list_(pa.string()),
        )
    if plan.measures is not None:
        types = getattr(plan.checked, "measure_types", {}) or {}
        for name in plan.measures.names:
            if name in _RESERVED or name in columns or name.startswith(("labels.", "partition.")):
                raise UnsupportedQueryError(f"measure name {name!r} clashes with an output column; rename it with AS")
            values = [_plain(m.measures.get(name)) for m in rows]
            columns[name] = pa.array(values, measure_type(types.get(name)))
    if getattr(plan, "absence", None) is not None:
        if "deadline" in columns:
            raise UnsupportedQueryError("measure name 'deadline' clashes with an output column; rename it with AS")
        columns["deadline"] = pa.array([m.deadline for m in rows], pa.int64())
    return pa.table(columns)


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
