"""Input formats: one module per format, and a registry of them.

A format module declares ``NAME``, ``EXTENSIONS``, ``plan`` (a file's splits, after checking its
header or schema against the catalog) and ``read_split`` (a split's parsed blocks). The registry
feeds the command line's choices, format detection, and the local and Spark readers, so adding a
format is one module and one line below. (Output formats are listed once too, in
``io/writers.FORMATS``.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType

import pyarrow as pa

from ceql.compile.catalog import Catalog
from ceql.errors import CeqlError
from ceql.io.formats import csv, jsonl, parquet
from ceql.io.formats.base import Parsed, ReadOptions, Split
from ceql.runtime.batches import Notices


@dataclass(frozen=True)
class Format:
    """An input format: its name, file extensions, and how to plan and read a file."""

    name: str
    extensions: tuple[str, ...]
    plan: Callable[..., list[Split]]
    read_split: Callable[[Split, Catalog, ReadOptions, Notices], Iterator[Parsed]]
    line_based: bool  # splits are byte ranges of lines (their line numbers must be counted)
    reads_stdin: bool
    #: The whole input as a table whose types the format or pyarrow infers, for a reader with
    #: no declarations (``ceql sql``); the same line rules as ``read_split``.
    read_table: Callable[[str, ReadOptions], pa.Table]


def _from_module(module: ModuleType, line_based: bool) -> Format:
    return Format(
        module.NAME, module.EXTENSIONS, module.plan, module.read_split, line_based, line_based, module.read_table
    )


INPUTS: dict[str, Format] = {
    f.name: f for f in (_from_module(csv, True), _from_module(jsonl, True), _from_module(parquet, False))
}


def input_formats() -> list[str]:
    """The names of the input formats (for ``--input-format``)."""
    return list(INPUTS)


def detect_format(path: str, explicit: str | None = None) -> Format:
    """The format of an input: the explicit one, else by extension (stdin: CSV)."""
    if explicit:
        if explicit not in INPUTS:
            raise CeqlError(f"unknown input format {explicit!r} (one of {', '.join(INPUTS)})")
        return INPUTS[explicit]
    if path == "-":
        return INPUTS["csv"]
    lower = path.lower()
    for fmt in INPUTS.values():
        if lower.endswith(fmt.extensions):
            return fmt
    names = "|".join(INPUTS)
    raise CeqlError(f"cannot tell the format of {path}; use --input-format {names}")


__all__ = [
    "INPUTS",
    "Format",
    "Parsed",
    "ReadOptions",
    "Split",
    "detect_format",
    "input_formats",
]
