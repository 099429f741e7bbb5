"""Run a Plan through the compiled kernel: Arrow tables in, Arrow tables (or Match objects) out.

Per batch, vectorised: event symbols (type and predicate bits), window measures as int64
(positions, nanoseconds or the window attribute's values; never floats), the relevance filter,
and partition key codes (a persistent dictionary, so codes are stable across batches). The
kernel then does the per-event work and the enumeration; projection and Arrow building are
vectorised again (output.py).

Plans the kernel does not evaluate (``unsupported`` says why): NOT FOLLOWED BY over what
kernel/absence.py does not run, NEXT/LAST/MAX with conditions or STRICT on patterns with many
candidates, and windows of 2**61 units or more. Conditions across events are checked per
enumerated complex event (postfilter.py): column-wise where they have such a form, else by
replaying the register programs on each derivation (replay.py). NEXT and LAST alone are chosen over the tECS (compiled ``_choose``); ANY and LIMIT after
checks or a merging projection enumerate a trigger's candidates lazily (``_enough``). These stay on the Python evaluator (``runtime/backend.py``
says so once per query).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.output_schema import OutputSchema, output_schema
from ceql.compile.plan import Plan
from ceql.errors import EventError, UnsupportedQueryError
from ceql.lang import ast
from ceql.lang.printer import print_within
from ceql.lang.visit import walk
from ceql.match import Match
from ceql.runtime.arrow import MatchColumns, MatchRows, record_batch
from ceql.runtime.batches import builder_for, iter_tables, typed_indexes
from ceql.runtime.ingest import out_of_order
from ceql.runtime.kernel.columns import (
    Conditions,
    Frame,
    MeasureColumns,
    consecutive,
    group_holds,
    instance_holds,
)
from ceql.runtime.kernel.compiled import (
    MAX_WINDOW,
    SEL_RANKED,
    SEL_WORSE,
    SELECT_LAST,
    SELECT_MAX,
    SELECT_NEXT,
    select_supports,
)
from ceql.runtime.kernel.consume import Consumed, clear_markers, emulated
from ceql.runtime.kernel.contiguous import ChainShape, ContiguousChain, chain_shape
from ceql.runtime.kernel.engine import KernelEvaluator, KernelMatches
from ceql.runtime.kernel.joins import (
    EqualityJoin,
    JoinShape,
    fixed_columns,
    int_keys,
    join_shape,
    linked_values,
    role_labels,
    steps,
)
from ceql.runtime.kernel.keys import IntCodes, WindowCodes
from ceql.runtime.kernel.output import Projection, limit_projected, project
from ceql.runtime.kernel.postfilter import (
    PostFilter,
    RightCheck,
    first_per_trigger,
    local_indexes,
    post_filter,
    public_supports,
    right_event_hits,
    select_matches,
)
from ceql.runtime.kernel.projected import drops_events
from ceql.runtime.kernel.replay import MASK, TYPE, Replay
from ceql.runtime.kernel.saved import export_json, import_json, is_kernel_state  # noqa: F401 (re-exported)
from ceql.runtime.kernel.values import KeptValues, Raw
from ceql.runtime.kernel.windows import WINDOW, in_window, kernel_measures, measure_values
from ceql.runtime.limits import DEFAULT_MAX_NODES


def unsupported(plan: Plan) -> str | None:
    """Why the kernel cannot evaluate this plan, or None if it can."""
    if getattr(plan, "absence", None) is not None:  # two kernels (kernel/absence.py)
        from ceql.runtime.kernel.absence import absence_unsupported

        return absence_unsupported(plan)
    post = post_filter(plan)
    if isinstance(post, str):
        return post
    checked = isinstance(post, PostFilter) and bool(
        post.condition is not None or post.groups or post.instances or post.unless or post.replay
    )
    # The events the checks read stay in the enumerated complex event: where PROJECT drops
    # some, the kernel would measure and consume a complex event the reference does not report
    # (tests/test_known_bugs.py). Where PROJECT drops none, both have the same events
    # (projected.py).
    drops = checked and drops_events(plan.formula, plan.checked.query.partition_labels)
    within = plan.checked.query.within
    if within is not None:
        if within.value >= MAX_WINDOW:
            return "a window of 2**61 units or more"
        if within.kind == "attribute" and within.value + 1 >= MAX_WINDOW and isinstance(post, PostFilter) and post.window:
            return "a window of 2**61 units or more"
        if drops:  # the kernel's window would also span the events PROJECT drops
            return "conditions across events on events PROJECT drops, under a window"
    if drops and plan.consume != "NONE":
        # CONSUME BY drops the partial matches of a trigger's scope: those holding only events
        # PROJECT drops (kept for a check) would survive in the reference.
        return "conditions across events on events PROJECT drops, with CONSUME BY"
    return None


def kernel_notes(plan: Plan) -> list[str]:
    """How the kernel evaluates what the plan checks per complex event (for explain)."""
    post = post_filter(plan)
    if not isinstance(post, PostFilter):
        return []
    notes = list(post.notes)
    if emulated(post.plan, post.per_match):
        notes.append(f"CONSUME BY {plan.consume} applied after the checks, column-wise (few candidates)")
    return notes


def _fast_shapes(
    source: Plan, plan: Plan, post: PostFilter | None, measures: MeasureColumns | None
) -> tuple[JoinShape | None, ChainShape | None]:
    """The hash join or the column-wise chain that evaluates the plan (issue 34), or neither
    (the automaton): ``source`` is the compiled plan, ``plan`` the one the kernel runs (the
    per-complex-event checks' pattern where ``post`` has checks). The one place that decides."""
    join = join_shape(source, plan, post, measures) if plan.checked.query.within is not None else None
    return join, (chain_shape(source, plan, post, measures) if join is None else None)


def kernel_path(plan: Plan) -> tuple[str, str]:
    """Which of the kernel's paths runs ``plan``, and why, in words (for explain): "join",
    "chain" or "automaton". Only for plans the kernel evaluates (``unsupported`` is None)."""
    post = post_filter(plan)
    post = post if isinstance(post, PostFilter) else None
    run = post.plan if post is not None else plan
    if getattr(plan, "absence", None) is not None:
        return "automaton", "NOT FOLLOWED BY keeps the automaton (kernel/absence.py)"
    join, chain = _fast_shapes(plan, run, post, _measure_columns(run))
    within = plan.checked.query.within
    if join is not None:
        roles = " ; ".join(f"{plan.type_names[t]} AS {label}" for t, label in zip(join.types, join.labels))
        keys = ", ".join(f"{name}: [{', '.join(key)}]" for name, key in sorted(run.partition_types.items()))
        linked = ""
        if join.links:
            names = join.attributes
            tests = " AND ".join(
                f"{join.labels[ra]}.{names[ia]} = {join.labels[rb]}.{names[ib]}" for ra, ia, rb, ib in join.links
            )
            linked = f", and equalities beyond the key checked on probe ({tests})"
        source = "PARTITION BY (each complex event names its key)" if join.reported else "key equalities"
        return "join", (
            f"hash join inside the window (kernel/joins.py): {roles} is one event per role, every "
            f"role linked by {source} (the key per event type: {keys}){linked}, in WITHIN "
            f"{print_within(within)} over a measure that never decreases, with ALL, no CONSUME BY, "
            "LIMIT or other checks per complex event (measures are computed per complex event from the "
            "values kept of the window's events); one hash table (key -> each role's latest event), each "
            "trigger walks its key's chains back to the window's edge: no automaton, no partition per "
            "key, memory the events of the window"
        )
    if chain is not None:
        roles = " : ".join(chain.labels)
        tests = " AND ".join(
            f"{chain.labels[ra]}.{a} {op} {chain.labels[rb]}.{b}" for op, (ra, a), (rb, b) in chain.compares
        )
        per = (
            " per key [" + "], [".join(", ".join(g) for g in run.partition_groups) + "]"
            if run.partition_groups
            else ""
        )
        return "chain", (
            f"column-wise chain of consecutive events (kernel/contiguous.py): {roles} is a contiguous "
            f"sequence of single events{per} whose conditions compare one label's attribute with "
            f"another's ({tests}); each event ends at most one complex event: the batch grouped by "
            "key, the comparisons evaluated on whole shifted columns, no automaton"
        )
    return "automaton", (
        "the automaton (tECS): the pattern is neither single events linked by key equalities in a "
        "window (a hash join) nor a contiguous sequence of single events compared attribute to "
        "attribute (a column-wise chain)"
    )


def _measure_columns(plan: Plan) -> MeasureColumns | None:
    projection = plan.checked.query.projection
    if plan.measures is None or projection is None or not projection.measures:
        return None
    types = getattr(plan.checked, "measure_types", {}) or {}
    return MeasureColumns(projection.measures, set(plan.measures.many), types)


LOCAL = "\x00local"  # kept values: an event's index in its sub-stream
PREDICATE = "\x00pred"  # kept values: a one-event predicate of a condition, by number


def _kept_values(plan: Plan, attributes: list[str], post: PostFilter | None) -> KeptValues | None:
    """The store of the values measures and checks read (None when they read none)."""
    checked = post is not None and post.per_match
    if not attributes and plan.measures is None and not checked:
        return None
    catalog = plan.catalog
    storages = {name: catalog.columns[name].storage for name in attributes if name in catalog.columns}
    if post is not None and post.strict:
        storages[LOCAL] = "int"
    if post is not None and post.window is not None:
        storages[WINDOW] = "double"
    for right in post.unless if post is not None else ():
        for _, _, column in right.steps:
            storages[column] = "boolean"
    if post is not None and post.replay:
        storages[TYPE] = storages[MASK] = "int"
    if post is not None and post.predicates is not None:
        for i in range(len(post.predicates)):
            storages[f"{PREDICATE}{i}"] = "boolean"
    index = {name: i for i, name in enumerate(plan.type_names)}
    int_types = {
        name: frozenset(index[t] for t in types if t in index)
        for name, types in catalog.int_types.items()
        if name in storages
    }
    return KeptValues(storages, int_types)


class KeyCodes:
    """Dense int64 codes for PARTITION BY keys (tuples of values), stable across batches."""

    cacheable = True  # a key keeps its code: push's per-event path may cache it

    def __init__(self, plan: Plan) -> None:
        type_index = {name: i for i, name in enumerate(plan.type_names)}
        self.groups: list[tuple[tuple[str, ...], np.ndarray]] = [
            (
                group,
                np.array(
                    [type_index[t] for t, g in plan.partition_types.items() if g == group], dtype=np.int64
                ),
            )
            for group in plan.partition_groups
        ]
        # The group of each event type (-1: none), indexed by type index (-1: unknown type).
        self._group_of = np.full(len(plan.type_names) + 1, -1, dtype=np.int64)
        for g, (_, group_types) in enumerate(self.groups):
            self._group_of[group_types] = g
        self.codes: dict[tuple, int] = {}  # keys coded in Python (all but plain integers)
        self._segments: list = []  # in code order: arrays of integer keys, or single tuples
        self.count = 0  # codes given so far
        self._ints = IntCodes()  # int key -> code, filled by compiled code
        self._keys: list[tuple] | None = []
        self._built = 0  # the segments ``_keys`` lists

    @property
    def keys(self) -> list[tuple]:
        """code -> key tuple (built when asked: only reported partitions and saved states
        need them)."""
        if self._keys is None or len(self._keys) != self.count:
            # Only the segments added since the last time (a run asks once per chunk).
            keys: list[tuple] = self._keys if self._keys is not None else []
            done = self._built if self._keys is not None else 0
            for segment in self._segments[done:]:
                if isinstance(segment, tuple):
                    keys.append(segment)
                else:
                    keys.extend((value,) for value in segment.tolist())
            self._keys, self._built = keys, len(self._segments)
        return self._keys

    @keys.setter
    def keys(self, keys: list[tuple]) -> None:
        self._segments = list(keys)
        self.count = len(keys)
        self._keys = list(keys)
        self._built = len(self._segments)
        self.codes = {}
        self._ints = IntCodes()
        for code, key in enumerate(keys):
            if len(key) == 1 and type(key[0]) is int and -(2**63) <= key[0] < 2**63:
                self._ints.put(key[0], code)
            else:
                self.codes[key] = code

    def encode(self, table: pa.Table, rows: np.ndarray, types: np.ndarray) -> np.ndarray:
        """The key code of each of ``rows`` (-1: the event has no key: no group, or a null)."""
        out = np.full(len(rows), -1, dtype=np.int64)
        row_groups = self._group_of[types[rows]]
        for g, (group, _) in enumerate(self.groups):
            selected = np.flatnonzero(row_groups == g) if len(self.groups) > 1 or not (row_groups == 0).all() else None
            if selected is not None and len(selected) == 0:
                continue
            chosen = rows if selected is None else rows[selected]
            whole = len(chosen) == table.num_rows  # every row, in order (rows ascend)
            if len(group) == 1:
                column = table.column(group[0])
                if pa.types.is_integer(column.type):
                    # The common case: integer keys, coded by a compiled hash table (no Python
                    # work per key).
                    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
                    valid = None
                    if column.null_count:
                        valid = column.is_valid().to_numpy(zero_copy_only=False)
                        column = pc.fill_null(column, 0)
                    values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
                    if not whole:
                        values = values[chosen]
                        valid = valid[chosen] if valid is not None else None
                    codes = self._int_codes(values, valid)
                    if selected is None:
                        out = codes
                    else:
                        out[selected] = codes
                    continue
            take = pa.array(chosen)
            combined: np.ndarray | None = None
            uniques: list[tuple] = [()]
            for attribute in group:
                column = table.column(attribute)
                column = (column if whole else column.take(take)).combine_chunks()
                encoded = pc.dictionary_encode(column)
                index = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
                values = encoded.dictionary.to_pylist()
                if pa.types.is_floating(column.type):
                    # A double equal to an int is the same key as that int (v:double in one
                    # event type keyed against id:int in another); NaN is no key, as null.
                    nan = np.array([v != v for v in values] + [False], dtype=bool)
                    index = np.where(nan[index], -1, index)
                    # (Not beyond int64: no int key can equal such a double, and Arrow keeps it.)
                    values = [int(v) if v == v and float(v).is_integer() and -(2**63) <= v < 2**63 else v for v in values]
                if combined is None:
                    combined, uniques = index, [(v,) for v in values]
                    continue
                both = np.where((combined < 0) | (index < 0), -1, combined * len(values) + index)
                present = both >= 0
                distinct, inverse = np.unique(both[present], return_inverse=True)
                uniques = [uniques[int(d) // len(values)] + (values[int(d) % len(values)],) for d in distinct]
                combined = np.full(len(both), -1, dtype=np.int64)
                combined[present] = inverse
            assert combined is not None
            # A NaN is no key (its rows are -1 already): give it no code, which a saved state
            # could not list.
            lookup = np.array(
                [-1 if any(v != v for v in key) else self._code(key) for key in uniques] + [-1], dtype=np.int64
            )
            if selected is None:
                out = lookup[combined]
            else:
                out[selected] = lookup[combined]  # -1 indexes the trailing -1: no key
        return out

    def _int_codes(self, values: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
        start = self.count
        codes, end, fresh = self._ints.encode(values, valid, start)
        if end > start:
            self._segments.append(fresh)  # the new keys, in code order
            self.count = end
        return codes

    def _code(self, key: tuple) -> int:
        if len(key) == 1 and type(key[0]) is int and -(2**63) <= key[0] < 2**63:
            found = self._ints.get(key[0])
            if found >= 0:
                return found
            found = self.count
            self.count += 1
            self._ints.put(key[0], found)
            self._segments.append(key)
            return found
        found = self.codes.get(key)
        if found is None:
            found = self.count
            self.count += 1
            self.codes[key] = found
            self._segments.append(key)
        return found


# ------------------------------------------------------------------ window keys (issue 34)


class WindowKeyCodes(KeyCodes):
    """Codes for integer keys that no output reports (the routing of equalities between labels,
    compile/autopartition.py), recycled once their partition holds no live run
    (``keys.WindowCodes``): memory bounded by the keys of the window, not by every id seen."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan)
        self.window = WindowCodes()

    @staticmethod
    def fits(plan: Plan) -> bool:
        """Whether the plan's keys are routed equalities over integer attributes only."""
        types = plan.catalog.arrow_types
        return (
            plan.auto_partition is not None
            and bool(plan.partition_groups)
            and all(len(group) == 1 and types.get(group[0]) == pa.int64() for group in plan.partition_groups)
        )

    @property
    def count(self) -> int:  # type: ignore[override]
        return self.window.count if hasattr(self, "window") else 0

    @count.setter
    def count(self, value: int) -> None:
        pass  # (KeyCodes.__init__ sets it; the window's counter is the one used)

    @property
    def keys(self) -> list[tuple]:  # type: ignore[override]
        """code -> key tuple (a recycled code keeps its last key until it is given again; a
        saved state lists the keys of live partitions only, ``PlanKernel.export_state``)."""
        return [(v,) for v in self.window.keys[: self.window.count].tolist()]

    @keys.setter
    def keys(self, keys: list[tuple]) -> None:
        self.window.load([key[0] for key in keys])

    def encode(self, table: pa.Table, rows: np.ndarray, types: np.ndarray) -> np.ndarray:
        """The key code of each of ``rows`` (-1: no key: the event type has none, or a null)."""
        values, valid = int_keys(table, rows, types, self._group_of, [group for group, _ in self.groups])
        return self.window.encode(values, valid)

    def recycle(self, slot_of: np.ndarray) -> None:
        """Give back the codes of partitions without a live run (after each batch)."""
        self.window.recycle(slot_of)

    def _code(self, key: tuple) -> int:
        """The code of one key (push's per-event path), from the same table the batch path
        encodes with: a code may be recycled after a batch, so callers must not cache it
        (``cacheable``)."""
        value = key[0]
        if len(key) != 1 or type(value) is not int or not -(2**63) <= value < 2**63:
            return -1  # (not an int64: no partition has this key)
        return self.window.encode_one(value)

    cacheable = False  # codes are given back and reused: push's caches must ask every time


class PlanKernel:
    """Incremental evaluation of one plan with the compiled kernel."""

    def __init__(self, plan: Plan, max_nodes: int | None = None, labels: bool = False) -> None:
        """``labels``: always output each event's label-set id (NOT FOLLOWED BY's identities)."""
        reason = unsupported(plan)
        if reason is None and getattr(plan, "absence", None) is not None:
            reason = "NOT FOLLOWED BY in one kernel (kernel/absence.py's KernelAbsence runs it)"
        if reason is not None:
            raise UnsupportedQueryError(f"the compiled kernel does not evaluate {reason}")
        post = post_filter(plan)
        self.post = post if isinstance(post, PostFilter) else None
        self.source = plan
        if self.post is not None:
            plan = self.post.plan  # the pattern whose complex events are checked one by one
        self.plan = plan
        self.projection = Projection.from_plan(plan)
        if self.post is not None and self.post.distinct:
            self.projection.distinct = True
        within = plan.checked.query.within
        self.partitioned = bool(plan.partition_groups)
        self.measures = _measure_columns(plan)
        self.conditions = None
        self.unless: list[RightCheck] = []  # UNLESS's right sides of one event (postfilter.RightEvent)
        self.instance_checks: list = []
        if self.post is not None:
            predicates = self.post.predicates
            column = (lambda pred: f"{PREDICATE}{predicates.intern(pred)}") if predicates is not None else None
            if self.post.condition is not None:
                self.conditions = Conditions(self.post.condition, column)
            self.unless = [RightCheck(right, column) for right in self.post.unless]
            for instanced in self.post.instances:
                if isinstance(instanced.source, tuple):
                    self.instance_checks.append(lambda frame, keys=instanced.source: group_holds(frame, keys))
                else:
                    self.instance_checks.append(Conditions(instanced.source, column).holds)
        # The register programs replayed per derivation (replay.py), reading the catalog's attributes.
        self.replay = Replay(plan) if self.post is not None and self.post.replay else None
        self._stored = set(plan.catalog.columns) if self.replay is not None else set()
        # Checks per complex event need every candidate: ANY and LIMIT apply after them.
        self.checked = self.post is not None and self.post.per_match
        attributes = self.measures.attributes() if self.measures is not None else []
        if self.conditions is not None:
            attributes += [a for a in self.conditions.attributes() if a not in attributes]
        for unless in self.unless:
            attributes += [a for a in unless.attributes() if a not in attributes]
        if self.replay is not None:
            attributes += [a for a in self.replay.attributes(self._stored) if a not in attributes]
        for keys in self.post.groups if self.post is not None else ():
            attributes += [key.name for key in keys if key.name not in attributes]
        for instanced in self.post.instances if self.post is not None else ():
            if isinstance(instanced.source, tuple):
                read = [key.name for key in instanced.source]
            else:
                read = Conditions(instanced.source).attributes()
            attributes += [a for a in read if a not in attributes]
        self.kept = _kept_values(plan, attributes, self.post)
        self.limit = plan.limit if self.checked or self.projection.merges else None
        # CONSUME BY with checks: applied after a kernel run without it, column-wise, where
        # that enumerates what the twin does (consume.py); else the kernel asks per trigger.
        self.consumed = Consumed(plan.consume == "PARTITION") if emulated(plan, self.checked) else None
        self.max_nodes = DEFAULT_MAX_NODES if max_nodes is None else max_nodes
        window = None if within is None else int(within.value)
        if window is not None and self.post is not None and self.post.window is not None:
            window += 1  # over floor(value): wide enough for every exact match (windows.py)
        # NEXT / LAST with checks on many candidates: each trigger's candidates come best
        # support first, and ``_enough`` ends the trigger once the best that passes is out.
        self.ranked = self.post is not None and self.post.ranked
        self.kernel = KernelEvaluator(
            plan.det,
            window=window,
            monotone=plan.monotone,
            consume="NONE" if self.consumed is not None else plan.consume,
            strategy="ANY" if plan.strategy == "ANY" and not self.checked else "ALL",
            limit=None if self.limit is not None else plan.limit,
            partitioned=self.partitioned,
            # A trigger's complex events stay in one chunk where the checks choose among them
            # (repeats, NEXT/LAST/MAX, ANY, LIMIT, CONSUME BY) or a projection merges them;
            # conditions alone are checked chunk by chunk (bounded memory, as the twin query).
            whole_triggers=self.projection.merges or (self.checked and self._chooses()),
            labels=labels or self.projection.needs_labels or self.measures is not None or self.checked,
            # With CONSUME BY, each trigger's complex events are checked before consumption.
            check=self._checked_mask if self.checked and plan.consume != "NONE" and self.consumed is None else None,
            # START: a (sub-)stream whose runs all died stays without runs.
            anchored=any(isinstance(node, ast.Start) for node in walk(plan.formula, formulas_only=True)),
            max_nodes=self.max_nodes,
            select=self.post.select if self.post is not None and (self.post.in_kernel or self.ranked) else None,
            ranked=self.ranked,
            perm=within is None or within.kind != "attribute",
            # ANY / LIMIT after checks or a merging projection: enumerate lazily, stop once
            # enough pass (issue 40: the rest of a trigger's candidates are never enumerated).
            # Not with CONSUME BY emulated after the checks: it consumes trigger by trigger in
            # order, and a paused later trigger must not consume before the earlier ones.
            more=self._enough
            if (self.source.strategy == "ANY" and self.checked or self.limit is not None or self.ranked)
            and self.consumed is None
            else None,
        )
        self.keys = (WindowKeyCodes(plan) if WindowKeyCodes.fits(plan) else KeyCodes(plan)) if self.partitioned else None
        # Equality correlation of single events: a hash join in the window (joins.py), or
        # conditions between consecutive events, column-wise (contiguous.py): issue 34.
        shape, chain = _fast_shapes(self.source, plan, self.post, self.measures)
        self.join = EqualityJoin(shape, int(within.value), self.max_nodes) if shape is not None else None
        if self.join is not None and not self.join.shape.int_keys:
            self.keys = KeyCodes(plan)  # codes that equate a double with its int, kept
        self.chain = (
            ContiguousChain(
                chain,
                None if within is None else int(within.value),
                {name: plan.catalog.columns[name].storage for name in chain.attributes},
                self.max_nodes,
            )
            if chain
            else None
        )
        # Matches name their partition unless the key was derived from an equality.
        self.reports_partition = self.partitioned and plan.auto_partition is None
        self.position = 0
        self.last_time: int | None = None
        self.show_time: Any = None  # how messages write a time (the evaluator's: runtime/ingest.py)
        self._counts: np.ndarray | None = None  # events per partition code (STRICT)
        # Types the input (an evaluator gives its own, which records how its input gave times).
        self.builder = builder_for(plan)
        self._irrelevant = np.zeros(0, dtype=bool)
        self._type_array = pa.array(plan.type_names, pa.string())
        self._time_types = np.array(
            [i for i, name in enumerate(plan.type_names) if name in plan.time_attributes], dtype=np.int64
        )
        # Whether each type index has a time (the last item: -1, no type): a lookup, not isin.
        self._timed_type = np.zeros(len(plan.type_names) + 1, dtype=bool)
        self._timed_type[self._time_types] = True
        # Per UNLESS right side (postfilter.RightEvent) and step of it: its kept column, and
        # whether each type index is of the step's types.
        self._right_types = [
            (column, np.array([name in types for name in plan.type_names] + [False], dtype=bool))
            for right in (self.post.unless if self.post is not None else ())
            for types, _, column in right.steps
        ]

    def _chooses(self) -> bool:
        """Whether the per-complex-event checks choose among each trigger's complex events."""
        post = self.post
        assert post is not None
        return (
            post.distinct
            or post.select is not None
            or self.source.strategy == "ANY"
            or self.limit is not None
            or self.plan.consume != "NONE"
        )

    def _enough(self, chunk: KernelMatches) -> tuple[np.ndarray, bool]:
        """A trigger's complex events so far (its enumeration paused): those that pass the
        checks, and whether they make enough results (ANY: one; LIMIT n: n, distinct once
        projected; measures are left out, so this may count fewer, never more)."""
        keep = self._checked_mask(chunk) if self.checked else np.ones(len(chunk), dtype=bool)
        if self.ranked:
            # Best support first (the kernel ranked this trigger, sel[SEL_RANKED]): the kept
            # ones have the best support that passes (select_supports), and once the latest
            # candidate's support is another (worse) one, or every candidate still to come is
            # strictly worse than it (sel[SEL_WORSE]), no later candidate can be kept.
            sel = self.kernel.sel
            if not sel[SEL_RANKED] or not keep.any():
                return keep, False
            if sel[SEL_WORSE]:
                return keep, True
            best, last = int(np.flatnonzero(keep)[0]), len(chunk) - 1
            offsets, positions = chunk.offsets, chunk.positions
            same = np.array_equal(positions[offsets[best] : offsets[best + 1]], positions[offsets[last] : offsets[last + 1]])
            return keep, not same
        goal = 1 if self.source.strategy == "ANY" else (self.limit or 1)
        if self.projection.merges:
            found = len(project(select_matches(chunk, keep), self.projection))
        else:
            found = int(keep.sum())
        return keep, found >= goal

    # ------------------------------------------------------------------ public API

    def process_table(
        self, table: pa.Table, positions: np.ndarray | None = None, types: np.ndarray | None = None
    ) -> Iterator[KernelMatches]:
        """Complex events of one normalised table (BatchBuilder output), in chunks.
        ``positions``: the stream positions of the table's rows when they are not the next
        ones (a worker's share of the keys, runtime/parallel.py); ``types``: each row's index
        in ``plan.type_names`` when the caller has them (the table may then lack event_type)."""
        if self.join is not None:
            yield from self._join_table(table, positions, types)
            return
        if self.chain is not None:
            yield from self._chain_table(table, positions, types)
            return
        plan = self.plan
        n = table.num_rows
        base = self.position
        types, symbols = self._symbols(table, types)
        measures, missing = self._measures(table, types, base, positions)
        if plan.ordered_time:
            self._check_order(types, measures, missing, base, positions)
        relevant = np.nonzero(~self._irrelevant[symbols])[0]
        codes = self.keys.encode(table, relevant, types) if self.keys is not None else None
        self.position = base + n if positions is None else (int(positions[-1]) + 1 if n else base)
        if self.kept is not None:
            self.kept.append(table, base, types, self._derived(table, types), positions)
        at = relevant + base if positions is None else positions[relevant]
        for chunk in self.kernel.process_chunks(symbols[relevant], at, measures[relevant], codes, missing[relevant]):
            if self.checked and self.kernel.check is None:
                chunk = self._check(chunk)
                if not len(chunk):
                    continue
            if self.measures is not None:
                chunk.measures = self.measures.compute(self._frame(chunk))
            yield chunk
        if self.kept is not None:
            self._prune_kept()
        if isinstance(self.keys, WindowKeyCodes):
            self.keys.recycle(self.kernel.slot_of)

    def _role_labels(self, roles: tuple[int, ...], labels: tuple[str, ...]) -> np.ndarray:
        """The label-set id of each role's events: its event type and its label (the labels the
        automaton reports, less the compiler's own, which no output shows)."""
        names = self.plan.type_names
        return np.array(
            [self.kernel.tables.label_id(tuple(sorted({names[t], label}))) for t, label in zip(roles, labels)],
            dtype=np.int64,
        )

    def _columnwise(
        self, table: pa.Table, positions: np.ndarray | None, types: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What the join and chain paths read of a batch, column-wise: each row's type index,
        window measure, whether it has none, and stream position; advances ``self.position``."""
        n = table.num_rows
        base = self.position
        if types is None:  # (a worker gives each row's type index: runtime/parallel.py)
            types = self._type_indexes(table)
        measures, missing = self._measures(table, types, base, positions)
        if self.plan.ordered_time:
            self._check_order(types, measures, missing, base, positions)
        self.position = base + n if positions is None else (int(positions[-1]) + 1 if n else base)
        at = np.arange(base, base + n, dtype=np.int64) if positions is None else np.asarray(positions, dtype=np.int64)
        return types, measures, missing, at

    def _chain_table(
        self, table: pa.Table, positions: np.ndarray | None, types: np.ndarray | None = None
    ) -> Iterator[KernelMatches]:
        """``process_table`` for a contiguous chain (contiguous.py): shifted columns per key."""
        chain = self.chain
        assert chain is not None
        n = table.num_rows
        base = self.position
        types, measures, missing, at = self._columnwise(table, positions, types)
        codes = self.keys.encode(table, np.arange(n), types) if self.keys is not None else np.zeros(n, dtype=np.int64)
        if self.kept is not None:  # the values measures read (a chain reaches back into carried events)
            self.kept.append(table, base, types, self._derived(table, types), positions)
        triggers, keys, matrix = chain.process(table, types, at, measures, missing, codes)
        m, k = matrix.shape
        if m:
            chunk = KernelMatches(
                triggers,
                keys,
                steps(m + 1, k),
                matrix.ravel(),
                role_labels(self._role_labels(chain.shape.types, chain.shape.labels), m),
                self.kernel.label_sets,
            )
            if self.measures is not None:
                chunk.measures = self.measures.compute(self._frame(chunk))
            yield chunk
        if self.kept is not None:
            self._prune_kept()

    def _join_table(
        self, table: pa.Table, positions: np.ndarray | None, types: np.ndarray | None = None
    ) -> Iterator[KernelMatches]:
        """``process_table`` for a join plan (joins.py): types, measures and keys column-wise,
        then the compiled hash join."""
        join, keys = self.join, self.keys
        assert join is not None and keys is not None
        base = self.position
        types, measures, missing, at = self._columnwise(table, positions, types)
        rows = np.arange(table.num_rows)
        if join.shape.int_keys:
            values, valid = int_keys(table, rows, types, keys._group_of, [group for group, _ in keys.groups])
        else:
            values = keys.encode(table, rows, types)
            valid = values >= 0
        linked = linked_values(table, join.shape.attributes) if join.shape.attributes else (None, None)
        if self.kept is not None:  # the values measures read (complex events reach back into kept batches)
            self.kept.append(table, base, types, self._derived(table, types), positions)
        roles = join.roles
        label_ids = self._role_labels(join.shape.types, join.shape.labels)
        for triggers, flat in join.process(types, at, measures, values, valid, *linked):
            m = len(triggers)
            partition = np.zeros(m, dtype=np.int64)
            if join.shape.reported and m:
                # The trigger's key names the sub-stream (a code: only reported keys get one).
                row = triggers - base if positions is None else np.searchsorted(at, triggers)
                partition = keys._int_codes(values[row]) if join.shape.int_keys else values[row]
            chunk = KernelMatches(
                triggers,
                partition,
                steps(m + 1, roles),
                flat,
                role_labels(label_ids, m),
                self.kernel.label_sets,
            )
            if self.measures is not None:
                chunk.measures = self.measures.compute(self._frame(chunk))
            yield chunk
        if self.kept is not None:
            self._prune_kept()

    def _derived(self, table: pa.Table, types: np.ndarray) -> dict[str, Raw]:
        """Values the checks read that are not attributes: each event's index in its
        sub-stream (STRICT) and the one-event predicates of ``x[p]`` in conditions."""
        post = self.post
        out: dict[str, Raw] = {}
        if post is None:
            return out
        n = table.num_rows
        if post.strict:
            if self.keys is not None:
                codes = self.keys.encode(table, np.arange(n), types)
                if self._counts is None or len(self._counts) < self.keys.count:
                    counts = np.zeros(max(16, 2 * self.keys.count), dtype=np.int64)
                    if self._counts is not None:
                        counts[: len(self._counts)] = self._counts
                    self._counts = counts
                local = local_indexes(codes, self._counts)
            else:
                local = np.arange(self.position - n, self.position, dtype=np.int64)
            out[LOCAL] = Raw("int", local, local >= 0)
        if post.window is not None:
            out[WINDOW] = measure_values(self.plan, table)
        for column, is_right in self._right_types:
            out[column] = Raw("boolean", is_right[types], np.ones(n, dtype=bool))
        if post.replay:
            masks = np.zeros(n, dtype=np.uint64)
            for bit, values in enumerate(self.plan.compiled.predicates.evaluate(table)):
                masks |= np.asarray(values).astype(np.uint64) << np.uint64(bit)
            out[TYPE] = Raw("int", np.asarray(types, dtype=np.int64), np.ones(n, dtype=bool))
            out[MASK] = Raw("int", masks.view(np.int64), np.ones(n, dtype=bool))
        if post.predicates is not None:
            for i, values in enumerate(post.predicates.evaluate(table)):
                out[f"{PREDICATE}{i}"] = Raw("boolean", np.asarray(values, dtype=bool), np.ones(n, dtype=bool))
        return out

    def _check(self, chunk: KernelMatches) -> KernelMatches:
        """Keep the complex events that pass the per-match checks; then ANY."""
        return select_matches(chunk, self._checked_mask(chunk))

    def _checked_mask(self, chunk: KernelMatches) -> np.ndarray:
        """Which complex events pass the per-match checks (then ANY, NEXT, LAST, MAX)."""
        post = self.post
        assert post is not None
        frame = self._frame(chunk)
        keep = np.ones(len(chunk), dtype=bool)
        if post.window is not None and len(chunk):
            measures = frame.column(WINDOW)
            # (A complex event without events, NOT's, is in every window.)
            some = np.flatnonzero(frame.ends > frame.starts)
            first, last = frame.starts[some], frame.ends[some] - 1
            present = measures.valid[first] & measures.valid[last]  # a missing measure: in no window
            data = measures.data.astype(np.float64)
            keep[some] &= present & in_window(data[first], data[last], post.window)
        if self.conditions is not None:
            keep &= self.conditions.holds(frame)
        for right, unless in zip(post.unless, self.unless):
            keep &= ~right_event_hits(frame, right, unless.holds)
        if self.replay is not None:
            keep &= self.replay.holds(frame, self._stored, keep)
        for keys in post.groups:
            keep &= group_holds(frame, keys)
        for check, instanced in zip(self.instance_checks, post.instances):
            keep &= instance_holds(frame, instanced.end, instanced.own, instanced.free, check)
        if post.strict:
            keep &= consecutive(frame, LOCAL)
        if self.consumed is not None:  # CONSUME BY, before the strategy chooses (consume.py)
            # (This moves the consumption markers: with it set, ``check`` and ``more`` are off,
            # so the mask is asked once per chunk, in order.)
            # Consumption reads the reported complex event's first position, not that of an
            # event a NOT(E FILTER c) reads (public_supports; checks on events PROJECT drops
            # never come here with CONSUME BY: ``unsupported``).
            supports = public_supports(chunk, frame)
            keep = self.consumed.apply(chunk.trigger, chunk.partition, *supports, keep)
        if post.select is not None and not post.in_kernel:
            mode = {"NEXT": SELECT_NEXT, "LAST": SELECT_LAST, "MAX": SELECT_MAX}[post.select]
            offsets, positions = supports if self.consumed is not None else public_supports(chunk, frame)
            select_supports(chunk.trigger, offsets, positions, keep, mode)
        if self.source.strategy == "ANY":
            keep = first_per_trigger(chunk.trigger, keep, 1)
        return keep
    def _frame(self, chunk: KernelMatches) -> Frame:
        kept = self.kept
        assert kept is not None
        located: list = []

        def values(attribute: str):
            if not located:
                located.append(kept.locate(chunk.positions))
            return kept.gather(attribute, located[0], len(chunk.positions))

        return Frame(chunk.offsets, chunk.labels, chunk.label_sets, values)

    def _in_use(self) -> np.ndarray:
        """The positions whose kept values may still be read (kernel/absence.py adds more):
        the events of the automaton's live nodes, or of the join's entries."""
        if self.join is not None:
            return self.join.live_positions()
        if self.chain is not None:
            return self.chain.carry["position"]
        return self.kernel.live_positions()

    def _prune_kept(self) -> None:
        """Drop the kept values of events no node in use refers to, when the batches kept since
        the last time outgrow what it left (amortised constant work per event)."""
        kept = self.kept
        assert kept is not None
        if kept.should_prune():
            kept.prune(self._in_use())

    def record_batches(self, events: Any, schema: OutputSchema | None = None) -> Iterator[pa.RecordBatch]:
        """Matches over ``events`` (dicts, pandas or Arrow) as record batches of the output
        schema (default: ``output_schema(plan)`` once the first batch has been read)."""
        for table in iter_tables(events, self.builder):
            schema = schema or self.output_schema()
            for chunk in self.process_table(table):
                yield record_batch(schema, self.columns(chunk))

    def columns(self, chunk: KernelMatches) -> MatchColumns:
        """A chunk of complex events, projected (then LIMIT), with the partition keys when
        reported: what ``record_batch`` (the output schema's rows) and ``MatchRows`` (Match
        views) take. Measures computed in the kernel's output pass go in
        ``MatchColumns.measures`` (name -> one raw value per match as an Arrow array, or a list
        when some values fit no column; times as int64 nanoseconds): both type and show them."""
        if (self.join is not None or self.chain is not None) and not self.projection.merges:
            width = self.join.roles if self.join is not None else self.chain.k  # type: ignore[union-attr]
            columns = fixed_columns(chunk, self.projection, width, chunk.measures)
        else:
            columns = project(chunk, self.projection, chunk.measures)
        if self.limit is not None:
            columns = limit_projected(columns, self.limit)
        if self.reports_partition and self.keys is not None:
            columns.keys = self.keys.keys
        else:
            columns.partition = None
        if columns.measures:
            kinds = self._raw_measure_types()
            columns.measures = {name: column.raw(kinds.get(name)) for name, column in columns.measures.items()}
        return columns

    def _raw_measure_types(self) -> dict[str, pa.DataType]:
        """The Arrow type of each measure's raw values (times are left as int64 nanoseconds)."""
        kinds = self.__dict__.get("_raw_kinds")
        if kinds is None:
            schema = self.output_schema()
            kinds = self._raw_kinds = {m.name: m.arrow for m in schema.measures if m.time is None}
        return kinds

    def output_schema(self, **options: Any) -> OutputSchema:
        """The output schema of this plan, times as this kernel's input gave them."""
        return output_schema(self.plan, time_kinds=self.builder.catalog.time_inputs, **options)

    def arrow(self, events: Any, schema: OutputSchema | None = None) -> pa.Table:
        """Matches over ``events`` as one Arrow table of the output schema."""
        batches = list(self.record_batches(events, schema))
        if not batches:
            empty = KernelMatches.concat([], self.kernel.label_sets, self.kernel.labels)
            batches = [record_batch(schema or self.output_schema(), self.columns(empty))]
        return pa.Table.from_batches(batches)

    def matches(self, events: Any, schema: OutputSchema | None = None) -> Iterator[Match]:
        """Matches over ``events`` as Match objects, lazily: views of the kernel's columns,
        whose fields are built when first read."""
        for table in iter_tables(events, self.builder):
            for chunk in self.process_table(table):
                yield from MatchRows(self.columns(chunk), schema, self.reports_partition)

    # ------------------------------------------------------------------ per batch

    def _type_indexes(self, table: pa.Table) -> np.ndarray:
        """Each row's index in ``plan.type_names`` (-1: a type the plan does not know)."""
        known = typed_indexes(table, self.plan.type_names)
        if known is not None:  # the table just typed: its type index, mapped
            return known
        type_index = pc.index_in(table.column("event_type"), value_set=self._type_array)
        return np.asarray(pc.fill_null(type_index, -1).to_numpy(zero_copy_only=False), dtype=np.int64)

    def _symbols(self, table: pa.Table, types: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        plan = self.plan
        if types is None:
            types = self._type_indexes(table)
        masks = np.zeros(table.num_rows, dtype=np.uint64)
        for bit, values in enumerate(plan.compiled.predicates.evaluate(table)):
            masks |= values.astype(np.uint64) << np.uint64(bit)
        symbols = plan.symbols.ids_for(types, masks)
        known = len(plan.symbols.entries)
        if known > len(self._irrelevant):
            extra = [plan.det.irrelevant(s) for s in range(len(self._irrelevant), known)]
            self._irrelevant = np.concatenate([self._irrelevant, np.array(extra, dtype=bool)])
        return types, symbols

    def _measures(
        self, table: pa.Table, types: np.ndarray, base: int, positions: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """int64 window measures (the whole int64 range) and which events have none (types the
        window does not concern, nulls)."""
        plan = self.plan
        n = table.num_rows
        if plan.window_kind is None:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        if plan.window_kind == "events":
            if positions is None:
                return np.arange(base, base + n, dtype=np.int64), np.zeros(n, dtype=bool)
            return positions.astype(np.int64), np.zeros(n, dtype=bool)
        if self.post is not None and self.post.window is not None:
            return kernel_measures(measure_values(plan, table))
        names = set(plan.time_attributes.values())
        if len(names) == 1:  # one attribute for every type: whole-column operations
            column = pc.cast(table.column(names.pop()), pa.int64())
            timed = self._timed_type[types]
            if column.null_count == 0 and timed.all():  # the common case: no pass to fill or mask
                return np.array(column.to_numpy(zero_copy_only=False), dtype=np.int64), np.zeros(n, dtype=bool)
            values = pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64)
            nulls = pc.is_null(column).to_numpy(zero_copy_only=False).astype(bool)
            return np.where(timed, values, 0), np.where(timed, nulls, True)
        measures = np.zeros(n, dtype=np.int64)
        missing = np.ones(n, dtype=bool)
        columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for type_name, attribute in plan.time_attributes.items():
            found = columns.get(attribute)
            if found is None:
                column = pc.cast(table.column(attribute), pa.int64())
                found = (
                    pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64),
                    pc.is_null(column).to_numpy(zero_copy_only=False).astype(bool),
                )
                columns[attribute] = found
            rows = types == plan.type_names.index(type_name)
            measures[rows] = found[0][rows]
            missing[rows] = found[1][rows]
        return measures, missing

    def _check_order(
        self,
        types: np.ndarray,
        measures: np.ndarray,
        missing: np.ndarray,
        base: int,
        positions: np.ndarray | None = None,
    ) -> None:
        """Time windows need events in non-decreasing primary_time order."""
        at = (lambda row: base + row) if positions is None else (lambda row: int(positions[row]))
        timed = self._timed_type[types]
        if len(types) and timed.all() and not missing.any():
            # Every event has a time (the common case): in order iff no step back, checked
            # without gathering the timed rows (the rows of a step back are found below).
            first = self.last_time if self.last_time is not None else np.iinfo(np.int64).min
            if measures[0] >= first and not (measures[1:] < measures[:-1]).any():
                self.last_time = int(measures[-1])
                return
        rows = np.flatnonzero(timed)
        values = measures[rows]
        missing = missing[rows]
        if missing.any():
            raise EventError(
                "missing time value (the query's window needs it)", at(int(rows[np.argmax(missing)]))
            )
        if len(values) == 0:
            return
        first = self.last_time if self.last_time is not None else np.iinfo(np.int64).min
        previous = np.concatenate([[first], values[:-1]])
        bad = values < previous
        if bad.any():
            k = int(np.argmax(bad))
            raise out_of_order(at(int(rows[k])), int(values[k]), int(previous[k]), self.show_time)
        self.last_time = int(values[-1])

    # ------------------------------------------------------------------ state

    def export_state(self) -> dict:
        """The kernel's state arrays plus the stream position, last time and partition keys."""
        state = self.kernel.export_state()
        if self.consumed is not None:  # (the kernel ran without CONSUME BY: consume.py)
            state["consumed_at"], state["partition_consumed"] = self.consumed.export(state["partition_code"])
            state["consumed_at"] = np.array([state["consumed_at"]])
        if self.kept is not None:
            state.update(self.kept.export(self._in_use()))
        if self._counts is not None:  # STRICT: events seen per partition code
            state["sub_stream_counts"] = self._counts[: self.keys.count if self.keys is not None else 0].copy()
        state["position"] = np.array([self.position])
        state["last_time"] = np.array([] if self.last_time is None else [self.last_time], dtype=np.int64)
        state["partition_keys"] = list(self.keys.keys) if self.keys is not None else []
        if isinstance(self.keys, WindowKeyCodes):  # recycled codes: renumber the live ones 0..n-1
            codes = np.asarray(state["partition_code"], dtype=np.int64)
            state["partition_keys"] = [state["partition_keys"][c] for c in codes.tolist()]
            state["partition_code"] = np.arange(len(codes), dtype=np.int64)
        state["query"] = self.plan.checked.text
        if self.join is not None:
            state.update(self.join.export())
        if self.chain is not None:
            state.update(self.chain.export())
        return state

    def import_state(self, state: dict) -> None:
        """Restore a state made by ``export_state`` (same query; a saved one is validated by
        ``saved.check_state`` first)."""
        if "query" in state and state["query"] != self.plan.checked.text:
            raise ValueError("the saved state belongs to another query")
        self.kernel.import_state(state)
        if self.consumed is not None:
            self.consumed.load(int(state["consumed_at"][0]), state["partition_code"], state["partition_consumed"])
            clear_markers(self.kernel)  # (its own would drop runs: it runs without CONSUME BY)
        if self.kept is not None:
            self.kept.load(state)
            missing = np.setdiff1d(self.kernel.live_positions(), self.kept.kept_positions())
            if len(missing):
                raise ValueError("malformed kernel state: a node refers to an event without kept values")
        self.position = int(state["position"][0])
        self.last_time = int(state["last_time"][0]) if len(state["last_time"]) else None
        if self.keys is not None:
            self.keys.keys = [tuple(key) for key in state["partition_keys"]]
        if self.join is not None:
            self.join.load(state)
            if self.kept is not None and len(np.setdiff1d(self.join.live_positions(), self.kept.kept_positions())):
                raise ValueError("malformed kernel state: a join entry refers to an event without kept values")
        if self.chain is not None:
            self.chain.load(state)
            if self.kept is not None and len(np.setdiff1d(self.chain.carry["position"], self.kept.kept_positions())):
                raise ValueError("malformed kernel state: a carried event has no kept values")
        counts = state.get("sub_stream_counts")
        if counts is not None and self.post is not None and self.post.strict and self.keys is not None:
            counts = np.asarray(counts, dtype=np.int64)
            if len(counts) > self.keys.count or (len(counts) and counts.min() < 0):
                raise ValueError("malformed kernel state: sub-stream counts do not match the partitions")
            self._counts = np.zeros(max(16, 2 * self.keys.count), dtype=np.int64)
            self._counts[: len(counts)] = counts


PlanKernel.export_json = export_json  # type: ignore[attr-defined]
PlanKernel.import_json = import_json  # type: ignore[attr-defined]


def _new_int_table():
    from numba import types
    from numba.typed import Dict

    return Dict.empty(key_type=types.int64, value_type=types.int64)


def _encode_ints(values: np.ndarray, table, start: int) -> tuple[np.ndarray, int]:
    from ceql.runtime.kernel.compiled import encode_int_keys

    return encode_int_keys(values, table, start)
