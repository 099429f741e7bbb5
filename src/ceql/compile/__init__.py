"""From a checked query to an automaton: predicates, machines, determinization, rewrites."""
