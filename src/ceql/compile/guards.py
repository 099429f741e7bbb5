"""Transition guards: conjunctions of literals over event symbols.

A literal is one of
  ("T", name)   the event has type ``name``
  ("P", id)     predicate ``id`` holds on the event
  ("N", lits)   not all of the literals ``lits`` hold (the negation of a conjunction; NOT(...))
A guard is a frozenset of literals, read as their conjunction; the empty guard is TRUE.
Guards are only ever evaluated when a (state, symbol) pair is seen for the first time.
"""

from __future__ import annotations

import functools

Literal = tuple
Guard = frozenset

TRUE: Guard = frozenset()


def type_is(name: str) -> Guard:
    return frozenset({("T", name)})


def pred(pid: int) -> Guard:
    return frozenset({("P", pid)})


def negation(guard: Guard) -> Guard:
    """The negation of a guard (a single "N" literal; TRUE negated is unsatisfiable)."""
    return frozenset({("N", guard)})


def conjoin(a: Guard, b: Guard) -> Guard | None:
    """``a AND b``, or None if it is trivially unsatisfiable (two different event types)."""
    if not b or a is b:
        return a
    if not a:
        return b
    return _conjoin(a, b)


@functools.lru_cache(maxsize=65_536)
def _conjoin(a: Guard, b: Guard) -> Guard | None:
    combined = a | b
    types = {lit[1] for lit in combined if lit[0] == "T"}
    if len(types) > 1:
        return None
    return combined


def holds(guard: Guard, type_name: str | None, mask: int) -> bool:
    """Whether an event with this type and predicate bit mask satisfies the guard."""
    for literal in guard:
        kind = literal[0]
        if kind == "T":
            if literal[1] != type_name:
                return False
        elif kind == "P":
            if not (mask >> literal[1]) & 1:
                return False
        elif holds(literal[1], type_name, mask):
            return False
    return True


def describe(guard: Guard, pred_texts: list[str]) -> str:
    """Readable text of a guard, for ``explain``."""
    if not guard:
        return "TRUE"
    parts = []
    for literal in sorted(guard, key=_literal_key):
        kind = literal[0]
        if kind == "T":
            parts.append(f"type={literal[1]}")
        elif kind == "P":
            parts.append(f"[{pred_texts[literal[1]]}]")
        else:
            parts.append(f"NOT({describe(literal[1], pred_texts)})")
    return " & ".join(parts)


def _literal_key(literal: Literal) -> tuple:
    order = {"T": 0, "P": 1, "N": 2}[literal[0]]
    return (order, str(literal[1]))
