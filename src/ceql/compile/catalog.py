"""The catalog: how every column of the input is typed, built once from the declarations.

One ``Catalog`` answers, for every path that reads events (the Python API, the file readers, the
command line and Spark), the same questions: which columns exist, of which ceql, Arrow and Spark
type, which event types declare each one, which attribute is an event type's primary_time and in
which unit its integers come, and which columns the queries need. The conversion of raw values
to the declared types (``ceql.runtime.conversion``) is driven by the ``Target`` each column gives
for each event type, so that all paths accept and reject exactly the same values.

Per query, ``Catalog.for_query`` keeps only the columns the query reads (``compile/plan.py``
builds it). A whole run of ``ceql run`` uses the catalog of the whole
schema, with the columns its queries read as ``required``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.errors import CeqlError
from ceql.lang.schema import STORAGE, Attribute, Schema

#: The column holding each event's type, in every input.
EVENT_TYPE = "event_type"

ARROW_TYPES = {"int": pa.int64(), "double": pa.float64(), "string": pa.string(), "boolean": pa.bool_()}
#: Spark SQL type names (DDL), so that the local engine never imports pyspark.
SPARK_DDL = {"int": "bigint", "double": "double", "string": "string", "boolean": "boolean"}


#: The Arrow type of each storage kind.
ARROW_STORAGE = {"int": pa.int64(), "double": pa.float64(), "string": pa.string(), "boolean": pa.bool_()}


@dataclass(frozen=True)
class Target:
    """What values become: a declared type, the unit of integer times, the column's storage."""

    type: str  # int | double | string | boolean | primary_time
    unit: str = "ns"
    storage: str = ""  # int | double | string | boolean (defaults to the type's own)

    @property
    def kind(self) -> str:
        """The storage kind of the column."""
        return self.storage or STORAGE[self.type]

    @property
    def arrow_type(self) -> pa.DataType:
        return ARROW_STORAGE[self.kind]

    def expected(self) -> str:
        """What a valid value looks like, for messages."""
        if self.type == "primary_time":
            return f"a time (integer {self.unit} since 1970 or ISO-8601)"
        return {"int": "an integer", "double": "a number", "string": "a string", "boolean": "a boolean"}[
            self.type
        ]


@dataclass(frozen=True)
class Column:
    """One attribute name: how it is stored and how each declaring event type types it."""

    name: str
    storage: str  # int | double | string | boolean: the kind of the column's values
    declared: Mapping[str, Attribute]  # event type -> its declaration of the attribute

    @property
    def arrow_type(self) -> pa.DataType:
        return ARROW_TYPES[self.storage]

    @property
    def spark_ddl(self) -> str:
        return SPARK_DDL[self.storage]

    @property
    def event_types(self) -> tuple[str, ...]:
        """The event types that declare the attribute (sorted)."""
        return tuple(sorted(self.declared))

    @property
    def is_time(self) -> bool:
        """Whether the attribute is the primary_time of some event type."""
        return any(a.type == "primary_time" for a in self.declared.values())

    def target(self, event_type: str) -> Target:
        """What the values of this column become for rows of ``event_type``."""
        attribute = self.declared[event_type]
        return Target(attribute.type, attribute.time_unit, self.storage)

    def targets(self) -> dict[Target, tuple[str, ...]]:
        """Each distinct target and the event types that use it (usually one target)."""
        groups: dict[Target, list[str]] = {}
        for event_type in self.event_types:
            groups.setdefault(self.target(event_type), []).append(event_type)
        return {target: tuple(types) for target, types in groups.items()}


def storage_of(attributes: Iterable[Attribute]) -> str:
    """The one storage kind of an attribute name (declarations guarantee it is consistent)."""
    kinds = {STORAGE[a.type] for a in attributes}
    if len(kinds) == 1:
        return kinds.pop()
    if kinds == {"int", "double"}:
        return "double"
    raise CeqlError(f"inconsistent declarations: {sorted(kinds)}")  # declare() prevents it


