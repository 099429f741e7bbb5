"""Read events from CSV (CORE's format), JSON Lines or Parquet files into typed Arrow chunks.

Each file is read by its format (``ceql.io.formats``) in blocks, typed by the run's catalog
(``Catalog.of_schema``: every declared column, the ones the queries read required). Every row is
either accepted, with its 1-based line (the row for Parquet), or rejected with a reason, which
goes to the run's error policy. Files larger than memory stream through.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ceql.compile.catalog import Catalog
from ceql.errors import CeqlError
from ceql.io.errors import RejectSink
from ceql.io.formats import ReadOptions, Split, detect_format
from ceql.io.run import check_input
from ceql.runtime.batches import Notices


@dataclass
class Chunk:
    """Accepted events of one block of input, with where they came from."""

    table: pa.Table
    source: str
    lines: np.ndarray  # int64: the 1-based line (Parquet: row) of each event in its file
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
            check_input(match)  # the same words on every command (io/run.py)
        paths.extend(matches)
    return paths


class EventReader:
    """Reads and types the events of input files for one catalog; rejected rows go to
    ``policy``, warnings to ``notices``."""

    def __init__(
        self,
        catalog: Catalog,
        policy: RejectSink,
        notices: Notices | None = None,
        options: ReadOptions | None = None,
    ) -> None:
        self.catalog = catalog
        self.policy = policy
        self.notices = notices if notices is not None else Notices()
        self.options = options or ReadOptions()

    def read(self, paths: list[str], input_format: str | None = None) -> Iterator[Chunk]:
        """The accepted events of the files, in order (file by file, line by line)."""
        for index, path in enumerate(paths):
            fmt = detect_format(path, input_format)
            if path == "-" or not os.path.isfile(path):
                # Standard input, a FIFO, a device: read once, as a stream (a CSV header with
                # the data), since a second open would find nothing.
                if not fmt.reads_stdin:
                    where = "standard input" if path == "-" else f"{path}, which is not a regular file"
                    raise CeqlError(f"{fmt.name} cannot be read from {where}; give a file")
                splits = [Split(path, index)]
            else:
                splits = fmt.plan(path, index, self.catalog, self.options, self.notices, True)
            for split in splits:
                for parsed in fmt.read_split(split, self.catalog, self.options, self.notices):
                    for error in parsed.rejects:
                        self.policy.reject(error)
                    if parsed.table.num_rows:
                        yield Chunk(parsed.table, split.source, parsed.lines)


__all__ = ["Chunk", "EventReader", "resolve_inputs"]
