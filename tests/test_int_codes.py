"""kernel/keys.IntCodes: dense codes of int64 keys in order of first appearance, across calls,
whatever a call's size (``encode`` runs in slices so the table stays small; a slice may bring
only new keys, and the table grows between slices)."""

from __future__ import annotations

import numpy as np
import pytest

from ceql.runtime.kernel import keys as keys_module
from ceql.runtime.kernel.keys import IntCodes


def _expected(calls: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[list[int], list[int]]]:
    """Per call: the codes (dict-based: first appearance over all calls), and the new keys."""
    seen: dict[int, int] = {}
    out = []
    for values, valid in calls:
        codes, fresh = [], []
        for value, ok in zip(values.tolist(), valid.tolist()):
            if not ok:
                codes.append(-1)
                continue
            if value not in seen:
                seen[value] = len(seen)
                fresh.append(value)
            codes.append(seen[value])
        out.append((codes, fresh))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_codes_follow_first_appearance_across_sliced_calls(seed: int) -> None:
    rng = np.random.default_rng(seed)
    calls = []
    for _ in range(5):
        n = int(rng.choice([0, 1, 100, keys_module._SLICE + 1, 3 * keys_module._SLICE + 17, 40_000]))
        spread = int(rng.choice([3, 1000, 10**6, 2**62]))  # few keys to all new keys
        values = rng.integers(-spread, spread, size=n, dtype=np.int64)
        valid = rng.random(n) > 0.1
        calls.append((values, valid))
    codes = IntCodes()
    next_code = 0
    for (values, valid), (want, want_fresh) in zip(calls, _expected(calls)):
        got, end, fresh = codes.encode(values, valid, next_code)
        assert got.tolist() == want
        assert fresh.tolist() == want_fresh
        assert end == next_code + len(want_fresh)
        next_code = end
    assert codes.size == next_code
    assert 2 * codes.size <= (1 << codes.bits)  # at most half full


def test_table_stays_near_the_keys_not_the_rows() -> None:
    """65,536 rows of 50 keys: the table holds a few slices' worth, not room for every row
    (one call over all rows reserved 2**18 slots, 4 MB, per kernel)."""
    codes = IntCodes()
    values = np.arange(65_536, dtype=np.int64) % 50
    got, end, _ = codes.encode(values, None, 0)
    assert end == 50 and got.tolist() == (np.arange(65_536) % 50).tolist()
    assert (1 << codes.bits) <= 4 * keys_module._SLICE
