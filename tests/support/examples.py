"""Helpers of the hand-written examples (golden and reference tests): a small declaration, event
builders, the reference run, and the supports of a result by trigger."""

from __future__ import annotations

import ceql

DECL = """
CREATE STREAM S {
  EVENT A { id:int, v:int, s:string },
  EVENT B { id:int, v:int, p:double, s:string },
  EVENT C { id:int, v:int, s:string },
  EVENT D { id:int, v:int, s:string }
}
"""
SCHEMA = ceql.declare(DECL)


def ev(kind: str, v: int = 0, **more) -> dict:
    return {"event_type": kind, "id": more.pop("id", 0), "v": v, "s": more.pop("s", ""), **more}


def letters(text: str) -> list[dict]:
    return [ev(letter) for letter in text]


def run(query: str, stream, **options):
    """The reference evaluator's complex events of ``query`` (over DECL) on ``stream``."""
    return ceql.reference.run(ceql.check(query, SCHEMA), stream, **options)


def supports(matches) -> dict[int, set[tuple[int, ...]]]:
    """The supports (positions) of the complex events, by trigger."""
    out: dict[int, set[tuple[int, ...]]] = {}
    for match in matches:
        out.setdefault(match.trigger, set()).add(match.positions)
    return out


def select(strategy: str | None) -> str:
    return f"SELECT {strategy} *" if strategy else "SELECT *"
