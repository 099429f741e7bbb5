"""What every input format shares: splits of a file, parsed blocks, options, line reading.

A file is read as one or more *splits* (byte ranges of a text file, row groups of a Parquet
file). Locally a file is one split; on Spark each split is a task. Both run the same code on a
split, so both accept and reject the same rows. Reading a split yields ``Parsed`` blocks: the
typed accepted rows with their 1-based line numbers, and the rejected rows.

Text formats are read line by line: a line ends with ``\\n`` (a ``\\r`` before it is dropped), so
a record never spans lines; a line longer than ``ReadOptions.max_line_bytes`` is rejected without
being held in memory. The lines of a split are those that *start* inside its byte range.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import pyarrow as pa

from ceql.io.errors import RowError
from ceql.io.progress import INPUT_BYTES

if TYPE_CHECKING:
    from ceql.compile.catalog import Catalog
    from ceql.runtime.batches import Notices

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class ReadOptions:
    """Limits of the readers (the same on every engine)."""

    max_line_bytes: int = 16 << 20  # a longer line is a rejected row
    block_bytes: int = 4 << 20  # bytes read and parsed at a time
    batch_rows: int = 65_536  # Parquet rows per batch
    split_bytes: int = 64 << 20  # Spark: bytes of a text file per task


@dataclass(frozen=True)
class Split:
    """A part of one input file that is read on its own (picklable: Spark ships it)."""

    path: str
    file_index: int  # position of the file among the inputs (its events come in this order)
    start: int = 0  # text: first byte; Parquet: row group
    end: int | None = None  # text: end byte (None: end of file)
    first_line: int = 1  # 1-based number of the first line (text) or row (Parquet) of the split
    layout: Any = None  # what the format learnt from the file's head (CSV header, Parquet columns)

    @property
    def source(self) -> str:
        """The name of the input in messages."""
        return "<stdin>" if self.path == "-" else self.path


@dataclass
class Parsed:
    """One parsed block of a split: accepted typed rows and rejected ones."""

    table: pa.Table  # typed accepted rows (the catalog's schema)
    lines: np.ndarray  # int64: 1-based line (or row) of each accepted row
    rejects: list[RowError] = field(default_factory=list)


class LineBlock:
    """Complete lines of a text split: their bytes joined by newlines, where each line starts
    and ends (``\r`` excluded), and their 1-based numbers; lines too long were set apart."""

    __slots__ = ("data", "starts", "ends", "numbers", "too_long")

    def __init__(
        self,
        data: bytes,
        starts: np.ndarray,
        ends: np.ndarray,
        numbers: np.ndarray,
        too_long: list[tuple[int, int, bytes]] | None = None,
    ) -> None:
        self.data = data
        self.starts = starts
        self.ends = ends
        self.numbers = numbers
        self.too_long = too_long or []  # (line, size, first bytes)

    @classmethod
    def of_lines(cls, lines: list[bytes], numbers: np.ndarray) -> LineBlock:
        """A block of the given lines (no newlines in them)."""
        lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
        starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64) if lines else lengths
        return cls(b"\n".join(lines), starts, starts + lengths, numbers)

    def __len__(self) -> int:
        return len(self.numbers)

    def line(self, index: int) -> bytes:
        return self.data[self.starts[index] : self.ends[index]]

    def lines(self) -> list[bytes]:
        data = self.data
        return [data[s:e] for s, e in zip(self.starts.tolist(), self.ends.tolist())]

    def select(self, keep: np.ndarray) -> LineBlock:
        """The block of some of the lines (a boolean mask or indexes)."""
        indexes = np.flatnonzero(keep) if keep.dtype == bool else keep
        if len(indexes) and indexes[-1] - indexes[0] == len(indexes) - 1:  # a run: slice the bytes
            first, last = int(indexes[0]), int(indexes[-1])
            base = self.starts[first]
            data = self.data[base : self.ends[last]]
            picked = slice(first, last + 1)
            return LineBlock(data, self.starts[picked] - base, self.ends[picked] - base, self.numbers[picked])
        return LineBlock.of_lines([self.line(int(i)) for i in indexes], self.numbers[indexes])


class PushbackStream:
    """A binary stream that can give back bytes it read (standard input cannot seek)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.pending = b""

    def read(self, size: int) -> bytes:
        if self.pending:
            data, self.pending = self.pending[:size], self.pending[size:]
            return data
        data = self.stream.read(size)
        INPUT_BYTES.add(len(data))  # ceql run's progress: bytes read against the files' size
        return data

    def unread(self, data: bytes) -> None:
        self.pending = data + self.pending

    def close(self) -> None:
        if self.stream is not sys.stdin.buffer:
            self.stream.close()


