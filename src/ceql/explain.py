"""Describe how a query is evaluated: normalised formula, predicates, plan and automaton."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ceql.compile import guards
from ceql.errors import UnsupportedQueryError
from ceql.lang.printer import print_formula, print_query, print_within

if TYPE_CHECKING:
    from ceql.api import Query

MAX_STATES = 300


def automaton_graph(query: Query) -> tuple[list, list, set, set]:
    """The reachable states (numbered in discovery order) and transitions of the automaton:
    (states, edges (source, guard text, labels, target), initial, final)."""
    machine = query.plan.compiled.machine
    texts = query.plan.compiled.predicates.texts
    number: dict = {}
    order: list = []
    for state in machine.initial():
        number.setdefault(state, len(number))
        order.append(state)
    edges = []
    index = 0
    while index < len(order) and len(order) <= MAX_STATES:
        state = order[index]
        index += 1
        try:
            transitions = machine.moves(state)
        except UnsupportedQueryError as exc:
            edges.append((number[state], f"(not expanded: {exc.message})", [], number[state]))
            continue
        for guard, labels, target in transitions:
            if not machine.final(target) and not _has_moves(machine, target):
                continue  # a dead end (e.g. the end of a sub-formula that continues elsewhere)
            if target not in number:
                number[target] = len(number)
                order.append(target)
            visible = sorted(label for label in labels if not label.startswith("\x00"))
            visible += sorted(_private(label) for label in labels if label.startswith("\x00"))
            edges.append((number[state], guards.describe(guard, texts), visible, number[target]))
    initial = {number[s] for s in machine.initial()}
    final = {number[s] for s in order if machine.final(s)}
    return list(range(len(order))), edges, initial, final


def _has_moves(machine, state) -> bool:
    try:
        return machine.may_move(state)
    except UnsupportedQueryError:
        return True


def _private(label: str) -> str:
    """A private label as explain shows it: ``#N.x`` (condition N reads this event as x),
    ``#N.end`` (an instance of its formula ends), ``@S.x`` (a scope's event), ``U0.tick`` ..."""
    body = label[1:]
    head, _, name = body.partition(":")
    if head.startswith("H"):
        return f"@{head[1:]}.{name}"
    if head.startswith("U"):
        return f"{head}.{name}"
    return f"#{head}.{name}"


def explain(query: Query, dot: bool = False) -> str:
    """Text (default) or Graphviz DOT description of a compiled query."""
    states, edges, initial, final = automaton_graph(query)
    if dot:
        return _dot(states, edges, initial, final, legend(query))
    plan = query.plan
    checked = query.checked
    lines = ["query:", _indent(print_query(checked.query)), ""]
    if plan.formula != checked.query.formula:
        lines += ["normalised formula:", _indent(print_formula(plan.formula)), ""]
    else:
        lines += ["formula:", _indent(print_formula(plan.formula)), ""]
    lines.append("passes:")
    for name, note in plan.passes:
        lines.append(f"  {name}: {note}")
    lines.append("")
    lines.append("predicates (evaluated column-wise, one bit each):")
    for pid, text in enumerate(plan.compiled.predicates.texts):
        lines.append(f"  p{pid}: {text}")
    if not plan.compiled.predicates.texts:
        lines.append("  (none)")
    if plan.compiled.sites:
        lines.append("conditions across events (registers):")
        for site in plan.compiled.sites:
            lines.append(f"  {site.text}: decided {site.where}")
    lines.append("")
    lines.append("plan:")
    within = checked.query.within
    if within is None:
        lines.append("  window: none (partial matches are kept for the whole stream)")
    else:
        how = "expired partial matches are pruned" if plan.monotone else "exact, not pruned"
        lines.append(f"  window: WITHIN {print_within(within)}; {how}")
    if plan.partition_groups:
        groups = ", ".join("[" + ", ".join(g) + "]" for g in plan.partition_groups)
        lines.append(
            f"  partition by {groups}: one evaluator state per key, created on demand, "
            "dropped when it holds no live run"
        )
    lines.append(
        f"  selection strategy: {plan.strategy}; consume by: {plan.consume}"
        + (f"; limit {plan.limit} per trigger" if plan.limit else "")
    )
    for note in plan.notes:
        lines.append(f"  note: {note}")
    from ceql.runtime.kernel import kernel_notes, kernel_path, unsupported
    from ceql.runtime.limits import growth_warnings

    reason = unsupported(plan)
    if reason is None:
        lines.append("  engine: the compiled kernel on large inputs of any form (engine='compiled' always)")
        path, why = kernel_path(plan)
        lines.append(f"  kernel path: {path}: {why}")
        for note in kernel_notes(plan):
            lines.append(f"  kernel: {note}")
    else:
        lines.append(f"  engine: the Python evaluator (the compiled kernel does not evaluate {reason})")
    from ceql.runtime.parallel import plan_split

    split, how = plan_split(plan)  # run(..., workers=N), ceql run --workers N
    lines.append(f"  workers: split {how}" if split else f"  workers: one core: {how}")
    for warning in growth_warnings(checked):
        lines.append(f"  warning: {warning}")
    lines.append("")
    lines.append(
        f"automaton: {len(states)} states, {len(edges)} transitions (determinized lazily at run time)"
    )
    for source, guard, labels, target in edges:
        mark = "{" + ", ".join(labels) + "}" if labels else "-"
        lines.append(f"  q{source} --[{guard}] / {mark}--> q{target}")
    lines.append(f"  initial: {', '.join(f'q{s}' for s in sorted(initial))}")
    lines.append(f"  final: {', '.join(f'q{s}' for s in sorted(final))}")
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def legend(query: Query) -> list[str]:
    """What the picture cannot show on its edges, one line each: the query, its window, its
    partition key, its conditions across events (``cN``: the tag ``cN.x`` on an edge means
    condition N reads that event as x), and the other private tags that occur."""
    checked = query.checked
    plan = query.plan
    lines = [" ".join(print_query(checked.query).split())]
    within = checked.query.within
    if within is not None:
        span = print_within(within)
        if within.kind == "time":
            lines.append(f"window: WITHIN {span}: the last event's time minus the first's is under {span.lower()}")
        elif within.kind == "events":
            lines.append(f"window: WITHIN {span}: a match spans fewer than {within.value} positions")
        else:
            lines.append(f"window: WITHIN {span}: the last event's {within.attribute} minus the first's is under {within.value}")
    if plan.partition_groups:
        keys = " or ".join("[" + ", ".join(g) + "]" for g in plan.partition_groups)
        lines.append(f"partition key: {keys}: this automaton runs once per key value")
    for site in plan.compiled.sites:
        lines.append(f"c{site.index}: {site.text}" + (f" (decided {site.where})" if site.where else ""))
    path, why = kernel_path_of(query)
    if path in ("join", "chain"):
        lines.append(f"kernel path: {path}, not this automaton: {why}")
    return lines


