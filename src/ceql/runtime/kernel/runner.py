"""Run a Plan through the compiled kernel: Arrow tables in, Arrow tables (or Match objects) out.

Per batch, vectorised: event symbols (type and predicate bits), window measures as int64
(positions, nanoseconds or the window attribute's values; never floats), the relevance filter,
and partition key codes (a persistent dictionary, so codes are stable across batches). The
kernel then does the per-event work and the enumeration; projection and Arrow building are
vectorised again (output.py).

Plans the kernel does not evaluate (``unsupported`` says why): conditions across events
(registers), measures, the strategies NEXT, LAST and MAX, STRICT when it cannot be rewritten
into contiguous operators, complex events that several runs derive (except with ANY),
attribute windows over non-integer attributes, and LIMIT with a projection other than ``*``
(the first n distinct projected matches need deduplication during the enumeration, which the
Python evaluator does). These stay on the Python evaluator.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.output_schema import OutputSchema, output_schema
from ceql.compile.plan import Plan
from ceql.errors import EventError, UnsupportedQueryError
from ceql.lang import ast
from ceql.lang.visit import walk
from ceql.match import Match
from ceql.runtime.arrow import MatchColumns, MatchRows, record_batch
from ceql.runtime.batches import builder_for, iter_tables
from ceql.runtime.kernel.compiled import MAX_MEASURE, MAX_WINDOW, MIN_MEASURE, MISSING
from ceql.runtime.kernel.engine import KernelEvaluator, KernelMatches
from ceql.runtime.kernel.output import Projection, project


def unsupported(plan: Plan) -> str | None:
    """Why the kernel cannot evaluate this plan, or None if it can."""
    if getattr(plan, "absence", None) is not None:
        return "NOT FOLLOWED BY"
    if plan.registers is not None:
        return "conditions across events (registers)"
    if plan.measures is not None:
        return "measures"
    if plan.strategy in ("NEXT", "LAST", "MAX"):
        return f"strategy {plan.strategy}"
    if plan.strict_filter:
        return "STRICT over NOT(...) or ALL"
    if plan.repeats and plan.strategy != "ANY":
        return "complex events that several runs derive (repeats are dropped at output)"
    within = plan.checked.query.within
    if within is not None:
        if within.value >= MAX_WINDOW:
            return "a window of 2**61 units or more"
        if within.kind == "attribute" and plan.catalog.arrow_types.get(within.attribute or "") != pa.int64():
            return f"a window over the non-integer attribute {within.attribute}"
    projection = Projection.from_plan(plan)
    if projection.merges and plan.limit is not None:
        return "LIMIT with a projection other than *"
    return None


class KeyCodes:
    """Dense int64 codes for PARTITION BY keys (tuples of values), stable across batches."""

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
        self.codes: dict[tuple, int] = {}  # keys coded in Python (all but plain integers)
        self._segments: list = []  # in code order: arrays of integer keys, or single tuples
        self.count = 0  # codes given so far
        self._ints = None  # int key -> code, for the compiled coder (built on first use)
        self._keys: list[tuple] | None = []

    @property
    def keys(self) -> list[tuple]:
        """code -> key tuple (built when asked: only reported partitions and saved states
        need them)."""
        if self._keys is None or len(self._keys) != self.count:
            keys: list[tuple] = []
            for segment in self._segments:
                if isinstance(segment, tuple):
                    keys.append(segment)
                else:
                    keys.extend((value,) for value in segment.tolist())
            self._keys = keys
        return self._keys

    @keys.setter
    def keys(self, keys: list[tuple]) -> None:
        self._segments = list(keys)
        self.count = len(keys)
        self._keys = list(keys)
        self.codes = {key: code for code, key in enumerate(keys)}
        self._ints = None

    def encode(self, table: pa.Table, rows: np.ndarray, types: np.ndarray) -> np.ndarray:
        """The key code of each of ``rows`` (-1: the event has no key: no group, or a null)."""
        out = np.full(len(rows), -1, dtype=np.int64)
        row_types = types[rows]
        for group, group_types in self.groups:
            selected = np.nonzero(np.isin(row_types, group_types))[0]
            if len(selected) == 0:
                continue
            chosen = rows[selected]
            whole = len(chosen) == table.num_rows  # every row, in order (rows ascend)
            if len(group) == 1:
                column = table.column(group[0])
                column = column if whole else column.take(pa.array(chosen))
                if column.null_count == 0 and pa.types.is_integer(column.type):
                    # The common case: integer keys, coded by a compiled hash table (no Python
                    # work per key).
                    values = np.asarray(column.to_numpy(), dtype=np.int64)
                    out[selected] = self._int_codes(values)
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
                    values = [int(v) if v == v and float(v).is_integer() else v for v in values]
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
            lookup = np.array([self._code(key) for key in uniques] + [-1], dtype=np.int64)
            out[selected] = lookup[combined]  # -1 indexes the trailing -1: no key
        return out

    def _int_codes(self, values: np.ndarray) -> np.ndarray:
        if self._ints is None:
            self._ints = _new_int_table()
            for key, code in self.codes.items():
                if len(key) == 1 and type(key[0]) is int:
                    self._ints[key[0]] = code
        start = self.count
        codes, end = _encode_ints(values, self._ints, start)
        if end > start:
            fresh = codes >= start
            firsts = np.unique(codes[fresh], return_index=True)[1]  # first appearance, in code order
            self._segments.append(values[fresh][firsts])
            self.count = end
        return codes

    def _code(self, key: tuple) -> int:
        if len(key) == 1 and type(key[0]) is int and self._ints is not None:
            found = self._ints.get(key[0], -1)
            if found >= 0:
                return found
        found = self.codes.get(key)
        if found is None:
            found = self.count
            self.count += 1
            self.codes[key] = found
            self._segments.append(key)
            if self._ints is not None and len(key) == 1 and type(key[0]) is int:
                self._ints[key[0]] = found
        return found


class PlanKernel:
    """Incremental evaluation of one plan with the compiled kernel."""

    def __init__(self, plan: Plan) -> None:
        reason = unsupported(plan)
        if reason is not None:
            raise UnsupportedQueryError(f"the compiled kernel does not evaluate {reason}")
        self.plan = plan
        self.projection = Projection.from_plan(plan)
        within = plan.checked.query.within
        self.partitioned = bool(plan.partition_groups)
        self.kernel = KernelEvaluator(
            plan.det,
            window=None if within is None else int(within.value),
            monotone=plan.monotone,
            consume=plan.consume,
            strategy="ANY" if plan.strategy == "ANY" else "ALL",
            limit=plan.limit,
            partitioned=self.partitioned,
            whole_triggers=self.projection.merges,
            labels=self.projection.needs_labels,
            # START: a (sub-)stream whose runs all died stays without runs.
            anchored=any(isinstance(node, ast.Start) for node in walk(plan.formula, formulas_only=True)),
        )
        self.keys = KeyCodes(plan) if self.partitioned else None
        # Matches name their partition unless the key was derived from an equality.
        self.reports_partition = self.partitioned and plan.auto_partition is None
        self.position = 0
        self.last_time: int | None = None
        # Types the input (an evaluator gives its own, which records how its input gave times).
        self.builder = builder_for(plan)
        self._irrelevant = np.zeros(0, dtype=bool)
        self._type_array = pa.array(plan.type_names, pa.string())
        self._time_types = np.array(
            [i for i, name in enumerate(plan.type_names) if name in plan.time_attributes], dtype=np.int64
        )

    # ------------------------------------------------------------------ public API

    def process_table(self, table: pa.Table) -> Iterator[KernelMatches]:
        """Complex events of one normalised table (BatchBuilder output), in chunks."""
        plan = self.plan
        n = table.num_rows
        base = self.position
        types, symbols = self._symbols(table)
        measures = self._measures(table, types, base)
        if plan.ordered_time:
            self._check_order(types, measures, base)
        relevant = np.nonzero(~self._irrelevant[symbols])[0]
        codes = self.keys.encode(table, relevant, types) if self.keys is not None else None
        self.position = base + n
        yield from self.kernel.process_chunks(symbols[relevant], relevant + base, measures[relevant], codes)

    def record_batches(self, events: Any, schema: OutputSchema | None = None) -> Iterator[pa.RecordBatch]:
        """Matches over ``events`` (dicts, pandas or Arrow) as record batches of the output
        schema (default: ``output_schema(plan)`` once the first batch has been read)."""
        for table in iter_tables(events, self.builder):
            schema = schema or self.output_schema()
            for chunk in self.process_table(table):
                yield record_batch(schema, self.columns(chunk))

    def columns(self, chunk: KernelMatches) -> MatchColumns:
        """A chunk of complex events, projected, with the partition keys when reported: what
        ``record_batch`` (the output schema's rows) and ``MatchRows`` (Match views) take.
        Measures computed in the kernel's output pass go in ``MatchColumns.measures`` (name ->
        one raw value per match, times as int64 nanoseconds): both type and show them."""
        columns = project(chunk, self.projection)
        if self.reports_partition and self.keys is not None:
            columns.keys = self.keys.keys
        else:
            columns.partition = None
        return columns

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

    def _symbols(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        plan = self.plan
        type_index = pc.index_in(table.column("event_type"), value_set=self._type_array)
        types = type_index.to_numpy(zero_copy_only=False).astype(np.int64)
        masks = np.zeros(table.num_rows, dtype=np.uint64)
        for bit, values in enumerate(plan.compiled.predicates.evaluate(table)):
            masks |= values.astype(np.uint64) << np.uint64(bit)
        symbols = plan.symbols.ids_for(types, masks)
        known = len(plan.symbols.entries)
        if known > len(self._irrelevant):
            extra = [plan.det.irrelevant(s) for s in range(len(self._irrelevant), known)]
            self._irrelevant = np.concatenate([self._irrelevant, np.array(extra, dtype=bool)])
        return types, symbols

    def _measures(self, table: pa.Table, types: np.ndarray, base: int) -> np.ndarray:
        """int64 window measures; MISSING for events without one (types the window does not
        concern, nulls)."""
        plan = self.plan
        n = table.num_rows
        if plan.window_kind is None:
            return np.zeros(n, dtype=np.int64)
        if plan.window_kind == "events":
            return np.arange(base, base + n, dtype=np.int64)
        measures = np.full(n, MISSING, dtype=np.int64)
        columns: dict[str, np.ndarray] = {}
        for type_name, attribute in plan.time_attributes.items():
            values = columns.get(attribute)
            if values is None:
                column = pc.cast(table.column(attribute), pa.int64())
                values = pc.fill_null(column, MISSING).to_numpy(zero_copy_only=False).astype(np.int64)
                columns[attribute] = values
            rows = types == plan.type_names.index(type_name)
            measures[rows] = values[rows]
        wild = ((measures < MIN_MEASURE) & (measures != MISSING)) | (measures > MAX_MEASURE)
        if wild.any():
            row = int(np.argmax(wild))
            raise EventError(
                f"window value {int(measures[row])} outside the kernel's range [-2**62, 2**62]", base + row
            )
        return measures

    def _check_order(self, types: np.ndarray, measures: np.ndarray, base: int) -> None:
        """Time windows need events in non-decreasing primary_time order."""
        rows = np.nonzero(np.isin(types, self._time_types))[0]
        values = measures[rows]
        missing = values == MISSING
        if missing.any():
            raise EventError(
                "missing time value (the query's window needs it)", base + int(rows[np.argmax(missing)])
            )
        if len(values) == 0:
            return
        first = self.last_time if self.last_time is not None else np.iinfo(np.int64).min
        previous = np.concatenate([[first], values[:-1]])
        bad = values < previous
        if bad.any():
            k = int(np.argmax(bad))
            raise EventError(
                f"out of order: time {int(values[k])} after {int(previous[k])} (a time window needs events in "
                "time order; sort the input or declare CREATE QUARANTINE to reorder late events)",
                base + int(rows[k]),
            )
        self.last_time = int(values[-1])

    # ------------------------------------------------------------------ state

    def export_state(self) -> dict:
        """The kernel's state arrays plus the stream position, last time and partition keys."""
        state = self.kernel.export_state()
        state["position"] = np.array([self.position])
        state["last_time"] = np.array([] if self.last_time is None else [self.last_time], dtype=np.int64)
        state["partition_keys"] = list(self.keys.keys) if self.keys is not None else []
        state["query"] = self.plan.checked.text
        return state

    def import_state(self, state: dict) -> None:
        """Restore a state made by ``export_state`` (same query)."""
        if state.get("query") != self.plan.checked.text:
            raise ValueError("the saved state belongs to another query")
        self.kernel.import_state(state)
        self.position = int(state["position"][0])
        self.last_time = int(state["last_time"][0]) if len(state["last_time"]) else None
        if self.keys is not None:
            self.keys.keys = [tuple(key) for key in state["partition_keys"]]


