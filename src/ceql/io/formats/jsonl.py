"""JSON Lines: one JSON object per line, with an ``event_type`` string.

Values keep their JSON types and are typed by the catalog (a JSON string is read like a CSV
field; a number must suit the declared type: ``1.5`` is not an int, ``"5"`` is). Per line: a
blank line is skipped; a line that is not valid UTF-8 or not valid JSON, that nests too deeply,
that is not an object, or that is longer than the limit is a rejected row. A byte-order mark at
the start of the file is skipped. A lone surrogate escape (``"\ud800"``: valid JSON, but no
character) is a rejected row. Keys no event type declares are ignored (one warning); a key
the queries read and an event lacks makes that event a rejected row ("missing field").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from ceql.compile.catalog import EVENT_TYPE, Catalog
from ceql.io.errors import RowError
from ceql.io.formats.base import (
    BOM,
    Parsed,
    ReadOptions,
    Split,
    iter_line_blocks,
    open_split,
    text_splits,
    too_long_errors,
    whole_text,
)
from ceql.runtime.batches import Notices, type_rows

NAME = "jsonl"
EXTENSIONS = (".jsonl", ".ndjson", ".json")
_ABSENT = object()
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # \ud800 to \udfff (pairs are characters)


def plan(
    path: str, file_index: int, catalog: Catalog, options: ReadOptions, notices: Notices, whole: bool
) -> list[Split]:
    """The splits of a file (one if ``whole``); JSON Lines has no header to check."""
    if whole:
        return [Split(path, file_index, 0, None, 1)]
    return text_splits(path, file_index, options)


def read_split(split: Split, catalog: Catalog, options: ReadOptions, notices: Notices) -> Iterator[Parsed]:
    """Parse the lines of a split."""
    stream, offset = open_split(split, options)
    try:
        for block in iter_line_blocks(stream, options, split.first_line, offset, split.end):
            rejects = too_long_errors(block, split.source, options.max_line_bytes)
            yield parse_lines(block.lines(), block.numbers, catalog, split.source, notices, rejects)
    finally:
        stream.close()


def parse_lines(
    lines: list[bytes],
    numbers: np.ndarray,
    catalog: Catalog,
    source: str,
    notices: Notices,
    rejects: list[RowError],
) -> Parsed:
    """Type the lines of one block."""
    objects: list[dict] = []
    kept: list[int] = []
    texts: list[str] = []
    for line, number in zip(lines, numbers.tolist()):
        if number == 1 and line.startswith(BOM):
            line = line[len(BOM) :]
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            rejects.append(
                RowError(source, number, "the line is not valid UTF-8", line.decode("utf-8", "replace"))
            )
            continue
        problem, value = _load(text)
        if problem is None and _SURROGATE_ESCAPE.search(line) and _lone_surrogate(value):
            problem = "invalid JSON: a \\u escape of a lone surrogate (\\ud800 to \\udfff) is not a character"
        if problem is None and not isinstance(value, dict):
            problem = f"a JSON object is expected, not {_json_kind(value)}"
        if problem is not None:
            rejects.append(RowError(source, number, problem, text))
            continue
        objects.append(value)
        kept.append(number)
        texts.append(text)
    if not objects:
        rejects.sort(key=lambda e: e.line or 0)
        return Parsed(catalog.arrow_schema().empty_table(), np.zeros(0, np.int64), rejects)
    columns: dict[str, list] = {}
    absent: dict[str, np.ndarray] = {}
    for name in catalog.columns:
        values = [o.get(name, _ABSENT) for o in objects]
        if _ABSENT in values:
            absent[name] = np.fromiter((v is _ABSENT for v in values), dtype=bool, count=len(values))
            values = [None if v is _ABSENT else v for v in values]
        columns[name] = values
    declared = catalog.declared_names
    for key in set().union(*objects) - declared - {EVENT_TYPE}:
        notices.warn(
            ("unknown", key), f"{source}: key {key} is not declared for any event type; it is ignored"
        )
    typed = type_rows(catalog, [o.get(EVENT_TYPE) for o in objects], columns, absent=absent, notices=notices)
    lines_of = np.asarray(kept, dtype=np.int64)
    if typed.bad.any():
        for index in np.nonzero(typed.bad)[0]:
            rejects.append(RowError(source, int(lines_of[index]), typed.reasons[int(index)], texts[index]))
        lines_of = lines_of[~typed.bad]
    rejects.sort(key=lambda e: e.line or 0)
    return Parsed(typed.accepted(), lines_of, rejects)


def _load(text: str) -> tuple[str | None, object]:
    try:
        return None, json.loads(text)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg} (column {exc.colno})", None
    except RecursionError:
        return "invalid JSON: it nests too deeply", None


def _lone_surrogate(value: object) -> bool:
    """Whether a parsed JSON value holds a string that is not Unicode text (a lone surrogate
    from an escape: it cannot be encoded as UTF-8, so no column can hold it)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def read_table(path: str, options: ReadOptions) -> pa.Table:
    """A whole JSON Lines input as an Arrow table whose column types pyarrow infers (``ceql
    sql``). Lines follow every reader's rules (``whole_text``)."""
    import io

    import pyarrow.json as pajson

    from ceql.errors import CeqlError

    data, longest = whole_text(path, options)
    try:
        return pajson.read_json(
            io.BytesIO(data), read_options=pajson.ReadOptions(block_size=max(1 << 20, 2 * longest + 2))
        )
    except pa.ArrowInvalid as exc:
        raise CeqlError(f"{Split(path, 0).source}: {exc}") from None
