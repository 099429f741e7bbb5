"""Equality correlation as a hash join inside the window (issue 34).

A plan whose pattern is a sequence of single labelled events, ``A AS x ; B AS y ; ...``, with
every label linked to the others by key equalities (``FILTER x.id = y.id``, or ``PARTITION BY``
over the labels: compile/autopartition.py turns them into a key per event type), inside a
window over never-decreasing measures (events, time), with ALL, no CONSUME BY, LIMIT,
projection or checks, has exactly these complex events: one event per role, roles in stream
order, the same key, the first and the last within the window (measures are computed per
complex event from the kept values, as on the automaton). The automaton keeps a partition per
key for it (created, grown and dropped as ids come and go); here the compiled loop
(``joinloop.join_run``) keeps one hash table key -> the latest event of each role with that
key, and per event the previous one of its role and key. An event of the last role walks those
chains back to the window's edge and reports each combination; memory is the events of the
window (``join_compact`` drops the expired prefix), and the work per event is a hash probe plus
the complex events it reports, whatever the window's size.

Integer keys are hashed as they are (no dictionary of every id seen); other keys (strings,
doubles, several attributes) take the dense codes of ``KeyCodes``, which equate a double with
the int it equals and give a null or NaN no code.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.plan import Plan
from ceql.lang import ast
from ceql.runtime.kernel import compiled as k
from ceql.runtime.kernel import joinloop as jl

INITIAL_ENTRIES = 1 << 12
INITIAL_BITS = 10  # slots of the table at first: 2**10
INITIAL_MATCHES = 1 << 12
MAX_CHUNK_MATCHES = 1 << 18  # complex events per output chunk
STATE_PREFIX = "join."  # saved state: the live entries (saved.py validates them)
STATE_FIELDS = ("position", "measure", "key", "role", "now")  # (and value.i / valid.i per linked attribute)
_ARGS = ["C", "W"]


@dataclass(frozen=True)
class JoinShape:
    """The roles of a join plan: event type index and label of each, in sequence order; the
    equalities beyond the key (``links``: role a, index in ``attributes``, role b, index, with
    a < b), checked on probe; whether the key is a reported PARTITION BY key."""

    types: tuple[int, ...]
    labels: tuple[str, ...]
    int_keys: bool  # every key attribute is an integer column (hashed as it is)
    attributes: tuple[str, ...] = ()  # the integer attributes the links compare
    links: tuple[tuple[int, int, int, int], ...] = ()
    reported: bool = False  # PARTITION BY [a]: each complex event names its key


def join_shape(source: Plan, plan: Plan, post: object | None, measures: object | None) -> JoinShape | None:
    """The join this plan is (``plan``: the one the kernel runs, ``post``: its checks per
    complex event, which may only be equalities between two labels' integer attributes), or
    None when it needs the automaton. The key: the equalities routed by
    compile/autopartition.py, or a query's PARTITION BY (a sub-stream per key: with ``;`` and
    ALL, exactly the complex events whose events share the key, positions and windows those
    of the whole stream)."""
    within = plan.checked.query.within
    if (
        not plan.partition_groups
        or within is None
        or plan.window_kind not in ("events", "time")
        or not plan.monotone
        or int(within.value) < 1
        or any(p.strategy != "ALL" or p.consume != "NONE" or p.limit is not None for p in (plan, source))
        or any(p.projection is not None and p.projection.kind != "star" for p in (plan, source))
    ):
        return None
    formula = plan.formula
    if post is not None:
        if not isinstance(formula, ast.Filter) or len(plan.compiled.predicates):
            return None
        formula = formula.body  # (its condition is what ``post`` checks)
    roles = sequence_roles(plan, formula, contiguous=False)
    if roles is None or any(plan.type_names[t] not in plan.partition_types for t in roles[0]):
        return None
    types, labels = roles
    attributes: list[str] = []
    links: list[tuple[int, int, int, int]] = []
    if post is not None:
        found = equality_links(source, plan, post, types, labels)
        if found is None:
            return None
        for (ra, a), (rb, b) in found:
            for name in (a, b):
                if name not in attributes:
                    attributes.append(name)
            links.append((ra, attributes.index(a), rb, attributes.index(b)))
    arrow_types = plan.catalog.arrow_types
    int_keys = all(
        len(group) == 1 and arrow_types.get(group[0]) == pa.int64() for group in plan.partition_groups
    )
    reported = plan.auto_partition is None
    return JoinShape(tuple(types), tuple(labels), int_keys, tuple(attributes), tuple(links), reported)


def label_roles(source: Plan, labels: list[str]) -> dict[str, int]:
    """Each label's role (index in ``labels``), also under the compiler's own labels, which the
    checks per complex event name them by."""
    role_of = {label: r for r, label in enumerate(labels)}
    for site in source.compiled.sites:
        for label, role in site.own_roles.items():
            if label in role_of:
                role_of[role.event_label] = role_of[label]
    return role_of


def only_condition(post: Any, window: bool = False) -> bool:
    """Whether the checks per complex event are one condition and nothing else (and, where
    ``window``, maybe the window over a double attribute)."""
    return not (
        post.groups
        or post.strict
        or post.distinct
        or post.instances
        or post.select is not None
        or post.unless
        or post.predicates is not None and len(post.predicates)
        or (post.window is not None and not window)
        or post.condition is None
    )


def attribute_compares(
    source: Plan, plan: Plan, post: Any, types: list[int], labels: list[str], ops: Container[str], kinds: Container[str]
) -> list[tuple[str, tuple[int, str], tuple[int, str]]] | None:
    """The checks as comparisons (an operator of ``ops``) of one role's attribute with
    another's, each (operator, (role, attribute), (role, attribute)), attributes of a storage
    in ``kinds`` that every role's type declares and that no type declares otherwise; None
    for anything else (the checks name the roles by the compiler's own labels: mapped back)."""
    if len(set(labels)) != len(labels):
        return None
    role_of = label_roles(source, labels)
    catalog = plan.catalog
    cond = post.condition
    found = []
    for part in cond.parts if isinstance(cond, ast.And) else (cond,):
        if not (
            isinstance(part, ast.Compare)
            and part.op in ops
            and isinstance(part.left, ast.Attr)
            and isinstance(part.right, ast.Attr)
        ):
            return None
        sides = []
        for attr in (part.left, part.right):
            role = role_of.get(attr.label or "")
            column = catalog.columns.get(attr.name)
            if role is None or column is None or column.storage not in kinds:
                return None
            if attr.name in catalog.int_types:
                return None  # ints in some event types, doubles in others: exact rules per value
            if plan.type_names[types[role]] not in column.declared:
                return None
            sides.append((role, attr.name))
        found.append((part.op, sides[0], sides[1]))
    return found


def equality_links(
    source: Plan, plan: Plan, post: Any, types: list[int], labels: list[str]
) -> list[tuple[tuple[int, str], tuple[int, str]]] | None:
    """The checks as equalities between int64 attributes of two different roles, each
    ((role, attribute), (role, attribute)) with the earlier role first; None for anything else
    (a comparison but ``=``, a double, an attribute some role's type does not declare)."""
    if not only_condition(post):
        return None
    found = attribute_compares(source, plan, post, types, labels, ("=", "=="), ("int",))
    if found is None:
        return None
    arrow_types = plan.catalog.arrow_types
    links = []
    for _, a, b in found:
        if a[0] == b[0] or any(arrow_types.get(side[1]) != pa.int64() for side in (a, b)):
            return None  # (one event's two attributes: not a link)
        links.append((a, b) if a[0] < b[0] else (b, a))
    return links


def sequence_roles(plan: Plan, formula: ast.Formula, contiguous: bool) -> tuple[list[int], list[str]] | None:
    """The roles of a sequence (``:`` where ``contiguous``, else ``;``) of two or more single
    labelled events of types the plan knows: each one's event type index and label, in order;
    None for any other formula (the shapes of joins and chains)."""
    if not isinstance(formula, ast.Sequence) or formula.contiguous != contiguous or len(formula.parts) < 2:
        return None
    types: list[int] = []
    labels: list[str] = []
    for part in formula.parts:
        if not (isinstance(part, ast.Label) and isinstance(part.body, ast.EventType)) or part.body.stream:
            return None
        if part.body.name not in plan.type_names:
            return None
        types.append(plan.type_names.index(part.body.name))
        labels.append(part.label)
    return types, labels


class EqualityJoin:
    """The state and the compiled loop of one join plan (joinloop.py): entries of the window
    (position, measure, previous entry of the same role and key, key, role, linked values),
    and one hash table, key -> every role's latest entry."""

    def __init__(self, shape: JoinShape, window: int, max_nodes: int | None = None) -> None:
        self.shape = shape
        self.window = window
        self.max_nodes = max_nodes  # the live entries may not exceed it (as the automaton's nodes)
        self.roles = len(shape.types)
        # The roles each event type plays, a bit per role (indexed by type index).
        self.type_roles = np.zeros(max(shape.types) + 1, dtype=np.int64)
        for r, t in enumerate(shape.types):
            self.type_roles[t] |= 1 << r
        self.links = np.array(shape.links, dtype=np.int64).reshape(len(shape.links), 4)
        self.width = len(shape.attributes)  # linked attribute values per entry
        self.slot = jl.slot_words(self.roles)
        self.js = np.zeros(jl.J_SIZE, dtype=np.int64)
        self.js[jl.J_NOW] = k.MISSING
        self.ent = np.zeros((0, jl.entry_fields(self.width)), dtype=np.int64)
        self._allocate(INITIAL_ENTRIES)
        self._table(INITIAL_BITS)
        self.out_trigger = np.zeros(INITIAL_MATCHES, dtype=np.int64)
        self.out_pos = np.zeros(INITIAL_MATCHES * self.roles, dtype=np.int64)
        self.cur = np.zeros(self.roles, dtype=np.int64)

    def _allocate(self, capacity: int, keep: int = 0) -> None:
        """Entry rows for ``capacity`` entries (the first ``keep`` copied)."""
        if capacity > jl.MAX_ENTRIES:
            raise MemoryError(f"a join window of more than {jl.MAX_ENTRIES:,} live events")
        ent = np.zeros((capacity, self.ent.shape[1]), dtype=np.int64)
        ent[:keep] = self.ent[:keep]
        self.ent = ent

    def _table(self, bits: int) -> None:
        """An empty table of 2**bits slots (``compact`` fills it)."""
        self.bits = bits
        self.tab = np.full((1 << bits) * self.slot, -1, dtype=np.int64)

    @property
    def entries(self) -> int:
        return int(self.js[jl.J_ENTRIES])

    @property
    def state_fields(self) -> tuple[str, ...]:
        """The names (less STATE_PREFIX) of the arrays ``export`` gives."""
        linked = tuple(f"{kind}.{a}" for a in range(self.width) for kind in ("value", "valid"))
        return STATE_FIELDS + linked

    def process(
        self,
        types: np.ndarray,
        positions: np.ndarray,
        measures: np.ndarray,
        keys: np.ndarray,
        valid: np.ndarray,
        values: np.ndarray | None = None,
        present: np.ndarray | None = None,
    ):
        """Complex events of a batch: yields (triggers, positions (n, roles)) chunks.
        ``values`` / ``present``: the linked attributes' values, (n, width), and which are not
        missing."""
        n = len(types)
        if values is None or present is None:
            values, present = np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0), dtype=np.bool_)
        values = np.require(values, np.int64, _ARGS)
        present = np.require(present, np.bool_, _ARGS)
        types = np.require(types, np.int64, _ARGS)
        positions = np.require(positions, np.int64, _ARGS)
        measures = np.require(measures, np.int64, _ARGS)
        keys = np.require(keys, np.int64, _ARGS)
        valid = np.require(valid, np.bool_, _ARGS)
        if len(self.out_trigger) < min(n, MAX_CHUNK_MATCHES):
            # Room for a complex event per event of the batch at once: a join often reports
            # about that many, and each overflow is a return to Python and a copy.
            while len(self.out_trigger) < min(n, MAX_CHUNK_MATCHES):
                self._grow_output()
        index, status = 0, None
        while status != jl.JOIN_DONE:  # resumed at ``index`` once Python made room
            status, index = jl.join_run(
                types, positions, measures, keys, valid, values, present, index, n, self.type_roles, self.roles,
                self.links, self.window, self.js, self.tab, self.slot, self.bits, self.ent, self.cur,
                self.out_trigger, self.out_pos, self.max_nodes or 0,
            )  # fmt: skip
            if status == jl.JOIN_ENTRIES_FULL:
                self._make_room()
            elif status == jl.JOIN_OUTPUT_FULL:
                if self.js[jl.J_NMATCH] and len(self.out_trigger) >= MAX_CHUNK_MATCHES:
                    yield self._take()
                else:
                    self._grow_output()
        if self.js[jl.J_NMATCH]:
            yield self._take()

    def _take(self) -> tuple[np.ndarray, np.ndarray]:
        m = int(self.js[jl.J_NMATCH])
        self.js[jl.J_NMATCH] = 0
        if 2 * m < len(self.out_trigger):  # (a copy: a view would keep the whole buffer alive)
            return self.out_trigger[:m].copy(), self.out_pos[: m * self.roles].copy()
        # Mostly full: hand the buffers over and write the next chunk into fresh ones.
        trigger, pos = self.out_trigger[:m], self.out_pos[: m * self.roles]
        self.out_trigger, self.out_pos = np.empty_like(self.out_trigger), np.empty_like(self.out_pos)
        return trigger, pos

    def _grow_output(self) -> None:
        size = 2 * len(self.out_trigger)
        m = int(self.js[jl.J_NMATCH])
        trigger = np.zeros(size, dtype=np.int64)
        trigger[:m] = self.out_trigger[:m]
        pos = np.zeros(size * self.roles, dtype=np.int64)
        pos[: m * self.roles] = self.out_pos[: m * self.roles]
        self.out_trigger, self.out_pos = trigger, pos

    def _make_room(self) -> None:
        """Drop the expired entries; grow the entries when the live ones fill more than half
        (or the room left is less than half the slots a compaction clears), and the table
        when its keys fill more than a quarter of its slots (each compaction clears the table
        and moves the live entries: it runs once per half of the capacity appended or a
        quarter of the slots filled, so its cost per entry stays small; memory is a few
        windows at most). Compacting at half rather than a quarter keeps a large window's
        entries and table half as large, so more of them stay in cache (the window's own
        cost). The table is sized by the keys of the window, not its entries: a few keys with
        many events each (users and their clicks) keep a small table."""
        live = int(self.js[jl.J_ENTRIES])  # (join_run compacted before it asked for room)
        check_bound(live, self.max_nodes)
        capacity = len(self.ent)
        cleared = 1 << self.bits  # slots each compaction clears
        if 2 * (live + self.roles) > capacity or cleared > 2 * (capacity - live):
            while 2 * (live + self.roles) > capacity or cleared > 2 * (capacity - live):
                capacity *= 2
            self._allocate(capacity, keep=live)
        keys = int(self.js[jl.J_KEYS])
        if 4 * (keys + self.roles) > (1 << self.bits):
            bits = self.bits + 1
            while 4 * (keys + self.roles) > (1 << bits):
                bits += 1
            self._table(bits)
            self.compact()

    def compact(self) -> int:
        """Drop the entries outside the window and rebuild the table; returns the entries kept."""
        heads = max(self.roles - 1, 1)
        return int(jl.join_compact(self.js, self.window, self.tab, self.slot, self.bits, self.ent, heads, True))

    def live_positions(self) -> np.ndarray:
        """The positions of the entries a later event may still join (a superset: the expired
        prefix goes at the next compaction)."""
        return self.ent[: self.entries, jl.E_POS]

    # ------------------------------------------------------------------ state

    def export(self) -> dict[str, np.ndarray]:
        """The live entries (oldest first) and the last measure."""
        n = self.compact()
        ent = self.ent
        state = {
            f"{STATE_PREFIX}position": ent[:n, jl.E_POS].copy(),
            f"{STATE_PREFIX}measure": ent[:n, jl.E_MEAS].copy(),
            f"{STATE_PREFIX}key": ent[:n, jl.E_KEY].copy(),
            f"{STATE_PREFIX}role": ent[:n, jl.E_ROLE].copy(),
            f"{STATE_PREFIX}now": np.array([self.js[jl.J_NOW]], dtype=np.int64),
        }
        for a in range(self.width):
            state[f"{STATE_PREFIX}value.{a}"] = ent[:n, jl.E_LINKED + 2 * a].copy()
            state[f"{STATE_PREFIX}valid.{a}"] = (ent[:n, jl.E_LINKED + 2 * a + 1] != 0).astype(np.int64)
        return state

    def load(self, state: dict) -> None:
        """Restore ``export``'s arrays (checked by saved.check_state)."""
        n = len(state[f"{STATE_PREFIX}position"])
        capacity = INITIAL_ENTRIES
        while capacity < 2 * n + 2:
            capacity *= 2
        self.js[:] = 0
        self.js[jl.J_NOW] = int(state[f"{STATE_PREFIX}now"][0])
        self._allocate(capacity)
        self._table(max(INITIAL_BITS, int(4 * (n + self.roles)).bit_length()))
        ent = self.ent
        for name, field in (("position", jl.E_POS), ("measure", jl.E_MEAS), ("key", jl.E_KEY), ("role", jl.E_ROLE)):
            ent[:n, field] = state[f"{STATE_PREFIX}{name}"]
        for a in range(self.width):
            ent[:n, jl.E_LINKED + 2 * a] = state[f"{STATE_PREFIX}value.{a}"]
            ent[:n, jl.E_LINKED + 2 * a + 1] = state[f"{STATE_PREFIX}valid.{a}"] != 0
        self.js[jl.J_ENTRIES] = n
        self.compact()


