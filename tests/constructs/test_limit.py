"""``LIMIT n``: at most n complex events per trigger. (The run-wide ``--max-matches`` bound is\ntests/test_limits.py.)

Golden examples (hand-derived or from the papers) come first; the differential property test
checks generated queries that contain the construct against the reference (ceql.reference) on
every engine path (tests/support/constructs.py).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.support import golden
from tests.support.constructs import CONSTRUCT, check, clause_cases
from tests.support.examples import supports


@CONSTRUCT
@given(clause_cases(limit=st.sampled_from([1, 2])))
def test_limit_agrees_with_the_reference(case) -> None:
    check(case)


def test_limit_keeps_at_most_n_per_trigger(evaluate) -> None:
    base = "SELECT * FROM S WHERE SELL AS x; BUY AS y"
    full = supports(evaluate(golden.CORE_DECL, base, golden.CORE_S2))
    limited = supports(evaluate(golden.CORE_DECL, base + " LIMIT 1", golden.CORE_S2))
    assert set(limited) == set(full)
    for trigger, chosen in limited.items():
        assert len(chosen) == 1 and chosen <= full[trigger]
