"""CSV (CORE's format): a header line naming the columns, ``event_type`` among them, then one
event per line.

Every field is read as text (nothing is guessed) and typed by the catalog. Per line: an empty
line is skipped; a line with more or fewer fields than the header, a line that is not valid
UTF-8, a line longer than the limit and a quote left open at the end of a line (a value may not
span lines) are rejected rows. Columns no event type declares are not read (one warning). A
header naming a declared column twice makes every line of the file a rejected row; a header
without ``event_type`` or without a column the queries read is an error, and so is a header of
more than ``MAX_COLUMNS`` columns (the parser allocates per column, before any row is read).
"""

from __future__ import annotations

import csv as _csv
import io
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ceql.compile.catalog import EVENT_TYPE, Catalog
from ceql.errors import CeqlError
from ceql.io.errors import RowError
from ceql.io.formats.base import (
    BOM,
    LineBlock,
    Parsed,
    PushbackStream,
    ReadOptions,
    Split,
    check_columns,
    iter_line_blocks,
    open_split,
    text_splits,
    too_long_errors,
    whole_text,
)
from ceql.runtime.batches import Notices, type_rows

NAME = "csv"
EXTENSIONS = (".csv", ".corecsv")
#: Columns a CSV header may have (docs/limits.md): the parser needs about 2 KB per column.
MAX_COLUMNS = 10_000


@dataclass(frozen=True)
class Header:
    """What the header line says: the column names, and which ones are read."""

    names: tuple[str, ...]
    read: tuple[int, ...]  # positions of event_type and of the declared columns
    problem: str | None = None  # a header that makes every line of the file a rejected row


def read_header(line: bytes, catalog: Catalog, source: str, notices: Notices) -> Header:
    """Check a header line against the catalog (CeqlError if a needed column is missing)."""
    if line.startswith(BOM):
        line = line[len(BOM) :]
    line = line.rstrip(b"\r")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return Header((), (), "the header (line 1) is not valid UTF-8")
    try:
        names = tuple(name.strip() for name in next(_csv.reader([text]), []))
    except _csv.Error as error:  # e.g. a carriage return inside the line
        return Header((), (), f"the header (line 1) cannot be read as CSV: {error}")
    if len(names) > MAX_COLUMNS:  # before the parser allocates anything per column
        raise CeqlError(
            f"{source}: the header (line 1) has {len(names):,} columns; at most {MAX_COLUMNS:,} are read "
            "(docs/limits.md): keep the columns the queries need"
        )
    check_columns(names, catalog, source, notices)
    read = tuple(i for i, n in enumerate(names) if n == EVENT_TYPE or n in catalog.columns)
    twice = sorted({names[i] for i in read if names.count(names[i]) > 1})
    if twice:
        return Header(names, read, f"the header names column {', '.join(twice)} more than once")
    return Header(names, read)


def first_line(path: str, options: ReadOptions) -> bytes:
    """The first line of a file (the header), without its newline."""
    with open(path, "rb") as handle:
        stream = PushbackStream(handle)
        for block in iter_line_blocks(stream, options):
            if len(block) and block.numbers[0] == 1:
                return block.line(0)
            if block.too_long and block.too_long[0][0] == 1:
                return block.too_long[0][2]  # its head only: such a header fails its checks
            return b""
    return b""


def plan(
    path: str, file_index: int, catalog: Catalog, options: ReadOptions, notices: Notices, whole: bool
) -> list[Split]:
    """The splits of a file (one if ``whole``); its header is read and checked here."""
    header = read_header(first_line(path, options), catalog, path, notices)
    if whole:
        return [Split(path, file_index, 0, None, 1, header)]
    return text_splits(path, file_index, options, header)


def read_split(split: Split, catalog: Catalog, options: ReadOptions, notices: Notices) -> Iterator[Parsed]:
    """Parse the lines of a split (the header, line 1, is skipped: ``split.layout`` has it)."""
    stream, offset = open_split(split, options)
    header: Header | None = split.layout
    try:
        for block in iter_line_blocks(stream, options, split.first_line, offset, split.end):
            rejects = too_long_errors(block, split.source, options.max_line_bytes)
            if len(block) and block.numbers[0] == 1:
                if header is None:  # standard input: the header comes with the data
                    header = read_header(block.line(0), catalog, split.source, notices)
                block = block.select(np.arange(1, len(block)))
            elif header is None:
                raise AssertionError("a CSV split after the first needs the header")
            yield parse_block(block, header, catalog, split.source, notices, rejects)
    finally:
        stream.close()