@dataclass
class Catalog:
    """The columns of the input and their types, for a schema (or for one query's part of it)."""

    schema: Schema
    event_types: tuple[str, ...]  # the event types whose attributes are read (sorted)
    columns: dict[str, Column]  # in declaration order
    required: frozenset[str]  # columns the queries read: the input must have them
    #: How the input gave each time column (e.g. ``timestamp[us, tz=UTC]``, ``ISO-8601``,
    #: ``integer ms``): filled by the conversions; outputs show times so (compile/output_schema.py).
    time_inputs: dict[str, str] = field(default_factory=dict, compare=False)
    _declares: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ construction

    @classmethod
    def of_schema(cls, schema: Schema, required: Iterable[str] = ()) -> Catalog:
        """Every declared attribute of every event type; ``required`` names the ones read."""
        return cls._build(schema, sorted(schema.event_types), None, required)

    @classmethod
    def for_query(cls, schema: Schema, columns: Iterable[str]) -> Catalog:
        """The columns a query reads (all of them required), for every event type declaring
        them: an event of any type carries its values (a window measures every event)."""
        names = set(columns)
        return cls._build(schema, sorted(schema.event_types), names, names)

    @classmethod
    def _build(
        cls, schema: Schema, types: Sequence[str], names: set[str] | None, required: Iterable[str]
    ) -> Catalog:
        declared: dict[str, dict[str, Attribute]] = {}
        for type_name in types:
            for attribute in schema.event_types[type_name].attributes:
                if names is None or attribute.name in names:
                    declared.setdefault(attribute.name, {})[type_name] = attribute
        # The storage kind is the schema's (all event types), so that the subset of one query
        # types a column exactly as the whole schema does.
        everywhere: dict[str, list[Attribute]] = {}
        for decl in schema.event_types.values():
            for attribute in decl.attributes:
                everywhere.setdefault(attribute.name, []).append(attribute)
        columns = {
            name: Column(name, storage_of(everywhere[name]), by_type) for name, by_type in declared.items()
        }
        return cls(schema, tuple(types), columns, frozenset(required) & frozenset(columns))

    # ------------------------------------------------------------------ questions

    @cached_property
    def declared_names(self) -> frozenset[str]:
        """Every attribute name of the schema (names outside it are unknown columns)."""
        return frozenset(a.name for d in self.schema.event_types.values() for a in d.attributes)

    @cached_property
    def known_types(self) -> tuple[str, ...]:
        """Every declared event type (rows of other types are bad input)."""
        return tuple(sorted(self.schema.event_types))

    def time_column(self, event_type: str) -> str | None:
        """The primary_time attribute of an event type (None if it has none)."""
        decl = self.schema.event_types.get(event_type)
        return decl.time_attribute if decl is not None else None

    def time_columns(self) -> dict[str, str]:
        """Event type -> its primary_time attribute, for the types that have one."""
        out = {}
        for name in self.known_types:
            time = self.time_column(name)
            if time is not None:
                out[name] = time
        return out

    def declares(self, name: str) -> np.ndarray:
        """For each known event type (sorted, then one slot for unknown types): whether it
        declares column ``name`` among the types this catalog reads."""
        cached = self._declares.get(name)
        if cached is None:
            column = self.columns[name]
            cached = np.array([t in column.declared for t in self.known_types] + [False], dtype=bool)
            self._declares[name] = cached
        return cached

    def partition_groups(self, partition_by: Sequence[Sequence[str]]) -> dict[str, tuple[str, ...]]:
        """Event type -> the first PARTITION BY list whose attributes it all declares."""
        out: dict[str, tuple[str, ...]] = {}
        for name in self.known_types:
            decl = self.schema.event_types[name]
            for group in partition_by:
                if all(decl.attribute(a) is not None for a in group):
                    out[name] = tuple(group)
                    break
        return out

    # ------------------------------------------------------------------ checks of the input

    def check_columns(self, names: Iterable[str], source: str) -> tuple[list[str], list[str]]:
        """Check the column names of an input (a header, a Parquet or Arrow schema).

        Raises CeqlError if ``event_type`` or a required column is missing. Returns (unknown
        columns, declared columns absent from the input that no query reads), for warnings.
        """
        present = list(names)
        if EVENT_TYPE not in present:
            raise CeqlError(f"{source}: the input has no {EVENT_TYPE} column (columns: {_shown(present)})")
        missing = sorted(self.required - set(present))
        if missing:
            raise CeqlError(f"{source}: {self.missing_message(missing)}")
        declared = self.declared_names
        unknown = [n for n in present if n != EVENT_TYPE and n not in declared]
        absent = [n for n in self.columns if n not in present]
        return unknown, absent

    def missing_message(self, missing: Sequence[str]) -> str:
        """Why an input lacking required columns cannot be read (names each column)."""
        parts = [f"{name} (declared by {', '.join(self.columns[name].event_types)})" for name in missing]
        noun = "column" if len(missing) == 1 else "columns"
        return f"the input has no {noun} {', '.join(parts)}, which the query reads"

    # ------------------------------------------------------------------ schemas of typed data

    @cached_property
    def typed_schema(self) -> pa.Schema:
        """The schema of typed tables: event_type, then each column with its Arrow type."""
        return pa.schema(
            [(EVENT_TYPE, pa.string())] + [(c.name, c.arrow_type) for c in self.columns.values()]
        )

    def arrow_schema(self) -> pa.Schema:
        """The schema of typed tables (see ``typed_schema``)."""
        return self.typed_schema

    @property
    def arrow_types(self) -> dict[str, pa.DataType]:
        """Column name -> its Arrow type in typed tables."""
        return {name: column.arrow_type for name, column in self.columns.items()}

    def spark_ddl(self) -> str:
        """The typed columns as a Spark DDL string (``event_type string, id bigint, ...``)."""
        fields = [f"`{EVENT_TYPE}` string"] + [f"`{c.name}` {c.spark_ddl}" for c in self.columns.values()]
        return ", ".join(fields)

    def spark_fields(self) -> list[Any]:
        """The typed columns as Spark StructFields (imports pyspark: Spark paths only)."""
        from pyspark.sql import types as T

        kinds = {
            "int": T.LongType(),
            "double": T.DoubleType(),
            "string": T.StringType(),
            "boolean": T.BooleanType(),
        }
        return [T.StructField(EVENT_TYPE, T.StringType())] + [
            T.StructField(c.name, kinds[c.storage]) for c in self.columns.values()
        ]

    # ------------------------------------------------------------------ how times came in

    @property
    def int_types(self) -> dict[str, frozenset[str]]:
        """Columns stored as double whose name some event types declare int -> those types
        (their rows read the values as ints again: exact ``/`` and ``%``)."""
        out = {}
        for name, column in self.columns.items():
            ints = frozenset(t for t, a in column.declared.items() if a.type == "int")
            if column.storage == "double" and ints:
                out[name] = ints
        return out

    def checking(self) -> Catalog:
        """The catalog that types and checks an input for this one: every declared attribute
        (a bad value in a column no query reads is a bad row on every path, as the file
        readers have it), the same required columns, and the same record of how times come
        (one dict, shared). This catalog itself when it already has every attribute."""
        every = {a.name for d in self.schema.event_types.values() for a in d.attributes}
        if set(self.columns) == every and self.event_types == self.known_types:
            return self
        full = Catalog.of_schema(self.schema, self.required)
        full.time_inputs = self.time_inputs
        return full

    def note_time_input(self, name: str, kind: str) -> None:
        """Record how the input gave a time column: the first kind seen, unless integers come
        later (an input that mixes integer times with timestamps shows them all as integers)."""
        if kind.startswith("integer") or name not in self.time_inputs:
            self.time_inputs[name] = kind


def _shown(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (", ..." if len(names) > limit else "") if names else "none"


__all__ = ["ARROW_TYPES", "EVENT_TYPE", "SPARK_DDL", "Catalog", "Column", "storage_of"]
