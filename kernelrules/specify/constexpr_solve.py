"""Values of a kernel's guessed constexprs that break none of its constraints (issue 14).

:func:`solve` takes the :class:`~kernelrules.specify.constexpr_constraints.KernelFacts` of a kernel
and searches assignments of its guessed names, changing as few as possible: for each name, the
values the body compares it with (literals, ``None``, module constants), for an integer the
constraints' own integers and the powers of two nearest the guess, for a flag the other truth
value. Fewest changes first, then fewest block sizes changed (a launch's block sizes usually
come from its configs), then the values nearest the guesses. Pure Python over the syntax tree,
within :data:`SOLVE_BUDGET` evaluations; nothing is compiled here.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any, Iterator, Mapping, Sequence

from ..config import is_block_size_name
from .constexpr_constraints import Constraint, KernelFacts, broken, violations

#: Constraint-set evaluations one :func:`solve` may spend (pure Python, no compile).
SOLVE_BUDGET = 20_000
#: Guesses :func:`solve` changes together, at most.
MAX_CHANGES = 3
#: Integers tried for a guessed integer besides the constraints' own literals.
POWERS_OF_TWO = tuple(1 << k for k in range(0, 13))


def _names_in(constraint: Constraint) -> set[str]:
    """Kernel parameters a constraint reads, following locals, bindings and the caller's guards."""
    found: set[str] = set()
    pending = [(e, constraint.scope) for e in constraint.exprs] + [(t, s) for t, _, s in constraint.guards]
    seen: set[tuple[int, int]] = set()
    while pending:
        expr, scope = pending.pop()
        if (id(expr), id(scope)) in seen or len(seen) > 2000:
            continue
        seen.add((id(expr), id(scope)))
        for node in ast.walk(expr):
            if not isinstance(node, ast.Name):
                continue
            if node.id in scope.bindings and scope.outer is not None:
                pending.append((scope.bindings[node.id], scope.outer))
            elif scope.outer is None and node.id in scope.params:
                found.add(node.id)
            elif node.id in scope.derived:
                pending.append((scope.derived[node.id], scope))
    return found


def _candidates(name: str, value: Any, facts: KernelFacts) -> list[Any]:
    """Values to try for a guessed ``name`` besides ``value``: what the body compares it with, then
    for an integer the constraints' literals and powers of two nearest the guess."""
    compared = [v for v in facts.literals.get(name, []) if not (type(v) is type(value) and v == value)]
    if isinstance(value, bool):
        rest: list[Any] = [not value]
    elif type(value) is not int or any(isinstance(v, str) for v in compared):
        rest = []
    else:
        near = sorted(set(POWERS_OF_TWO) | facts.integers,
                      key=lambda v: (abs(v.bit_length() - value.bit_length()), v not in facts.integers, v))
        rest = [v for v in near if v != value]
    return (compared + [v for v in rest if v not in compared])[:16]


def solve(facts: KernelFacts, values: Mapping[str, Any], guessed: Sequence[str], *,
          others: Sequence[Mapping[str, Any]] = (), limit: int = 3, budget: int = SOLVE_BUDGET) -> list[dict[str, Any]]:
    """Up to ``limit`` changes of the ``guessed`` names of ``values`` under which no constraint is broken
    (in ``values`` nor in the ``others`` configs' values); ``[]`` when none is broken or none is found
    within ``budget`` evaluations. A broken constraint that no change meets on its own (an assert
    for another architecture, a shape read wrongly) is set aside rather than block the others.
    Order: fewest changes, then fewest block sizes changed (a launch's block sizes usually come
    from its configs), then the candidates nearest the guesses."""
    every = [values, *others]
    broken_now = list({id(c): c for v in every for c in violations(facts, v)}.values())
    if not broken_now:
        return []
    search = dict(values=values, every=every, guessed=guessed, facts=facts)
    found = _search(facts.constraints, limit=limit, budget=budget, **search)
    if found:
        return found
    hopeless = {id(c) for c in broken_now if not _search([c], limit=1, budget=budget // 10, **search)}
    if not hopeless or len(hopeless) == len(broken_now):
        return []
    kept = [c for c in facts.constraints if id(c) not in hopeless]
    return _search(kept, limit=limit, budget=budget, **search)


def _broken_in(constraints: Sequence[Constraint], values: Mapping[str, Any]) -> list[Constraint]:
    return [c for c in constraints if broken(c, values)]


def _search(constraints: Sequence[Constraint], *, values: Mapping[str, Any], every: Sequence[Mapping[str, Any]],
            guessed: Sequence[str], facts: KernelFacts, limit: int, budget: int) -> list[dict[str, Any]]:
    """Changes of the guessed names the ``constraints`` read under which none is broken in any of ``every``."""
    involved = set().union(set(), *(_names_in(c) for c in constraints)) & set(guessed)
    first = set().union(set(), *(_names_in(c) for v in every for c in _broken_in(constraints, v)))
    order = list(guessed)
    names = sorted(involved, key=lambda n: (n not in first, order.index(n)))
    options = {n: _candidates(n, values[n], facts) for n in names}
    found: list[dict[str, Any]] = []
    for spent, change in enumerate(_changes(names, options, budget)):
        if spent >= budget or (found and len(change) > len(found[0])):
            break
        if not any(_broken_in(constraints, {**v, **change}) for v in every):
            found.append(change)
            if len(found) >= limit:
                break
    return found


def _changes(names: Sequence[str], options: Mapping[str, list[Any]],
             budget: int = SOLVE_BUDGET) -> Iterator[dict[str, Any]]:
    """Assignments changing 1, then 2, ... :data:`MAX_CHANGES` of ``names``; within each size, those
    changing fewer block sizes, then those nearest the guesses (the sum of each value's place in its
    name's candidate list) first."""
    left = budget
    for size in range(1, MAX_CHANGES + 1):
        ranked: list[tuple[int, int, int, dict[str, Any]]] = []
        for combo in itertools.combinations(names, size):
            blocks = sum(1 for n in combo if is_block_size_name(n))
            for picked in itertools.product(*(list(enumerate(options[n])) for n in combo)):
                if len(ranked) >= left:
                    break
                change = dict(zip(combo, (v for _, v in picked)))
                ranked.append((blocks, sum(rank for rank, _ in picked), len(ranked), change))
        ranked.sort(key=lambda item: item[:3])
        left -= len(ranked)
        yield from (change for *_, change in ranked)
        if left <= 0:
            return