STATE_FORMAT = "ceql-kernel-state"


def is_kernel_state(blob: bytes) -> bool:
    """Whether an evaluator state was saved by the kernel (``PlanKernel.export_json``)."""
    try:
        head = zlib.decompress(blob)[:64]
    except zlib.error:
        return False
    return STATE_FORMAT.encode() in head


def _export_json(runner: PlanKernel) -> bytes:
    from ceql.runtime.state import _encode

    state = runner.export_state()
    document: dict = {"format": STATE_FORMAT, "format_version": 1}
    for name, value in state.items():
        if isinstance(value, np.ndarray):
            document[name] = ["a", str(value.dtype), value.tolist()]
        elif name in ("det_states", "partition_keys"):
            document[name] = [_encode(v if not isinstance(v, tuple) else v) for v in value]
        elif name == "label_sets":
            document[name] = [list(v) for v in value]
        else:
            document[name] = value
    return zlib.compress(json.dumps(document, separators=(",", ":")).encode())


def _import_json(runner: PlanKernel, blob: bytes) -> None:
    from ceql.runtime.state import StateError, _decode

    try:
        document = json.loads(zlib.decompress(blob))
    except (zlib.error, ValueError) as exc:
        raise StateError(f"unreadable kernel state: {exc}") from None
    if (
        not isinstance(document, dict)
        or document.get("format") != STATE_FORMAT
        or document.get("format_version") != 1
    ):
        raise StateError("not a kernel state of a known version")
    state: dict = {}
    try:
        for name, value in document.items():
            if name in ("format", "format_version"):
                continue
            if isinstance(value, list) and len(value) == 3 and value[0] == "a":
                if value[1] not in ("int64", "bool"):
                    raise StateError(f"unexpected array type {value[1]!r}")
                state[name] = np.array(value[2], dtype=value[1])
            elif name in ("det_states", "partition_keys"):
                state[name] = [_decode(v) for v in value]
            elif name == "label_sets":
                state[name] = [tuple(str(x) for x in v) for v in value]
            else:
                state[name] = value
        runner.import_state(state)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise StateError(f"malformed kernel state: {exc}") from None


PlanKernel.export_json = _export_json  # type: ignore[attr-defined]
PlanKernel.import_json = _import_json  # type: ignore[attr-defined]


def _new_int_table():
    from numba import types
    from numba.typed import Dict

    return Dict.empty(key_type=types.int64, value_type=types.int64)


def _encode_ints(values: np.ndarray, table, start: int) -> tuple[np.ndarray, int]:
    from ceql.runtime.kernel.compiled import encode_int_keys

    return encode_int_keys(values, table, start)
