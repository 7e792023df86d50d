"""Find guesses that compile: when lint's first probe of a kernel fails on values it only guessed.

Lint judges a kernel nobody wrote a spec for with guessed values: constexprs
(:mod:`kernelrules.specify.constexpr_guess`) and pointer element types (``*fp16`` unless the name
or the body says otherwise, :mod:`kernelrules.specify.signatures`). When the first config does
not compile with them, the cause is usually a guess, not the kernel: a fp32 buffer read
as fp16 (``Both operands must be same dtype``), a flag whose other branch defines a local
name (``NameError``), a size a static assert wants larger. :func:`settle` tries, within a
fixed budget of probe compiles, the other pointer types (``*bf16``, ``*fp32``, ``*i8``) and each
guessed constexpr's next plausible value, alone and then with each pointer type, and
keeps the first combination that compiles. Pure search: the caller's ``probe`` compiles.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .constexpr_guess import alternatives
from ..compile.descriptor import format_type, is_descriptor, parse
from ..compile.limits import undefined_name

#: Probe compiles one search may spend (each is one config on one architecture, cached).
DEFAULT_BUDGET = 24

#: Probe compiles the kernel's own proposals (:func:`try_proposals`) may spend before the search below.
PROPOSAL_BUDGET = 8
#: Rounds of proposals: a proposal that fails with another error is the base of the next round's.
PROPOSAL_ROUNDS = 3
#: When the first config's compile runs past the time limit, each guessed integer is tried smaller, all at
#: once (a guessed 16 as a pooling window ``kernel_h``, a loop count unrolled at compile time, or a 128 as a
#: block size can make ptxas run for minutes where the kernel's real values compile in a second).
SMALLER = {16: 2, 128: 32}

#: ``propose(message, change)``: constexpr changes to probe on top of ``change`` after ``message``.
Proposer = Callable[[str, Mapping[str, Any]], list]

#: Pointer element types tried, in order, for pointers whose ``*fp16`` was only guessed from the name.
POINTER_ALTERNATIVES = ("bf16", "fp32", "i8")


@dataclass
class Settled:
    """What the search changed: the signature, constexpr values and the guesses they replaced."""

    spec: Mapping[str, Any]
    constexprs: dict[str, Any] = field(default_factory=dict)
    replaced: dict[str, Any] = field(default_factory=dict)
    pointer_type: str | None = None
    pointers: tuple[str, ...] = ()
    probes: int = 0
    #: What the replaced guesses did, in words.
    failure: str = "did not compile"

    @property
    def changed(self) -> bool:
        return bool(self.constexprs) or self.pointer_type is not None


def guessed_fp16_pointers(spec: Mapping[str, Any], provenance: Mapping[str, str]) -> list[str]:
    """Pointers typed ``*fp16`` only because nothing said otherwise (provenance ``naming``), and tensor
    descriptors whose ``fp16`` element type is such a guess (``tensordesc<fp16[...]>``)."""
    return [k for k, v in spec.items() if (v == "*fp16" and provenance.get(k) == "naming")
            or (is_descriptor(v) and parse(v)[0] == "fp16" and str(provenance.get(k, "")).startswith("naming"))]


def _retyped(value: Any, dtype: str) -> Any:
    """``value`` (``*fp16`` or ``tensordesc<fp16[...]>``) with element type ``dtype``."""
    return format_type(dtype, parse(value)[1]) if is_descriptor(value) else f"*{dtype}"


def pointer_variants(spec: Mapping[str, Any], provenance: Mapping[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """``[(dtype, spec with the guessed fp16 pointers retyped)]`` for each alternative element type."""
    guessed = guessed_fp16_pointers(spec, provenance)
    if not guessed:
        return []
    return [(dtype, {k: (_retyped(v, dtype) if k in guessed else v) for k, v in spec.items()})
            for dtype in POINTER_ALTERNATIVES]


def local_names(func: ast.FunctionDef | None) -> set[str]:
    """Names a jit function assigns: a NameError on one means a branch the guesses did not take."""
    if func is None:
        return set()
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def retryable(result: Any, locals_: set[str]) -> bool:
    """A failed probe that other guesses may fix: a compile error, not a name kernelrules cannot resolve."""
    if result is None or result.ok or result.error_kind != "compile_error":
        return False
    name = undefined_name(result.message)
    return name is None or name in locals_


def settle(probe: Callable[[Mapping[str, Any], Mapping[str, Any]], Any], spec: Mapping[str, Any],
           provenance: Mapping[str, str], guessed: Mapping[str, Any], *, locals_: set[str] = frozenset(),
           budget: int = DEFAULT_BUDGET, propose: Proposer | None = None) -> Settled:
    """Search guesses until the first config compiles (within the compile time limit).

    ``probe(spec, changes)`` compiles the first config with signature ``spec`` and the
    constexpr ``changes`` applied, returning a compile result (``ok``, ``error_kind``,
    ``message``) or None. ``propose(message, change)``: changes read from the kernel and the
    error, tried first (:func:`try_proposals`, within :data:`PROPOSAL_BUDGET` more probes).
    Returns what to change; nothing when the first probe compiles or when its failure is not
    one a guess causes; when nothing within the budgets compiles, the proposals that got past
    the first error (so that the kernel's reason names the error it meets next). A first probe
    that runs past the time limit gets one more, with the guessed integers smaller (:data:`SMALLER`).
    """
    first = probe(spec, {})
    if first is not None and first.error_kind == "timeout":
        return _smaller_guesses(probe, spec, guessed)
    if not retryable(first, set(locals_)):
        return Settled(spec, probes=1)
    proposed, spent, base = try_proposals(probe, spec, first.message, propose, guessed) if propose else (None, 0, {})
    if proposed:
        return Settled(spec, proposed, {k: guessed[k] for k in proposed}, probes=1 + spent)
    variants = pointer_variants(spec, provenance)
    singles = [{name: alt} for name, value in guessed.items() for alt in alternatives(value)]
    tries: list[tuple[str | None, Mapping[str, Any], dict[str, Any]]] = [(t, s, {}) for t, s in variants]
    tries += [(None, spec, change) for change in singles]
    tries += [(t, s, change) for t, s in variants for change in singles]
    tries = [(t, s, base) for t, s in variants if base] + tries  # the proposals' fix, then other types too
    probes = 1 + spent
    for pointer_type, variant, change in tries[:budget]:
        probes += 1
        result = probe(variant, change)
        if result is not None and result.ok:
            pointers = tuple(guessed_fp16_pointers(spec, provenance)) if pointer_type else ()
            return Settled(variant, dict(change), {k: guessed[k] for k in change}, pointer_type, pointers, probes)
    # Nothing compiled: keep what the kernel's own proposals fixed, so the reason names the error after it.
    return Settled(spec, dict(base), {k: guessed[k] for k in base}, probes=probes)


def _smaller_guesses(probe: Callable[[Mapping[str, Any], Mapping[str, Any]], Any], spec: Mapping[str, Any],
                     guessed: Mapping[str, Any]) -> Settled:
    """The first config ran past the compile limit with guessed integers: probe once with all of them smaller
    (:data:`SMALLER`); keep that when it compiles, else nothing (the kernel's compiles then meet the limit)."""
    change = {name: SMALLER[value] for name, value in guessed.items() if type(value) is int and value in SMALLER}
    if not change:
        return Settled(spec, probes=1)
    result = probe(spec, change)
    if result is not None and result.ok:
        return Settled(spec, change, {name: guessed[name] for name in change}, probes=2,
                       failure="ran past the compile time limit")
    return Settled(spec, probes=2)


def try_proposals(probe: Callable[[Mapping[str, Any], Mapping[str, Any]], Any], spec: Mapping[str, Any],
                  message: str, propose: Proposer, guessed: Mapping[str, Any], *,
                  budget: int = PROPOSAL_BUDGET) -> tuple[dict[str, Any] | None, int, dict[str, Any]]:
    """Probe the changes ``propose`` reads from the kernel and the last error, in rounds: when no
    proposal compiles, the first that failed with another error (it fixed one thing and met the
    next) is the base of the next round; a probe that fails otherwise (a compile past its time
    limit) ends the proposals. Returns the change that compiled (or None), the probes spent and
    the last base (``{}`` when no proposal got past the first error)."""
    base: dict[str, Any] = {}
    probes = 0
    for _ in range(PROPOSAL_ROUNDS):
        progress = None
        for change in propose(message, base):
            trial = {**base, **{k: v for k, v in change.items() if k in guessed}}
            if trial == base:
                continue
            if probes >= budget:
                return None, probes, base
            probes += 1
            result = probe(spec, trial)
            if result is not None and result.ok:
                return trial, probes, base
            if result is None or result.error_kind != "compile_error":
                return None, probes, base  # a compile that ran past its limit: the next ones would too
            if progress is None and result.message != message:
                progress = (trial, result.message)
        if progress is None:
            break
        base, message = progress
    return None, probes, base