def parse_block(
    block: LineBlock, header: Header, catalog: Catalog, source: str, notices: Notices, rejects: list[RowError]
) -> Parsed:
    """Type the data lines of one block."""
    empty = block.ends == block.starts
    if empty.any():  # empty lines are no events
        block = block.select(~empty)
    if header.problem is not None:
        rejects += [
            RowError(source, int(n), header.problem, _text(x)) for x, n in zip(block.lines(), block.numbers)
        ]
        return _done(catalog, rejects)
    block = _valid_utf8(block, source, rejects)
    rows, row_lines = _split_fields(block, header, source, rejects)
    if rows is None or rows.num_rows == 0:
        return _done(catalog, rejects)
    by_name = {header.names[int(col[1:])]: rows.column(col) for col in rows.column_names}
    event_types = by_name.pop(EVENT_TYPE)
    typed = type_rows(catalog, event_types, by_name, notices=notices)
    if typed.bad.any():
        index_of = {n: i for i, n in enumerate(block.numbers.tolist())}
        for index in np.nonzero(typed.bad)[0]:
            line = int(row_lines[index])
            rejects.append(
                RowError(source, line, typed.reasons[int(index)], _text(block.line(index_of[line])))
            )
        row_lines = row_lines[~typed.bad]
    rejects.sort(key=lambda e: e.line or 0)
    return Parsed(typed.accepted(), row_lines, rejects)


def _done(catalog: Catalog, rejects: list[RowError]) -> Parsed:
    rejects.sort(key=lambda e: e.line or 0)
    return Parsed(catalog.arrow_schema().empty_table(), np.zeros(0, np.int64), rejects)


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")


def _valid_utf8(block: LineBlock, source: str, rejects: list[RowError]) -> LineBlock:
    """Reject the lines that are not valid UTF-8 (checked for the whole block at once)."""
    try:
        block.data.decode("utf-8")
        return block
    except UnicodeDecodeError:
        pass
    good = np.ones(len(block), dtype=bool)
    for index, line in enumerate(block.lines()):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            good[index] = False
            rejects.append(
                RowError(source, int(block.numbers[index]), "the line is not valid UTF-8", _text(line))
            )
    return block.select(good)


def _split_fields(
    block: LineBlock, header: Header, source: str, rejects: list[RowError]
) -> tuple[pa.Table | None, np.ndarray]:
    """Fields of each line as text columns (``c<position>``) and the line of each row; lines
    with a wrong number of fields, or that do not parse on their own, are rejected."""
    if not len(block):
        return None, block.numbers
    invalid: list[tuple[int, str]] = []
    table = _parse(block.data, header, invalid)
    if table is not None and table.num_rows + len(invalid) == len(block):
        if not invalid:
            return table, block.numbers
        bad = np.zeros(len(block), dtype=bool)
        for index, reason in invalid:
            bad[index] = True
            rejects.append(RowError(source, int(block.numbers[index]), reason, _text(block.line(index))))
        return table, block.numbers[~bad]
    # A quoted value ran over a line end (or the block failed to parse): halve until each part
    # parses with one row per line; a single line that does not is rejected.
    if len(block) == 1:
        reason = "malformed line: a quoted value is not closed on its line"
        rejects.append(RowError(source, int(block.numbers[0]), reason, _text(block.line(0))))
        return None, block.numbers[:0]
    middle = len(block) // 2
    first, first_lines = _split_fields(block.select(np.arange(middle)), header, source, rejects)
    second, second_lines = _split_fields(block.select(np.arange(middle, len(block))), header, source, rejects)
    parts = [t for t in (first, second) if t is not None]
    if not parts:
        return None, block.numbers[:0]
    return pa.concat_tables(parts), np.concatenate([first_lines, second_lines])


def _parse(data: bytes, header: Header, invalid: list[tuple[int, str]]) -> pa.Table | None:
    """pyarrow's CSV parser over the lines (none empty; all as text, only the columns read)."""
    width = len(header.names)
    names = [f"c{i}" for i in range(width)]

    def on_invalid(row) -> str:
        if row.number is None:
            raise ValueError("row number unknown")
        fields = f"{row.actual_columns} fields where the header has {row.expected_columns}"
        invalid.append((row.number - 1, fields))
        return "skip"

    data = data + b"\n"
    try:
        return pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(column_names=names, block_size=len(data) + 1, use_threads=False),
            parse_options=pacsv.ParseOptions(invalid_row_handler=on_invalid, newlines_in_values=False),
            convert_options=pacsv.ConvertOptions(
                column_types={name: pa.string() for name in names},
                include_columns=[names[i] for i in header.read],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=False,
            ),
        )
    except (pa.ArrowInvalid, ValueError):
        invalid.clear()
        return None


def read_table(path: str, options: ReadOptions) -> pa.Table:
    """A whole CSV input (a header line, then rows) as an Arrow table whose column types
    pyarrow infers (``ceql sql``: its query declares no types). Lines follow every reader's rules
    (``whole_text``); a row with the wrong number of fields is an ``EventError``."""
    from ceql.errors import EventError

    data, longest = whole_text(path, options)
    source = Split(path, 0).source

    def invalid(row) -> str:
        reason = f"{row.actual_columns} fields where the header has {row.expected_columns}"
        raise EventError(f"{reason}: {row.text!r}", source=source, line=row.number)

    try:
        return pacsv.read_csv(
            io.BytesIO(data),
            # A block holds whole rows: one at least the longest line (pyarrow's "straddling
            # object ... increase block size?" otherwise).
            read_options=pacsv.ReadOptions(block_size=max(1 << 20, 2 * longest + 2)),
            parse_options=pacsv.ParseOptions(invalid_row_handler=invalid),
        )
    except pa.ArrowInvalid as exc:
        raise CeqlError(f"{source}: {exc}") from None