def kernel_path_of(query: Query) -> tuple[str, str]:
    """The compiled kernel's path for the query ("join", "chain", "automaton") and why, or
    ("python", why) where the kernel does not evaluate it."""
    from ceql.runtime.kernel import kernel_path, unsupported

    reason = unsupported(query.plan)
    if reason is not None:
        return "python", f"the compiled kernel does not evaluate {reason}"
    return kernel_path(query.plan)


def _readable(tag: str) -> str:
    """A private tag as the picture shows it: ``#N.x`` -> ``cN.x`` (see the legend)."""
    return "c" + tag[1:] if tag.startswith("#") else tag


_TAG_NOTES = {
    "c": "cN.x: condition cN reads this event as x (cN.*: every event; cN.end: where an instance of it ends)",
    "@": "@N.x: event x of scope N (PARTITION BY or START inside the formula)",
    "U": "UN.start/tick/rep/end: bookkeeping of the N-th UNLESS",
}


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _dot(states, edges, initial, final, notes: list[str] | None = None) -> str:
    """Graphviz DOT of the automaton. Transitions between the same two states share one edge
    with a line each (so the labels of several self-loops cannot overlap); a skip loop (any
    event, no label) reads "any event (skipped)"; the legend under the picture names the
    window, the partition key and the conditions across events."""
    out = [
        "digraph ceql {",
        "  rankdir=LR;",
        '  node [shape=circle, fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
        "  start [shape=point];",
    ]
    for state in states:
        shape = "doublecircle" if state in final else "circle"
        out.append(f'  q{state} [shape={shape}, label="q{state}"];')
    for state in sorted(initial):
        out.append(f"  start -> q{state};")
    grouped: dict[tuple[int, int], list[str]] = {}
    tags: set[str] = set()
    for source, guard, labels, target in edges:
        shown = [_readable(label) for label in labels]
        tags.update(label[0] for label in shown if label[0] in "c@U" and "." in label)
        if guard == "TRUE" and not labels:
            line = "any event (skipped)"
        else:
            line = f"{guard} / " + ("{" + ", ".join(shown) + "}" if shown else "-")
        grouped.setdefault((source, target), []).append(line)
    for (source, target), lines in grouped.items():
        label = "\\n".join(_escape(line) for line in lines)
        out.append(f'  q{source} -> q{target} [label="{label}"];')
    legend = list(notes or []) + [_TAG_NOTES[t] for t in "c@U" if t in tags]
    if legend:
        text = "".join(_escape(line) + "\\l" for line in legend)
        out.append(f'  label="{text}";')
        out.append('  labelloc=b; labeljust=l; fontname="Helvetica"; fontsize=10;')
    out.append("}")
    return "\n".join(out)
