"""Read events from CSV (CORE's format), JSON Lines or Parquet into typed Arrow tables.

CSV and Parquet are read by pyarrow in chunks and validated column-wise (no per-row Python on
the fast path), so files larger than memory stream through. Every row is either accepted or
rejected with a reason (unknown event type, missing or extra field, unparsable value, bad time);
the caller's ErrorPolicy decides what happens to rejected rows, and counts them.

Tables have the column ``event_type`` and one column per attribute name of the schema, typed
from the declarations (int/primary_time -> int64 nanoseconds, double, string, boolean).
"""

from __future__ import annotations

import glob
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ceql.errors import CeqlError
from ceql.io.errors import ErrorPolicy, RowError
from ceql.lang.schema import Schema
from ceql.runtime.batches import ARROW_TYPES

BLOCK_SIZE = 4 << 20  # bytes of CSV per chunk
JSON_CHUNK = 50_000  # JSON Lines rows per chunk
_INT_RE = r"^\s*[+-]?\d+\s*$"
_FLOAT_RE = r"^\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|nan|infinity)\s*$"
_BOOL_VALUES = ["true", "false", "True", "False", "TRUE", "FALSE", "1", "0"]


@dataclass
class Chunk:
    """Accepted events of one chunk of input, with where they came from."""

    table: pa.Table
    source: str
    rows: np.ndarray  # input row number (0-based, within its source) of each accepted event
    sources: np.ndarray | None = None  # per-event source, when events of several inputs mix

    def source_of(self, index: int) -> str:
        return self.source if self.sources is None else str(self.sources[index])


def resolve_inputs(specs: list[str]) -> list[str]:
    """Expand globs; ``-`` is stdin. Raises CeqlError for inputs that match nothing."""
    paths: list[str] = []
    for spec in specs:
        if spec == "-":
            paths.append("-")
            continue
        matches = sorted(glob.glob(spec)) if glob.has_magic(spec) else [spec]
        if not matches or not all(os.path.exists(m) for m in matches):
            raise CeqlError(f"input not found: {spec}")
        for match in matches:
            if os.path.isdir(match):
                raise CeqlError(f"input is a directory: {match} (give files or a glob such as {match}/*.csv)")
        paths.extend(matches)
    return paths


def detect_format(path: str, explicit: str | None) -> str:
    if explicit:
        return explicit
    lower = path.lower()
    for suffix, kind in (
        (".csv", "csv"),
        (".jsonl", "jsonl"),
        (".ndjson", "jsonl"),
        (".json", "jsonl"),
        (".parquet", "parquet"),
        (".pq", "parquet"),
        (".corecsv", "csv"),
    ):
        if lower.endswith(suffix):
            return kind
    if path == "-":
        return "csv"
    raise CeqlError(f"cannot tell the format of {path}; use --input-format csv|jsonl|parquet")


