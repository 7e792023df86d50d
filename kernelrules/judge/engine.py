"""The rule engine: judge a config on an architecture, and repair it.

Judging evaluates every rule that applies to the architecture against one
environment (``config``, ``arch``, ``kernel``, ``facts``, ``problem``). A rule
whose condition names a fact or problem value that is not known yet is
*deferred* (it cannot judge before a compile); one that names a config key the
config does not have does not apply. A config is rejected when an
error-severity rule fires.

Repair searches, breadth first, over the firing rules' ordered repairs for
the nearest config (fewest edits) that no error rule rejects.
"""

from __future__ import annotations

import gc
from typing import Any, Callable, Iterable, Mapping, Sequence

from .. import expr as exprlang
from ..config import KernelConfig
from .ruleset import Rule, RuleSet, builtin_rules
from .verdict import Diagnostic, Verdict

#: Namespaces whose missing names mean "cannot judge yet" rather than "does not apply".
DEFERRING_ROOTS = frozenset({"facts", "problem"})
#: The smallest batch for which judge_many compiles the conditions with the architecture's values bound.
BIND_BATCH = 256


def _code_of(diagnostic: Diagnostic) -> str:
    return diagnostic.code


def kernel_namespace(kernel: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``kernel.*`` mapping: what is known about the kernel without compiling it."""
    ns = dict(kernel or {})
    dtypes = [str(d) for d in ns.get("dtypes", ()) or ()]
    if "dtypes" in ns:
        ns["dtypes"] = dtypes
        ns.setdefault("fp8_dtypes", sorted({d for d in dtypes if d.startswith("fp8")}))
    return ns


class Engine:
    """Judges configs with a rule set; plans (rules per architecture) are cached."""

    def __init__(self, rules: RuleSet | None = None) -> None:
        self.rules = rules if rules is not None else builtin_rules()
        self._plans: dict[tuple[str, str | None], tuple[Rule, ...]] = {}
        self._bound: dict[int, tuple[Mapping[str, Any], dict[Rule, Any]]] = {}

    def plan(self, arch: Any) -> tuple[Rule, ...]:
        """The rules that apply to ``arch``, in code order."""
        key = (arch.name, getattr(arch, "sku", None))
        plan = self._plans.get(key)
        if plan is None:
            plan = tuple(r for r in self.rules if r.applies(arch))
            self._plans[key] = plan
        return plan

    def environment(
        self,
        config: KernelConfig,
        arch: Any,
        kernel: Mapping[str, Any] | None = None,
        facts: Mapping[str, Any] | None = None,
        problem: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The evaluation environment for one (config, arch) pair."""
        return {
            "config": config.namespace(arch.vendor),
            "arch": arch.namespace(),
            "kernel": kernel_namespace(kernel),
            "facts": dict(facts or {}),
            "problem": dict(problem or {}),
        }

    def judge(
        self,
        config: KernelConfig,
        arch: Any,
        *,
        kernel: Mapping[str, Any] | None = None,
        facts: Mapping[str, Any] | None = None,
        problem: Mapping[str, Any] | None = None,
        stage: str = "config",
    ) -> Verdict:
        """Evaluate every applicable rule; no repair."""
        env = self.environment(config, arch, kernel, facts, problem)
        verdict = Verdict(config=config, arch=arch.name, stage=stage)
        for rule in self.plan(arch):
            self._apply_rule(rule, env, verdict)
        return verdict

    def _apply_rule(self, rule: Rule, env: Mapping[str, Any], verdict: Verdict) -> None:
        if rule.fact_names and not rule.fact_names <= env["facts"].keys():
            verdict.deferred.append(rule.code)  # a fact it names is not known yet
            return
        try:
            fired = rule.condition.evaluate(env)
        except exprlang.MissingName as missing:
            if missing.root in DEFERRING_ROOTS:
                verdict.deferred.append(rule.code)
            return
        except exprlang.ExprError as exc:
            verdict.diagnostics.append(
                Diagnostic(rule.code, rule.name, "warning", f"could not judge this config: {exc.message}", rule.stage)
            )
            return
        if fired:
            fix = rule.repairs[0].description if rule.repairs else None
            verdict.diagnostics.append(
                Diagnostic(rule.code, rule.name, rule.severity, None, rule.stage, fix, template=rule.message, env=env)
            )

    def check(
        self,
        config: KernelConfig,
        arch: Any,
        *,
        kernel: Mapping[str, Any] | None = None,
        facts: Mapping[str, Any] | None = None,
        problem: Mapping[str, Any] | None = None,
        repair: bool = True,
        facts_fn: Callable[[KernelConfig], Mapping[str, Any]] | None = None,
        stage: str = "config",
    ) -> Verdict:
        """Judge one config and, when it is rejected, find the nearest config that passes."""
        verdict = self.judge(config, arch, kernel=kernel, facts=facts, problem=problem, stage=stage)
        if repair and verdict.rejected:
            found = self.repair(config, arch, kernel=kernel, facts=facts, problem=problem, facts_fn=facts_fn)
            if found is not None:
                verdict.repair, verdict.repair_steps = found
        return verdict

    def judge_many(
        self,
        configs: Iterable[KernelConfig],
        arch: Any,
        *,
        kernel: Mapping[str, Any] | None = None,
        facts_fn: Callable[[KernelConfig], Mapping[str, Any]] | None = None,
        stage: str = "config",
    ) -> list[Verdict]:
        """Judge many configs on one architecture (the fast path; no repair).

        ``facts_fn`` gives each config its facts (the resource model's predictions).
        A rule that reads neither ``config`` nor ``facts`` gives the same outcome for
        every config, so it is evaluated once for the whole batch.
        """
        collecting = gc.isenabled()
        gc.disable()  # judging allocates many small acyclic objects; cyclic GC passes only cost time
        try:
            return self._judge_many(list(configs), arch, kernel, facts_fn, stage)
        finally:
            if collecting:
                gc.enable()

    def _judge_many(self, configs: list[KernelConfig], arch: Any, kernel: Mapping[str, Any] | None,
                    facts_fn: Callable[[KernelConfig], Mapping[str, Any]] | None, stage: str) -> list[Verdict]:
        arch_ns = arch.namespace()
        kernel_ns = kernel_namespace(kernel)
        vendor, arch_name = arch.vendor, arch.name
        varying = {"config", "facts"}
        plan = self.plan(arch)
        shared = Verdict(config=KernelConfig(), arch=arch_name, stage=stage)
        for rule in plan:
            if not rule.roots & varying:
                self._apply_rule(rule, {"config": {}, "arch": arch_ns, "kernel": kernel_ns, "facts": {}, "problem": {}}, shared)
        shared_diagnostics, shared_deferred = shared.diagnostics, shared.deferred
        dynamic = [r for r in plan if r.roots & varying]
        # each rule with its condition (bound to this architecture's values for a large batch) and its diagnostic's parts
        conditions = self._bound_conditions(dynamic, arch_ns) if len(configs) >= BIND_BATCH else None
        steps = [(conditions[rule] if conditions else rule.condition.evaluate,
                  (rule, rule.code, rule.name, rule.severity, rule.stage,
                   rule.repairs[0].description if rule.repairs else None, rule.message))
                 for rule in dynamic]
        new_diagnostic = Diagnostic.fired
        last_keys: Any = None
        split: tuple[list[Any], list[str]] = ([], [])
        verdicts = []
        append = verdicts.append
        no_facts: dict[str, Any] = {}
        for config in configs:
            facts = facts_fn(config) if facts_fn is not None else no_facts
            if facts.keys() != last_keys:  # which rules can judge with these facts (the same for most configs)
                known = frozenset(facts)
                split = ([step for step in steps if step[1][0].fact_names <= known],
                         [step[1][1] for step in steps if not step[1][0].fact_names <= known])
                last_keys = known
            active, deferred = split
            env = {"config": config.namespace(vendor), "arch": arch_ns, "kernel": kernel_ns,
                   "facts": facts if facts_fn is not None else {}, "problem": {}}
            verdict = Verdict(config, arch_name, stage, [], list(deferred))
            diagnostics = verdict.diagnostics
            for evaluate, step in active:
                try:  # _apply_rule, inlined: this loop is the hot path of prune
                    fired = evaluate(env)
                except exprlang.ExprError:
                    self._apply_rule(step[0], env, verdict)  # the slow path says why
                    continue
                if fired:
                    diagnostics.append(new_diagnostic(*step[1:], env))
            if shared_diagnostics or shared_deferred:
                diagnostics.extend(shared_diagnostics)
                verdict.deferred.extend(shared_deferred)
                diagnostics.sort(key=_code_of)
            append(verdict)
        return verdicts

    def _bound_conditions(self, rules: Sequence[Rule], arch_ns: Mapping[str, Any]) -> dict[Rule, Any]:
        """Each rule's condition compiled with the architecture's values as constants (cached per namespace).

        The bound condition gives what the rule's own gives in any environment whose
        ``arch`` is ``arch_ns`` (:func:`kernelrules.expr.compile_expr`), with fewer steps.
        """
        cached = self._bound.get(id(arch_ns))
        if cached is None or cached[0] is not arch_ns:  # the namespace is kept alive with its entry
            if len(self._bound) >= 64:
                self._bound.clear()
            cached = (arch_ns, {})
            self._bound[id(arch_ns)] = cached
        conditions = cached[1]
        for rule in rules:
            if rule not in conditions:
                conditions[rule] = exprlang.compile_expr(rule.condition.node, {"arch": arch_ns})
        return conditions

    # -- repair -----------------------------------------------------------------

    def repair(
        self,
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
        """The nearest passing config and the repair steps to it (see :mod:`kernelrules.judge.repair`)."""
        from .repair import nearest_passing

        return nearest_passing(self, config, arch, kernel=kernel, facts=facts, problem=problem,
                               max_edits=max_edits, max_candidates=max_candidates, facts_fn=facts_fn,
                               frozen=frozen)


_DEFAULT_ENGINE: Engine | None = None


def default_engine() -> Engine:
    """An engine over the built-in rules, created once."""
    global _DEFAULT_ENGINE
    if _DEFAULT_ENGINE is None:
        _DEFAULT_ENGINE = Engine()
    return _DEFAULT_ENGINE


def check(
    config: Any,
    arch: Any,
    *,
    kernel: Mapping[str, Any] | None = None,
    facts: Mapping[str, Any] | None = None,
    problem: Mapping[str, Any] | None = None,
    repair: bool = True,
) -> Verdict:
    """Judge one config (KernelConfig, triton.Config or dict) on an architecture (Arch or name)."""
    if isinstance(arch, str):
        from ..arch import load_arch

        arch = load_arch(arch)
    return default_engine().check(KernelConfig.coerce(config), arch, kernel=kernel, facts=facts, problem=problem,
                                  repair=repair)


def judge_examples(rule: Rule, kind: str, engine: Engine | None = None) -> list[tuple[Mapping[str, Any], bool]]:
    """Run a rule's ``bad`` or ``good`` examples: (example, whether the rule fired) pairs."""
    from ..arch import load_arch

    engine = engine or Engine(RuleSet([rule]))
    results = []
    for example in rule.examples[kind]:
        arch = load_arch(example["arch"])
        config = KernelConfig.from_dict(example["config"])
        verdict = engine.judge(
            config, arch, kernel=example.get("kernel"), facts=example.get("facts"), problem=example.get("problem")
        )
        results.append((example, any(d.code == rule.code for d in verdict.diagnostics)))
    return results


__all__: Sequence[str] = ("Diagnostic", "Verdict", "Engine", "check", "judge_examples")
