"""Repair: the nearest config that passes, by the rules' own ordered config edits.

Breadth first over the repairs of the rules that reject a config (in rule order,
then repair order), re-judging every candidate, so the first passing candidate has
the fewest edits. ``facts_fn`` re-predicts each candidate's facts (the resource
model), since a smaller tile needs less shared memory.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Mapping

from .. import expr as exprlang
from ..config import KernelConfig
from .ruleset import Repair, Rule


def nearest_passing(
    engine: Any,
    config: KernelConfig,
    arch: Any,
    *,
    kernel: Mapping[str, Any] | None = None,
    facts: Mapping[str, Any] | None = None,
    problem: Mapping[str, Any] | None = None,
    max_edits: int = 8,
    max_candidates: int = 512,
    facts_fn: Callable[[KernelConfig], Mapping[str, Any]] | None = None,
    frozen: frozenset[str] = frozenset(),
) -> tuple[KernelConfig, tuple[str, ...]] | None:
    """Breadth-first search over rule repairs; None when the config passes or nothing is found.

    ``frozen`` names config keys a repair may not change: values fixed by the problem
    (a space file's ``fixed``, a spec's constexprs such as HEAD_DIM), not tuning knobs.
    """
    queue: deque[tuple[KernelConfig, tuple[str, ...]]] = deque([(config, ())])
    seen = {config.key()}
    while queue and len(seen) <= max_candidates:
        candidate, steps = queue.popleft()
        if facts_fn is not None and steps:
            facts = facts_fn(candidate)
        verdict = engine.judge(candidate, arch, kernel=kernel, facts=facts, problem=problem)
        if not verdict.rejected:
            return (candidate, steps) if steps else None
        if len(steps) >= max_edits:
            continue
        env = engine.environment(candidate, arch, kernel, facts, problem)
        for rule in _firing_error_rules(engine, verdict):
            for step in rule.repairs:
                child = apply_repair(step, candidate, env)
                if child is not None and frozen and any(
                        child.to_dict().get(k) != candidate.to_dict().get(k) for k in frozen):
                    continue
                if child is not None and child.key() not in seen:
                    seen.add(child.key())
                    queue.append((child, steps + (f"{rule.code}: {step.description}",)))
    return None


def _firing_error_rules(engine: Any, verdict: Any) -> list[Rule]:
    codes = [d.code for d in verdict.diagnostics if d.severity == "error"]
    return [rule for code in codes if (rule := engine.rules.get(code)) is not None]


def apply_repair(repair: Repair, config: KernelConfig, env: Mapping[str, Any]) -> KernelConfig | None:
    """Apply one repair to a config; None when it does not apply or changes nothing."""
    try:
        if repair.when is not None and not repair.when.evaluate(env):
            return None
        changes: dict[str, Any] = {}
        config_ns = env["config"]
        for key, compiled in repair.set:
            targets = _repair_targets(key, config_ns, env.get("facts", {}))
            for target in targets:
                if target not in config_ns:
                    continue
                changes[target] = compiled.evaluate({**env, "value": config_ns[target]})
    except exprlang.ExprError:
        return None
    removed: list[str] = []
    for key in repair.remove:
        removed.extend(config_ns.get("amd_options", {}) if key == "@amd_options" else [key])
    child = config.replace(changes, removed)
    return None if child.key() == config.key() else child


def _repair_targets(key: str, config_ns: Mapping[str, Any], facts: Mapping[str, Any]) -> list[str]:
    """Config keys a repair's ``set`` key stands for: itself, every block size, or a dot dimension."""
    if key == "@blocks":
        return list(config_ns.get("blocks", {}))
    if key.startswith("@dot_"):
        name = (facts.get("dot_dims") or {}).get(key[len("@dot_"):])
        return [name] if name else []
    return [key]


