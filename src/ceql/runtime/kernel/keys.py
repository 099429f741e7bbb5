"""Dense codes for integer partition keys: an open-addressing hash table in one numpy array,
filled by compiled code a batch at a time (no Python work per key), probed from Python for the
odd key.

Codes are given in order of first appearance and never change, so they stay valid across
batches and in saved states. Slot j of the table is ``table[2j]`` (the key) and
``table[2j + 1]`` (its code, -1: empty): a probe touches one cache line.
"""

from __future__ import annotations

import numpy as np

_MASK64 = (1 << 64) - 1
_GOLDEN = 11400714819323198485  # must equal compiled._GOLDEN


def _empty(bits: int) -> np.ndarray:
    table = np.empty(2 << bits, dtype=np.int64)
    table[1::2] = -1
    return table


class IntCodes:
    """int64 key -> dense code."""

    def __init__(self, bits: int = 10) -> None:
        self.bits = bits
        self.table = _empty(bits)
        self.size = 0  # keys in the table

    def encode(self, values: np.ndarray, valid: np.ndarray | None, next_code: int) -> tuple[np.ndarray, int]:
        """The codes of ``values`` (-1 where not ``valid``); new keys get codes from
        ``next_code`` on. Returns (codes, the next free code)."""
        from ceql.runtime.kernel.compiled import hash_codes

        # Writable and contiguous (an Arrow column's zero-copy view is read-only, which numba
        # would compile a second time for).
        values = np.require(values, np.int64, ["C", "W"])
        self._reserve(self.size + len(values))
        if valid is None:
            valid = np.ones(len(values), dtype=bool)
        out = np.empty(len(values), dtype=np.int64)
        end = hash_codes(values, valid, self.table, self.bits, next_code, out)
        self.size += int(end) - next_code
        return out, int(end)

    def get(self, value: int) -> int:
        """The code of ``value``, or -1."""
        j = self._slot(value)
        mask = (1 << self.bits) - 1
        table = self.table
        while table[2 * j + 1] >= 0:
            if int(table[2 * j]) == value:
                return int(table[2 * j + 1])
            j = (j + 1) & mask
        return -1

    def put(self, value: int, code: int) -> None:
        """Record ``value`` -> ``code`` (a key not in the table yet)."""
        self._reserve(self.size + 1)
        j = self._slot(value)
        mask = (1 << self.bits) - 1
        table = self.table
        while table[2 * j + 1] >= 0:
            j = (j + 1) & mask
        table[2 * j] = value
        table[2 * j + 1] = code
        self.size += 1

    def _slot(self, value: int) -> int:
        return (((value & _MASK64) * _GOLDEN) & _MASK64) >> (64 - self.bits)

    def _reserve(self, size: int) -> None:
        """Keep the table at most half full for ``size`` keys (rehash into a larger one)."""
        if 2 * size <= (1 << self.bits):
            return
        bits = self.bits
        while 2 * size > (1 << bits):
            bits += 1
        old = self.table
        self.bits = bits
        self.table = _empty(bits)
        if self.size:
            from ceql.runtime.kernel.compiled import hash_insert

            hash_insert(old, self.table, bits)
