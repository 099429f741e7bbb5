"""Which worker owns each event's partition key: a hash of the key's values, any types.

The hash is a pure function of the key (not of the batch, the piece of it or the order keys
first appear), so every event of one sub-stream goes to the same worker whichever worker types
the piece it is in, and whichever path below hashes it. It follows the kernel's key equality
(``KeyCodes`` in kernel/runner.py): a double equal to an integer is the same key as that
integer, NaN and null are no key. Integers and strings are hashed in compiled loops (Fibonacci
hashing; FNV-1a over a string's UTF-8 bytes); other values through their distinct values only
(``dictionary_encode``, then Python's ``hash`` of each distinct value, which is the same for
equal numbers of any type and fixed for the process).

``split_rows`` gives each worker's rows of a piece in one counting sort (two passes, compiled):
a piece is split once, column-wise, and each worker takes its rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

_GOLDEN = np.uint64(11400714819323198485)
_SALT = np.uint64(0x9E3779B97F4A7C15)  # mixes the attributes of a multi-attribute key
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def _int_hashes(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64, copy=False).view(np.uint64) * _GOLDEN


@njit(nogil=True, cache=True)
def _string_hashes(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """FNV-1a of each string's bytes (``offsets``: n + 1 of them into ``data``), then one
    multiplicative mix (FNV's low bits alone spread short strings poorly)."""
    n = len(offsets) - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        h = _FNV_OFFSET
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[j])) * _FNV_PRIME
        out[i] = h * _GOLDEN
    return out


def _strings(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(hash, valid) of a string column, from its Arrow buffers (no Python value per row)."""
    n = len(column)
    if n == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
    wide = pa.types.is_large_string(column.type)
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if wide else np.int32)[column.offset : column.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    valid = column.is_valid().to_numpy(zero_copy_only=False) if column.null_count else np.ones(n, bool)
    return _string_hashes(offsets.astype(np.int64), data), valid


def column_hashes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(hash per row as uint64, whether the row has a value): the hash of an integral value is
    that of the integer, whatever the column's type."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_timestamp(kind):
        valid = column.is_valid().to_numpy(zero_copy_only=False) if column.null_count else np.ones(n, bool)
        if not pa.types.is_integer(kind):
            column = pc.cast(column, pa.int64())
        if column.null_count:
            column = pc.fill_null(column, 0)
        values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
        return _int_hashes(values), valid
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _strings(column)
    encoded = pc.dictionary_encode(column)
    index = np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    distinct = encoded.dictionary.to_pylist()
    table = np.zeros(len(distinct) + 1, dtype=np.uint64)
    present = np.ones(len(distinct) + 1, dtype=bool)
    present[-1] = False  # index -1: null
    for i, value in enumerate(distinct):
        if isinstance(value, float):
            if value != value:  # NaN: no key, as the kernel's KeyCodes says
                present[i] = False
                continue
            if value.is_integer() and -(2**63) <= value < 2**63:
                table[i] = (int(value) * int(_GOLDEN)) & 0xFFFFFFFFFFFFFFFF
                continue
        table[i] = (hash(value) * int(_GOLDEN)) & 0xFFFFFFFFFFFFFFFF
    return table[index], present[index]


def key_hashes(
    table: pa.Table, types: np.ndarray, groups: Sequence[tuple[tuple[str, ...], np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """(the hash of each row's partition key, whether it has one): rows of types no key group
    covers, and rows whose key has a null, have none. ``groups``: per key group, its attributes
    and the type indexes keyed by it (``KeyCodes.groups``)."""
    n = table.num_rows
    mixed = np.zeros(n, dtype=np.uint64)
    keyed = np.zeros(n, dtype=bool)
    for attributes, members in groups:
        rows = np.isin(types, members, kind="sort") if len(groups) > 1 else None  # (the default: 20x slower)
        hashed = np.zeros(n, dtype=np.uint64)
        valid = np.ones(n, dtype=bool)
        for attribute in attributes:
            values, present = column_hashes(table.column(attribute))
            hashed = (hashed ^ values) * _SALT + _GOLDEN
            valid &= present
        if rows is None:
            mixed, keyed = hashed, valid
        else:
            mixed[rows] = hashed[rows]
            keyed[rows] = valid[rows]
    return mixed, keyed


@njit(nogil=True, cache=True)
def _group(hashed: np.ndarray, keyed: np.ndarray, workers: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """A stable counting sort of the rows by worker: (rows grouped by worker, ascending in
    each; bounds: worker w's rows are rows[bounds[w]:bounds[w + 1]]). The worker of a row is
    its hash mixed once more, its high 32 bits scaled to ``workers`` (rows without a key:
    worker 0)."""
    n = len(hashed)
    owner = np.zeros(n, dtype=np.int32)
    counts = np.zeros(workers, dtype=np.int64)
    for i in range(n):
        if keyed[i]:
            # (multiply-shift, not %: a division per row cost as much as the rest)
            owner[i] = np.int32((((hashed[i] * _GOLDEN) >> np.uint64(32)) * np.uint64(workers)) >> np.uint64(32))
        counts[owner[i]] += 1
    bounds = np.zeros(workers + 1, dtype=np.int64)
    bounds[1:] = np.cumsum(counts)
    fill = bounds[:-1].copy()  # the next slot of each worker
    rows = np.empty(n, dtype=np.int64)
    for i in range(n):
        rows[fill[owner[i]]] = i
        fill[owner[i]] += 1
    return rows, bounds


def split_rows(
    table: pa.Table,
    types: np.ndarray,
    groups: Sequence[tuple[tuple[str, ...], np.ndarray]],
    workers: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's rows of a typed table: (rows grouped by worker, ascending in each; bounds:
    worker w's rows are rows[bounds[w]:bounds[w + 1]]). A row goes to the worker its partition
    key hashes to (rows without a key go to worker 0, whose kernel skips them as the one-core
    kernel does)."""
    if len(groups) == 1 and len(groups[0][0]) == 1:
        column = table.column(groups[0][0][0])
        if pa.types.is_integer(column.type) and not column.null_count:  # the common case, fused
            column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
            return _group(_single_int_hashes(values.view(np.uint64)), np.ones(len(values), dtype=bool), workers)
    hashed, keyed = key_hashes(table, types, groups)
    return _group(hashed, keyed, workers)


@njit(nogil=True, cache=True)
def _single_int_hashes(values: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``key_hashes`` of a single integer attribute without nulls (``values``: the int64 values
    viewed as uint64): ``(0 ^ value * _GOLDEN) * _SALT + _GOLDEN``, in one pass. (Its own
    function: inlined into ``_group``, the two loops ran four times slower.)"""
    hashed = np.empty(len(values), dtype=np.uint64)
    for i in range(len(values)):
        hashed[i] = (values[i] * _GOLDEN) * _SALT + _GOLDEN
    return hashed
