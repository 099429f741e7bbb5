"""Can one complex event be reported twice? (Through private labels, or labels not reported.)

The automaton is determinized over its full label sets, public and private, so one sequence of
full label sets has one run. Private labels (registers.py) record a derivation: which events an
instance of a filtered formula holds, where an instance ends. Two derivations of the same
complex event that differ there are two runs, and both may pass their conditions; the output
then has to drop the repeat (a complex event is reported iff SOME derivation satisfies every
condition). This module decides, on the symbolic machine, whether two runs reading the same
events with the same public labels can end in final states having differed in private labels:
a product exploration of pairs of states, bounded; when the bound is hit the answer is "maybe".
"""

from __future__ import annotations

from ceql.compile import automata, guards
from ceql.errors import UnsupportedQueryError

MAX_PAIRS = 20_000


def may_repeat(
    machine: automata.Machine, reported: frozenset[str] | None = None, limit: int = MAX_PAIRS
) -> bool:
    """True unless the machine provably reports every complex event through one run.

    ``reported``: the labels a complex event reports (None: every public label). Labels that are
    not reported (event-type labels, which a renaming or a projection may remove on one branch
    and not on another) distinguish runs without distinguishing what they report."""
    cache: dict = {}

    def _public(labels: frozenset[str]) -> tuple:
        public = frozenset(label for label in labels if label[0] != "\x00")
        if reported is None:
            return public
        return (public & reported, bool(public))

    def moves(state):
        found = cache.get(state)
        if found is None:
            try:
                found = tuple(
                    (g, _public(labels), labels, t) for g, labels, t in machine.moves(state)
                )
            except UnsupportedQueryError:
                found = None
            cache[state] = found
        return found

    start = [(a, b, False) for a in machine.initial() for b in machine.initial()]
    seen = set(start)
    frontier = list(start)
    while frontier:
        first, second, differ = frontier.pop()
        if differ and machine.final(first) and machine.final(second):
            return True
        first_moves, second_moves = moves(first), moves(second)
        if first_moves is None or second_moves is None:
            return True
        for g1, public1, full1, t1 in first_moves:
            for g2, public2, full2, t2 in second_moves:
                if public1 != public2 or guards.conjoin(g1, g2) is None:
                    continue
                pair = (t1, t2, differ or full1 != full2)
                if pair not in seen:
                    seen.add(pair)
                    if len(seen) > limit:
                        return True
                    frontier.append(pair)
    return False
