"""From the kernel's flat complex events to reported matches: projection and deduplication.

Projection is applied vectorised over the label-set id of every event: a table says, per label
set, whether the event's position is kept and which labels it reports. A projection other than
``*`` can make complex events of one trigger equal; the later copies are dropped (as the Python
evaluator does), by hashing each match's (position, projected labels) sequence.

The result is ``MatchColumns`` (``runtime/arrow.py``): ``record_batch`` turns it into the rows
of the output schema (docs/guide.md, "Output"), ``MatchRows`` into ``Match`` objects.
"""

from __future__ import annotations

import numpy as np

from ceql.runtime.arrow import MatchColumns
from ceql.runtime.kernel.columns import compiler_only
from ceql.runtime.kernel.compiled import dedupe_mask
from ceql.runtime.kernel.engine import KernelMatches


class Projection:
    """SELECT *, SELECT NONE or SELECT label, ... applied to the events of a complex event."""

    def __init__(self, kind: str, kept: frozenset[str], as_labels: frozenset[str]) -> None:
        self.kind = kind
        self.distinct = False  # drop repeats of one complex event even with SELECT *
        self.kept = kept
        self.as_labels = as_labels
        if kind == "star":
            self.output_labels = tuple(sorted(as_labels))
        elif kind == "none":
            self.output_labels = ()
        else:
            self.output_labels = tuple(sorted(kept & as_labels))

    @classmethod
    def from_plan(cls, plan) -> Projection:
        projection = plan.projection
        if projection is None or projection.kind == "star":
            return cls("star", frozenset(), plan.as_labels)
        kept = (
            frozenset(item.label for item in projection.items) if projection.kind == "list" else frozenset()
        )
        return cls(projection.kind, kept, plan.as_labels)

    @property
    def merges(self) -> bool:
        """Whether two complex events of a trigger may project to the same match."""
        return self.kind != "star" or self.distinct

    @property
    def needs_labels(self) -> bool:
        """Whether the output depends on the events' label sets, whatever they are."""
        return self.merges or bool(self.output_labels)

    def needs_labels_for(self, label_sets: list[tuple[str, ...]]) -> bool:
        """Whether output under these label sets depends on them: also when one holds only the
        compiler's own labels (an event reported only under them is not a position)."""
        return self.needs_labels or any(compiler_only(labels) for labels in label_sets)

    def event(self, labels: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
        """For an event reported under ``labels``: (position kept, labels reported). Labels
        starting with NUL are the compiler's own and never reported."""
        present = frozenset(label for label in labels if label[0] != "\x00")
        if self.kind == "star":
            return bool(present), tuple(sorted(present & self.as_labels))
        if self.kind == "none":
            return False, ()
        return bool(present & self.kept), tuple(sorted(present & self.kept & self.as_labels))


#: The kernel's matches after projection (partition codes; the runner adds the keys and turns
#: the measures, columns.MeasureColumn here, into raw arrays).
ProjectedMatches = MatchColumns


def project(matches: KernelMatches, projection: Projection, measures: dict | None = None) -> MatchColumns:
    """Apply the projection (and drop the duplicates it creates) to a batch of complex events;
    ``measures`` (name -> columns.MeasureColumn, one value per complex event) follow the
    matches kept, and count in what makes two matches equal."""
    offsets, positions = matches.offsets, matches.positions
    trigger, partition = matches.trigger, matches.partition
    measures = measures or {}
    sets = matches.label_sets
    if matches.labels is None or not projection.needs_labels_for(sets):
        return MatchColumns(trigger, offsets, positions, {}, partition, measures=measures)
    table = [projection.event(labels) for labels in sets] or [(True, ())]
    keep_table = np.array([kept for kept, _ in table], dtype=bool)
    ids: dict[tuple[str, ...], int] = {}
    id_table = np.array([ids.setdefault(reported, len(ids)) for _, reported in table], dtype=np.int64)
    label_ids = matches.labels
    keep = keep_table[label_ids]
    if not keep.all():
        offsets, positions, label_ids = _select_events(offsets, positions, label_ids, keep)
    if projection.merges and len(trigger) > 1:
        n = len(trigger)
        unique = np.empty(n, dtype=bool)
        slots = np.empty(max(16, 1 << int(2 * n - 1).bit_length()), dtype=np.int64)
        extra = _measure_codes(measures, n)
        dedupe_mask(trigger, offsets, positions, id_table[label_ids], extra, unique, np.empty(n, np.uint64), slots)
        if not unique.all():
            measures = {name: column.take(np.flatnonzero(unique)) for name, column in measures.items()}
            counts = np.diff(offsets)
            events = np.repeat(unique, counts)
            trigger, partition = trigger[unique], partition[unique]
            offsets = np.concatenate([[0], np.cumsum(counts[unique])]).astype(np.int64)
            positions, label_ids = positions[events], label_ids[events]
    labels = {}
    for name in projection.output_labels:
        has = np.array([name in reported for _, reported in table], dtype=bool)[label_ids]
        labels[name] = _select_events(offsets, positions, label_ids, has)[:2]
    return MatchColumns(trigger, offsets, positions, labels, partition, measures=measures)


def limit_projected(matches: MatchColumns, limit: int) -> MatchColumns:
    """The first ``limit`` matches of each trigger (LIMIT; a trigger's matches are together)."""
    from ceql.runtime.kernel.postfilter import first_per_trigger

    keep = first_per_trigger(matches.trigger, np.ones(len(matches), dtype=bool), limit)
    if keep.all():
        return matches
    rows = np.flatnonzero(keep)
    offsets, positions = _take_lists(matches.offsets, matches.positions, rows)
    labels = {name: _take_lists(o, p, rows) for name, (o, p) in matches.labels.items()}
    measures = {name: column.take(rows) for name, column in matches.measures.items()}
    partition = matches.partition[rows] if matches.partition is not None else None
    return MatchColumns(matches.trigger[rows], offsets, positions, labels, partition, measures=measures)


def _take_lists(offsets: np.ndarray, values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counts = np.diff(offsets)[rows]
    out = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    flat = np.repeat(offsets[:-1][rows] - out[:-1], counts) + np.arange(int(out[-1]), dtype=np.int64)
    return out, values[flat]


def _measure_codes(measures: dict, n: int) -> np.ndarray:
    from ceql.runtime.kernel.columns import measure_codes

    if not measures:
        return np.zeros((n, 0), dtype=np.int64)
    return np.stack([measure_codes(column) for column in measures.values()], axis=1)


def _select_events(
    offsets: np.ndarray, positions: np.ndarray, label_ids: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    kept_before = np.concatenate([[0], np.cumsum(keep)]).astype(np.int64)
    return kept_before[offsets], positions[keep], label_ids[keep]