def open_split(split: Split, options: ReadOptions) -> tuple[PushbackStream, int]:
    """A stream of a text split positioned at its first line, and that line's byte offset
    (``-`` is standard input, read whole)."""
    if split.path == "-":
        return PushbackStream(sys.stdin.buffer), 0
    raw = open(split.path, "rb")  # noqa: SIM115 - closed by the caller through the wrapper
    stream = PushbackStream(raw)
    if split.start == 0:
        return stream, 0
    raw.seek(split.start - 1)
    if raw.read(1) == b"\n":
        return stream, split.start
    return stream, split.start + _skip_line(stream, options) + 1


def iter_line_blocks(
    stream: PushbackStream, options: ReadOptions, first_line: int = 1, start: int = 0, end: int | None = None
) -> Iterator[LineBlock]:
    """The lines of ``stream`` from byte ``start`` (already positioned there, at a line start)
    whose first byte is before ``end``, in blocks of about ``options.block_bytes``."""
    number = first_line
    position = start  # absolute offset of the first byte of ``buffer``
    buffer = b""
    limit = options.max_line_bytes
    while end is None or position < end:
        data = stream.read(options.block_bytes)
        if not data:
            if buffer:  # a last line without a newline
                block = _block(buffer, number, position, end, limit)
                if block is not None:
                    yield block
            return
        buffer += data
        cut = buffer.rfind(b"\n")
        if cut < 0:
            if len(buffer) > limit:
                # One line longer than the limit: reject it and skip to its end, unread.
                head = buffer[:200]
                size = len(buffer) + _skip_line(stream, options)
                empty = np.zeros(0, np.int64)
                yield LineBlock(b"", empty, empty, empty, [(number, size, head)])
                position += size + 1
                number += 1
                buffer = b""
            continue
        block = _block(buffer[:cut], number, position, end, limit)
        if block is not None:
            yield block
        number += buffer.count(b"\n", 0, cut) + 1
        position += cut + 1
        buffer = buffer[cut + 1 :]


def _block(data: bytes, number: int, position: int, end: int | None, limit: int) -> LineBlock | None:
    """The lines of ``data`` (which starts a line at byte ``position`` of the file): those
    starting at or after ``end`` dropped, ``\r`` before a newline excluded, too-long ones set
    apart. Column-wise: the lines are found with numpy, not one by one."""
    codes = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(codes == 10)
    starts = np.concatenate([[0], breaks + 1]).astype(np.int64)
    ends = np.concatenate([breaks, [len(data)]]).astype(np.int64)
    if end is not None:
        inside = int(np.searchsorted(position + starts, end))  # lines starting before ``end``
        if inside == 0:
            return None
        if inside < len(starts):
            starts, ends = starts[:inside], ends[:inside]
            data = data[: int(ends[-1])]
            codes = codes[: len(data)]
    if b"\r" in data:
        has_cr = (ends > starts) & (codes[np.maximum(ends - 1, 0)] == 13)
        ends = ends - has_cr
    numbers = np.arange(number, number + len(starts), dtype=np.int64)
    block = LineBlock(data, starts, ends, numbers)
    lengths = ends - starts
    if len(data) > limit and (lengths > limit).any():
        long = lengths > limit
        too_long = [
            (int(numbers[i]), int(lengths[i]), block.line(int(i))[:200]) for i in np.flatnonzero(long)
        ]
        block = block.select(~long)
        block.too_long = too_long
    return block


def _skip_line(stream: PushbackStream, options: ReadOptions) -> int:
    """Read up to and including the next newline; return the bytes skipped before it."""
    skipped = 0
    while True:
        data = stream.read(options.block_bytes)
        if not data:
            return skipped
        cut = data.find(b"\n")
        if cut >= 0:
            stream.unread(data[cut + 1 :])
            return skipped + cut
        skipped += len(data)


