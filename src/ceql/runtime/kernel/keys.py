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


def _reserved(table: np.ndarray, bits: int, size: int, used: int) -> tuple[np.ndarray, int]:
    """A table at most half full for ``size`` keys: ``table`` itself when it is, else a larger
    one holding its ``used`` keys (rehashed); with its bits."""
    if 2 * size <= (1 << bits):
        return table, bits
    while 2 * size > (1 << bits):
        bits += 1
    grown = _empty(bits)
    if used:
        from ceql.runtime.kernel.compiled import hash_insert

        hash_insert(table, grown, bits)
    return grown, bits


#: ``IntCodes.encode``: rows per compiled call at least (the table reserves room for as many new keys).
_SLICE = 4096


class IntCodes:
    """int64 key -> dense code."""

    def __init__(self, bits: int = 10) -> None:
        self.bits = bits
        self.table = _empty(bits)
        self.size = 0  # keys in the table

    def encode(
        self, values: np.ndarray, valid: np.ndarray | None, next_code: int
    ) -> tuple[np.ndarray, int, np.ndarray]:
        """The codes of ``values`` (-1 where not ``valid``); new keys get codes from
        ``next_code`` on. Returns (codes, the next free code, the new keys in code order)."""
        from ceql.runtime.kernel.compiled import hash_codes

        # Writable and contiguous (an Arrow column's zero-copy view is read-only, which numba
        # would compile a second time for).
        values = np.require(values, np.int64, ["C", "W"])
        n = len(values)
        if valid is None:
            valid = np.ones(n, dtype=bool)
        out = np.empty(n, dtype=np.int64)
        fresh = np.empty(n, dtype=np.int64)
        end = next_code
        # The table must stay at most half full whatever keys a call brings: one call over all
        # the rows reserved room for each to be new (4 MB of table for a 65,536-row batch,
        # filled in, per kernel: a worker each). Slices of at most max(_SLICE, keys so far) rows
        # keep it within a few times the keys there are.
        at = 0
        while at < n:
            stop = min(n, at + max(_SLICE, self.size))
            self._reserve(self.size + stop - at)
            got = int(hash_codes(values[at:stop], valid[at:stop], self.table, self.bits, end, out[at:stop], fresh[end - next_code :]))
            self.size += got - end
            end = got
            at = stop
        return out, end, fresh[: end - next_code]

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
        self.table, self.bits = _reserved(self.table, self.bits, size, self.size)


class WindowCodes:
    """int64 key -> code, where the code of a key whose partition holds no live run is given
    back (``recycle``) and reused for another key: the table, the codes and the kernel's
    partition slots stay bounded by the keys live in the window, not by every key ever seen
    (a stream of ids that never repeat far apart). Only for keys no output reports."""

    def __init__(self, bits: int = 10) -> None:
        self.bits = bits
        self.table = _empty(bits)
        self.keys = np.zeros(1 << bits, dtype=np.int64)  # code -> key
        self.free = np.zeros(1 << bits, dtype=np.int64)  # recycled codes (a stack)
        self.counts = np.zeros(2, dtype=np.int64)  # [next fresh code, recycled codes on the stack]
        self.live = 0  # keys in the table

    @property
    def count(self) -> int:
        """Codes given so far (the high-water mark: every code is below it)."""
        return int(self.counts[0])

    def encode(self, values: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
        """The codes of ``values`` (-1 where not ``valid``)."""
        values = np.require(values, np.int64, ["C", "W"])
        n = len(values)
        valid = np.ones(n, dtype=bool) if valid is None else np.require(valid, np.bool_, ["C", "W"])
        out = np.empty(n, dtype=np.int64)
        self._encode_into(values, valid, out)
        return out

    def encode_one(self, value: int) -> int:
        """The code of one int64 key (push's per-event path): ``encode`` without its per-call
        arrays (one-element work arrays kept here)."""
        one = self.__dict__.get("_one")
        if one is None:
            one = self._one = (np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.bool_), np.empty(1, dtype=np.int64))
        values, valid, out = one
        values[0] = value
        self._encode_into(values, valid, out)
        return int(out[0])

    def _encode_into(self, values: np.ndarray, valid: np.ndarray, out: np.ndarray) -> None:
        """``out``: the codes of ``values`` (int64, bool and int64 arrays, contiguous and
        writable, as ``window_codes`` takes them), the table and the code arrays made room for."""
        from ceql.runtime.kernel.compiled import window_codes

        n = len(values)
        self._reserve(self.live + n)
        need = self.count + n
        if need > len(self.keys):
            self.keys = _grown(self.keys, need)
            self.free = _grown(self.free, need)
        before = self.count - int(self.counts[1])
        window_codes(values, valid, self.table, self.bits, self.keys, self.free, self.counts, out)
        self.live += self.count - int(self.counts[1]) - before

    def _reserve(self, size: int) -> None:
        """Keep the table at most half full for ``size`` keys (rehash into a larger one)."""
        self.table, self.bits = _reserved(self.table, self.bits, size, self.live)

    def recycle(self, slot_of: np.ndarray) -> None:
        """Give back the codes whose partition has no slot in ``slot_of`` (the kernel's code ->
        slot array, -1: none)."""
        from ceql.runtime.kernel.compiled import recycle_codes

        live, nfree = recycle_codes(self.table, self.bits, self.keys, slot_of, self.count, self.free)
        self.live = int(live)
        self.counts[1] = nfree

    def load(self, keys: list[int]) -> None:
        """Start over with ``keys[code]`` for codes 0..len(keys)-1, all live."""
        self.__init__(self.bits)  # type: ignore[misc]
        values = np.array(keys, dtype=np.int64)
        codes = self.encode(values, None)
        assert (codes == np.arange(len(keys))).all(), "keys must be distinct"


def _grown(array: np.ndarray, needed: int) -> np.ndarray:
    size = max(len(array), 1)
    while size < needed:
        size *= 2
    out = np.zeros(size, dtype=array.dtype)
    out[: len(array)] = array
    return out
