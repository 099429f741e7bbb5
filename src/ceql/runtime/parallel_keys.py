"""Which worker owns each event's partition key: a hash of the key's values, any types.

The hash is a pure function of the key (not of the batch, the piece of it or the order keys
first appear), so every event of one sub-stream goes to the same worker whichever worker types
the piece it is in. It follows the kernel's key equality (``KeyCodes`` in kernel/runner.py): a
double equal to an integer is the same key as that integer, NaN and null are no key. Integers
are hashed vectorised (Fibonacci hashing); other values through their distinct values only
(``dictionary_encode``, then Python's ``hash`` of each distinct value, which is the same for
equal numbers of any type and fixed for the process).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_GOLDEN = np.uint64(11400714819323198485)
_SALT = np.uint64(0x9E3779B97F4A7C15)  # mixes the attributes of a multi-attribute key


def _int_hashes(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64, copy=False).view(np.uint64) * _GOLDEN


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


def shares(
    table: pa.Table,
    types: np.ndarray,
    groups: Sequence[tuple[tuple[str, ...], np.ndarray]],
    workers: int,
) -> np.ndarray:
    """The worker of each row of a typed table (uint16): a hash of its partition key (rows of types no
    key group covers, and rows whose key has a null, go to worker 0, whose kernel skips
    them as the one-core kernel does). ``groups``: per key group, its attributes and the type
    indexes keyed by it (``KeyCodes.groups``)."""
    n = table.num_rows
    if len(groups) == 1 and len(groups[0][0]) == 1:
        column = table.column(groups[0][0][0])
        if pa.types.is_integer(column.type) and not column.null_count:  # the common case, in 4 passes
            column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
            return _owner(_int_hashes(values), workers)
    mixed = np.zeros(n, dtype=np.uint64)
    keyed = np.zeros(n, dtype=bool)
    for attributes, members in groups:
        rows = np.isin(types, members) if len(groups) > 1 else None
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
    return np.where(keyed, _owner(mixed, workers), 0)


def _owner(hashed: np.ndarray, workers: int) -> np.ndarray:
    """The worker of each hash (its high bits, mixed once more; ``hashed`` is overwritten)."""
    np.multiply(hashed, _GOLDEN, out=hashed)
    np.right_shift(hashed, np.uint64(32), out=hashed)
    np.remainder(hashed, np.uint64(workers), out=hashed)
    return hashed.astype(np.uint16)