def too_long_errors(block: LineBlock, source: str, limit: int) -> list[RowError]:
    """The rejected rows of the block's too-long lines."""
    return [
        RowError(
            source,
            line,
            f"line is longer than the limit of {limit} bytes ({size} bytes)",
            head.decode("utf-8", errors="replace") + "...",
        )
        for line, size, head in block.too_long
    ]


def check_columns(names: Sequence[str], catalog: Catalog, source: str, notices: Notices) -> None:
    """Check a file's column names against the catalog (CeqlError if a needed one is missing)
    and warn, once each, of the undeclared ones and of the declared ones the file lacks."""
    unknown, absent = catalog.check_columns(names, source)
    for name in unknown:
        notices.warn(("unknown", name), f"{source}: column {name} is not declared for any event type; it is ignored")
    for name in absent:
        notices.warn(("absent", name), f"{source}: declared column {name} is not in the input (no query reads it)")


def count_lines(path: str, start: int, end: int, options: ReadOptions) -> int:
    """How many lines start in the byte range [start, end) of a file."""
    size = os.path.getsize(path)
    end = min(end, size)
    if start >= end:
        return 0
    count = 1 if start == 0 else 0
    # A line starts after each newline at p with start <= p + 1 < end.
    with open(path, "rb") as handle:
        begin = max(start - 1, 0)
        handle.seek(begin)
        remaining = end - 1 - begin
        while remaining > 0:
            data = handle.read(min(options.block_bytes, remaining))
            if not data:
                break
            count += data.count(b"\n")
            remaining -= len(data)
    return count


def text_splits(path: str, file_index: int, options: ReadOptions, layout: Any = None) -> list[Split]:
    """Byte ranges of a text file for parallel reading; their first line numbers are set by
    ``number_splits`` (which counts lines, in parallel on Spark)."""
    size = os.path.getsize(path)
    step = max(options.split_bytes, 1)
    starts = list(range(0, max(size, 1), step))
    # The first split starts at line 1; the others get their first line from number_splits.
    return [Split(path, file_index, s, min(s + step, size), 1 if s == 0 else 0, layout) for s in starts]


def number_splits(splits: list[Split], counts: list[int]) -> list[Split]:
    """The splits of one file with the number of their first line, from the lines per split."""
    out, line = [], 1
    for split, count in zip(splits, counts):
        out.append(Split(split.path, split.file_index, split.start, split.end, line, split.layout))
        line += count
    return out


def row_text(values: dict) -> str:
    """A row of typed values as JSON text (for dead letters of binary formats)."""
    return json.dumps({k: v for k, v in values.items() if v is not None}, default=str)


def whole_text(path: str, options: ReadOptions) -> tuple[bytes, int]:
    """Every line of a text input (a file, a FIFO, or ``-``: standard input) joined by newlines,
    with a byte-order mark at its start dropped, and the length of its longest line: for readers
    that infer the types of a whole table (``ceql sql``). The same line rules as every reader:
    a line longer than ``options.max_line_bytes`` or not UTF-8 is an ``EventError`` naming it."""
    from ceql.errors import EventError

    stream, offset = open_split(Split(path, 0), options)
    parts: list[bytes] = []
    longest = 0
    source = Split(path, 0).source
    try:
        for block in iter_line_blocks(stream, options, 1, offset, None):
            if block.too_long:
                (first, *_) = too_long_errors(block, source, options.max_line_bytes)
                raise EventError(f"{first.reason}; --max-line-bytes raises it", source=source, line=first.line)
            if not len(block):
                continue
            data = block.data
            if block.numbers[0] == 1 and data.startswith(BOM):
                data = data[len(BOM) :]
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = int(block.numbers[0]) + data.count(b"\n", 0, exc.start)
                raise EventError("the line is not valid UTF-8", source=source, line=line) from None
            longest = max(longest, int((block.ends - block.starts).max()))
            parts.append(data)
    finally:
        stream.close()
    return b"\n".join(parts) + b"\n", longest