def check_bound(live: int, max_nodes: int | None) -> None:
    """The automaton's bound on stored partial matches (runtime/limits.py), for the join's
    entries and the chain's carried events: the same LimitError past ``max_nodes`` (None or
    0: no bound)."""
    if max_nodes and live > max_nodes:
        from ceql.runtime.limits import too_many_nodes

        raise too_many_nodes(live, max_nodes)


_PATTERNS: dict[tuple, np.ndarray] = {}  # shared read-only arrays of role_labels and steps


def _pattern(key: tuple, items: int, build) -> np.ndarray:
    """The first ``items`` of the pattern array ``key`` (``build(items)`` makes one of that
    many), read-only and shared by every chunk that asks for at most as many: the chunks of a
    join carry the same label ids and offsets, and fresh arrays cost a page fault every 4 KiB
    (a fifth of a 200k-event join's run)."""
    array = _PATTERNS.get(key)
    if array is None or len(array) < items:
        if len(_PATTERNS) >= 64:  # (queries come and go: keep a few)
            _PATTERNS.clear()
        array = build(max(items, 2 * len(array)) if array is not None else items)
        array.flags.writeable = False
        _PATTERNS[key] = array
    return array[:items]


def role_labels(label_ids: np.ndarray, count: int) -> np.ndarray:
    """The label-set id of every event of ``count`` complex events of one event per role
    (read-only)."""
    k = len(label_ids)
    key = ("labels", *label_ids.tolist())
    return _pattern(key, count * k, lambda items: np.tile(label_ids, -(-items // max(k, 1)))[:items])


def steps(count: int, step: int, kind: type = np.int64) -> np.ndarray:
    """0, step, 2 step, ...: ``count`` offsets of lists of ``step`` items each (read-only)."""
    if step == 0:
        return _pattern(("zeros", np.dtype(kind).str), count, lambda items: np.zeros(items, kind))
    return _pattern(("steps", step, np.dtype(kind).str), count, lambda items: np.arange(0, items * step, step, dtype=kind))


def int_keys(table: pa.Table, rows: np.ndarray, types: np.ndarray, group_of: np.ndarray, groups) -> tuple:
    """The int64 key of each of ``rows`` and whether it has one (its type has a key attribute
    and the value is not null), read from the integer key columns as they are."""
    n = len(rows)
    values = np.zeros(n, dtype=np.int64)
    valid = np.zeros(n, dtype=bool)
    whole = n == table.num_rows
    row_groups = group_of[types if whole else types[rows]]
    for g, group in enumerate(groups):
        data, ok = int_column(table, group[0])
        if not whole:
            data = data[rows]
            ok = ok[rows] if ok is not None else None
        mine = row_groups == g
        if len(groups) == 1:
            values = data
            valid = mine if ok is None else mine & ok
        else:
            values = np.where(mine, data, values)
            valid |= mine if ok is None else mine & ok
    return values, valid


def int_column(table: pa.Table, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """An integer column's values as int64 (0 where null) and which are not null (None: all)."""
    column = table.column(name)
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    nulls = column.null_count
    data = np.asarray((pc.fill_null(column, 0) if nulls else column).to_numpy(zero_copy_only=False), dtype=np.int64)
    return data, (column.is_valid().to_numpy(zero_copy_only=False) if nulls else None)


def linked_values(table: pa.Table, attributes: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The values of the attributes a join's links compare, one column each, (rows, width),
    and which are not missing (a type that does not declare one holds nulls there)."""
    n = table.num_rows
    values = np.empty((n, len(attributes)), dtype=np.int64)
    present = np.ones((n, len(attributes)), dtype=np.bool_)
    for a, name in enumerate(attributes):
        data, ok = int_column(table, name)
        values[:, a] = data
        if ok is not None:
            present[:, a] = ok
    return values, present


def fixed_columns(matches, projection, width: int, measures: dict | None = None):
    """``output.project`` for complex events of ``width`` events each, one per role, every
    complex event with the same label set per role (joins and chains): whole columns of the
    (n, width) position matrix, without per-event label work (``measures``: the chunk's, one
    value per complex event, passed through). A projection that may merge complex events
    (``projection.merges``) goes through ``project``."""
    from ceql.runtime.arrow import MatchColumns

    n = len(matches.trigger)
    matrix = matches.positions.reshape(n, width)
    sets = [matches.label_sets[int(i)] for i in matches.labels[:width]] if n else []
    roles = [projection.event(labels) for labels in sets]
    kept = [q for q, (keep, _) in enumerate(roles) if keep]
    positions = matrix[:, kept].ravel() if len(kept) < width else matches.positions
    # Offsets of n lists of c items each, one array per c (labels of one event share it),
    # int32 where they fit: what the Arrow list columns take without converting them.
    kind = np.int32 if (n + 1) * width < 2**31 else np.int64
    labels = {}
    for name in projection.output_labels:
        mine = [q for q, (_, reported) in enumerate(roles) if name in reported]
        if mine == [width - 1]:
            values = matches.trigger  # (the last role's event is the trigger)
        elif len(mine) == 1:
            values = np.ascontiguousarray(matrix[:, mine[0]])  # (a strided view made contiguous)
        else:
            values = matrix[:, mine].ravel()
        labels[name] = (steps(n + 1, len(mine), kind), values)
    offsets = steps(n + 1, len(kept), kind)
    return MatchColumns(matches.trigger, offsets, positions, labels, matches.partition, measures=measures or {})