class EventReader:
    """Reads and validates events for one schema."""

    def __init__(self, schema: Schema, policy: ErrorPolicy) -> None:
        self.schema = schema
        self.policy = policy
        self.columns: dict[str, pa.DataType] = {}
        self.time_columns: set[str] = set()
        for decl in schema.event_types.values():
            for attribute in decl.attributes:
                arrow = ARROW_TYPES[attribute.type]
                previous = self.columns.get(attribute.name)
                if previous is not None and previous != arrow:
                    if {previous, arrow} <= {pa.int64(), pa.float64()}:
                        arrow = pa.float64()
                    else:
                        arrow = pa.string()  # mixed kinds: kept as text (see column_types)
                self.columns[attribute.name] = arrow
                if attribute.type == "primary_time":
                    self.time_columns.add(attribute.name)
        self.arrow_schema = pa.schema([("event_type", pa.string())] + list(self.columns.items()))
        # For each event type: which columns it declares.
        self.declared = {name: {a.name for a in d.attributes} for name, d in schema.event_types.items()}

    # ------------------------------------------------------------------ entry

    def read(self, paths: list[str], input_format: str | None = None) -> Iterator[Chunk]:
        for path in paths:
            kind = detect_format(path, input_format)
            if kind == "csv":
                yield from self._csv(path)
            elif kind == "jsonl":
                yield from self._jsonl(path)
            elif kind == "parquet":
                yield from self._parquet(path)
            else:
                raise CeqlError(f"unknown input format {kind!r} (csv, jsonl or parquet)")

    # ------------------------------------------------------------------ formats

    def _csv(self, path: str) -> Iterator[Chunk]:
        source = "<stdin>" if path == "-" else path
        stream = sys.stdin.buffer if path == "-" else path
        try:
            reader = pacsv.open_csv(
                stream,
                read_options=pacsv.ReadOptions(block_size=BLOCK_SIZE),
                parse_options=pacsv.ParseOptions(newlines_in_values=False),
                convert_options=pacsv.ConvertOptions(
                    column_types=pa.schema([]),
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                    auto_dict_encode=False,
                    check_utf8=True,
                ),
            )
        except (pa.ArrowInvalid, OSError) as exc:
            raise CeqlError(f"{source}: cannot read CSV: {_first_line(exc)}") from None
        names = reader.schema.names
        if not names or names[0] != "event_type":
            raise CeqlError(
                f"{source}: the first CSV column must be event_type (CORE's format), found {names[:1]}"
            )
        unknown = [n for n in names[1:] if n not in self.columns]
        offset = 0
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except pa.ArrowInvalid as exc:
                raise CeqlError(f"{source}: malformed CSV after row {offset}: {_first_line(exc)}") from None
            table = pa.Table.from_batches([batch])
            # Every column as text first: validation then casts column-wise.
            table = pa.Table.from_arrays(
                [pc.cast(c, pa.string()) if c.type != pa.string() else c for c in table.columns], names=names
            )
            chunk = self._validate(table, source, offset, unknown_columns=unknown, textual=True)
            offset += table.num_rows
            if chunk is not None:
                yield chunk

    def _jsonl(self, path: str) -> Iterator[Chunk]:
        source = "<stdin>" if path == "-" else path
        handle = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
        try:
            rows: list[dict] = []
            row_numbers: list[int] = []
            for number, line in enumerate(handle):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    self.policy.reject(
                        RowError(source, number, None, f"invalid JSON: {exc.msg}", line.rstrip("\n"))
                    )
                    continue
                if not isinstance(value, dict):
                    self.policy.reject(
                        RowError(source, number, None, "a JSON object is expected", line.rstrip("\n"))
                    )
                    continue
                rows.append(value)
                row_numbers.append(number)
                if len(rows) >= JSON_CHUNK:
                    chunk = self._json_chunk(rows, row_numbers, source)
                    if chunk is not None:
                        yield chunk
                    rows, row_numbers = [], []
            if rows:
                chunk = self._json_chunk(rows, row_numbers, source)
                if chunk is not None:
                    yield chunk
        finally:
            if handle is not sys.stdin:
                handle.close()

    def _json_chunk(self, rows: list[dict], numbers: list[int], source: str) -> Chunk | None:
        columns: dict[str, list] = {"event_type": [r.get("event_type") for r in rows]}
        extra = set()
        for row in rows:
            extra.update(k for k in row if k != "event_type" and k not in self.columns)
        for name in self.columns:
            columns[name] = [_json_text(r.get(name)) for r in rows]
        for name in sorted(extra):
            columns[name] = [_json_text(r.get(name)) for r in rows]
        table = pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()})
        return self._validate(
            table, source, 0, unknown_columns=sorted(extra), textual=True, row_numbers=np.array(numbers)
        )

    def _parquet(self, path: str) -> Iterator[Chunk]:
        try:
            parquet = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise CeqlError(f"{path}: cannot read Parquet: {_first_line(exc)}") from None
        names = parquet.schema_arrow.names
        if "event_type" not in names:
            raise CeqlError(f"{path}: no event_type column")
        unknown = [n for n in names if n != "event_type" and n not in self.columns]
        offset = 0
        for batch in parquet.iter_batches(batch_size=65_536):
            table = pa.Table.from_batches([batch])
            chunk = self._validate(table, path, offset, unknown_columns=unknown, textual=False)
            offset += table.num_rows
            if chunk is not None:
                yield chunk

    # ------------------------------------------------------------------ validation

    def _validate(
        self,
        table: pa.Table,
        source: str,
        offset: int,
        unknown_columns: list[str],
        textual: bool,
        row_numbers: np.ndarray | None = None,
    ) -> Chunk | None:
        """Type the columns and find the bad rows, column-wise."""
        n = table.num_rows
        rows = row_numbers if row_numbers is not None else np.arange(offset, offset + n)
        bad = np.zeros(n, dtype=bool)
        reasons: dict[int, str] = {}

        def flag(mask: np.ndarray, reason_of) -> None:
            new = mask & ~bad
            for index in np.nonzero(new)[0]:
                reasons[int(index)] = reason_of(int(index))
            bad[:] |= mask

        event_type = table.column("event_type")
        if event_type.type != pa.string():
            event_type = pc.cast(event_type, pa.string())
        type_names = sorted(self.schema.event_types)
        index = pc.index_in(event_type, value_set=pa.array(type_names, pa.string()))
        unknown_type = np.asarray(pc.is_null(index).to_numpy(zero_copy_only=False), dtype=bool)
        if unknown_type.any():
            types_py = event_type.to_pylist()
            flag(unknown_type, lambda i: f"unknown event type {types_py[i]!r}")
        type_index = pc.fill_null(index, -1).to_numpy(zero_copy_only=False).astype(np.int64)

        arrays = [event_type]
        for name, arrow_type in self.columns.items():
            declares = np.array([name in self.declared[t] for t in type_names] + [False])
            expected = declares[type_index]
            if name not in table.column_names:
                column = pa.nulls(n, arrow_type)
                missing = expected
                flag(missing, lambda i, name=name: f"missing field {name}")
                arrays.append(column)
                continue
            column = table.column(name)
            present = ~np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False), dtype=bool)
            if textual:
                present &= np.asarray(
                    pc.fill_null(pc.not_equal(column, ""), False).to_numpy(zero_copy_only=False)
                )
            flag(expected & ~present, lambda i, name=name: f"missing field {name}")
            flag(
                ~expected & present & ~unknown_type,
                lambda i, name=name: f"extra field {name} (not declared for this event type)",
            )
            typed, invalid = self._convert(column, arrow_type, name, textual)
            flag(
                invalid & present & expected,
                lambda i, name=name, column=column, arrow_type=arrow_type: (
                    f"column {name}: cannot read {column[i].as_py()!r} as {_type_word(arrow_type, name in self.time_columns)}"
                ),
            )
            # Values of columns an event type does not declare are dropped (they were flagged).
            typed = pc.if_else(pa.array(expected & present & ~invalid), typed, pa.nulls(n, arrow_type))
            arrays.append(typed)
        for name in unknown_columns:
            column = table.column(name)
            present = ~np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False), dtype=bool)
            if textual:
                present &= np.asarray(
                    pc.fill_null(pc.not_equal(pc.cast(column, pa.string()), ""), False).to_numpy(
                        zero_copy_only=False
                    )
                )
            flag(present, lambda i, name=name: f"extra field {name} (not declared for any event type)")
        typed_table = pa.Table.from_arrays(arrays, schema=self.arrow_schema)
        if bad.any():
            for index in np.nonzero(bad)[0]:
                self.policy.reject(
                    RowError(
                        source, int(rows[index]), None, reasons[int(index)], _row_text(table, int(index))
                    )
                )
            keep = np.nonzero(~bad)[0]
            typed_table = typed_table.take(pa.array(keep))
            rows = rows[keep]
        if typed_table.num_rows == 0:
            return None
        return Chunk(typed_table, source, rows)

    def _convert(self, column, arrow_type: pa.DataType, name: str, textual: bool):
        """(typed column, invalid mask) for one column."""
        n = len(column)
        if not textual:
            if name in self.time_columns and (
                pa.types.is_timestamp(column.type) or pa.types.is_date(column.type)
            ):
                typed = pc.cast(pc.cast(column, pa.timestamp("ns", tz="UTC")), pa.int64())
                return typed, np.zeros(n, dtype=bool)
            if name in self.time_columns and pa.types.is_string(column.type):
                return self._convert(column, arrow_type, name, True)
            try:
                return pc.cast(column, arrow_type), np.zeros(n, dtype=bool)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return self._convert(pc.cast(column, pa.string()), arrow_type, name, True)
        text = column
        if arrow_type == pa.string():
            return text, np.zeros(n, dtype=bool)
        if arrow_type == pa.bool_():
            ok = pc.fill_null(
                pc.is_in(pc.utf8_trim_whitespace(text), value_set=pa.array(_BOOL_VALUES)), False
            )
            lowered = pc.utf8_lower(pc.utf8_trim_whitespace(text))
            typed = pc.or_(pc.equal(lowered, "true"), pc.equal(lowered, "1"))
            return typed, ~np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
        if name in self.time_columns:
            is_int = pc.fill_null(pc.match_substring_regex(text, _INT_RE), False)
            as_int = pc.cast(pc.if_else(is_int, pc.utf8_trim_whitespace(text), None), pa.int64())
            iso = pc.if_else(is_int, None, text)
            try:
                parsed = pc.cast(pc.cast(iso, pa.timestamp("ns", tz="UTC")), pa.int64())
                iso_ok = pc.is_valid(parsed)
            except pa.ArrowInvalid:
                parsed, iso_ok = _parse_times_slowly(iso)
            typed = pc.if_else(is_int, as_int, parsed)
            ok = pc.or_(is_int, pc.fill_null(iso_ok, False))
            return typed, ~np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
        pattern = _INT_RE if arrow_type == pa.int64() else _FLOAT_RE
        ok = pc.fill_null(pc.match_substring_regex(text, pattern, ignore_case=True), False)
        cleaned = pc.if_else(ok, pc.utf8_trim_whitespace(text), None)
        try:
            typed = pc.cast(cleaned, arrow_type)
        except pa.ArrowInvalid:  # e.g. integers beyond int64
            values, valid = [], []
            for value in cleaned.to_pylist():
                try:
                    values.append(None if value is None else pa.scalar(value).cast(arrow_type).as_py())
                    valid.append(value is not None)
                except (pa.ArrowInvalid, OverflowError):
                    values.append(None)
                    valid.append(False)
            return pa.array(values, arrow_type), ~np.array(valid, dtype=bool)
        return typed, ~np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)


def _parse_times_slowly(iso) -> tuple[pa.Array, pa.Array]:
    from ceql.runtime.batches import to_time_ns

    values, valid = [], []
    for value in iso.to_pylist():
        if value is None:
            values.append(None)
            valid.append(False)
            continue
        try:
            values.append(to_time_ns(value))
            valid.append(True)
        except ValueError:
            values.append(None)
            valid.append(False)
    return pa.array(values, pa.int64()), pa.array(valid, pa.bool_())


def _json_text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _type_word(arrow_type: pa.DataType, is_time: bool) -> str:
    if is_time:
        return "a time (integer nanoseconds or ISO-8601)"
    return {pa.int64(): "an integer", pa.float64(): "a number", pa.bool_(): "a boolean"}.get(
        arrow_type, str(arrow_type)
    )


def _row_text(table: pa.Table, index: int) -> str:
    row = {name: table.column(name)[index].as_py() for name in table.column_names}
    return json.dumps({k: v for k, v in row.items() if v is not None}, default=str)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


__all__ = ["Chunk", "EventReader", "detect_format", "resolve_inputs"]
