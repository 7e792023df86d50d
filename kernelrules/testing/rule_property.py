"""The core property of a predicting rule, checked with hypothesis against CPU cross-compiles.

A *predicting* rule judges configs at the config stage from facts the resource model
predicts (shared memory, the dot's shape and MMA path, register demand) instead of
from a compile. What it claims can then be tested: for a config ``c`` on an
architecture ``a``,

    R fires on c at the config stage  <=>  the compiled facts of c break the limit R guards

(``exact=True``). Where a prediction is a documented bound rather than exact, the
one-sided form (``exact=False``) is what the rule promises: R fires => the limit is
broken (no false rejection), and the limit is broken => the prediction admitted it
(``may_break``, e.g. the upper bound over the limit) and R fires on the compiled facts
(caught after compiling).

:class:`RuleProperty` draws configs with hypothesis, judges each one exactly as
``kernelrules prune`` does at the config stage (the resource model learned from probe
compiles of the whole space, then the rule over its predictions), cross-compiles it on
the CPU through the compile pool and cache, and checks the property. A compile that
fails or runs out of time leaves a limit over compiled facts undecided: that example
is *inconclusive* and discarded (a hypothesis event), never counted as a pass.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from .. import expr as exprlang
from ..arch import Arch, load_arch
from ..config import KernelConfig
from ..judge.engine import Engine
from .property_session import PropertySession, default_session
from ..judge.facts_catalogue import REPORTED_FACTS
from ..judge.ruleset import Rule, RuleSet, builtin_rules, expression_roots
from ..space import Space, load_space

#: A limit: an expression in the rule language, or ``callable(facts, arch) -> bool``.
Limit = str | Callable[[Mapping[str, Any], Arch], Any]


class PropertyFailure(AssertionError):
    """The property does not hold for one config; :attr:`observation` has the numbers."""

    def __init__(self, reason: str, observation: "Observation") -> None:
        super().__init__(f"{reason}\n{observation.describe()}")
        self.reason = reason
        self.observation = observation


class Condition:
    """A limit or filter: parsed and checked by kernelrules.expr (never eval), or a callable.

    An expression sees ``config``, ``arch``, ``kernel``, ``facts`` and ``problem``, as a
    rule condition does; a callable gets ``(facts, arch)``. :meth:`holds` is None when
    a fact the expression reads is absent (a failed compile has no ``shared_bytes``).
    """

    def __init__(self, limit: Limit, what: str = "limit") -> None:
        self.callable = limit if callable(limit) else None
        self.source = getattr(limit, "__name__", repr(limit)) if self.callable else str(limit)
        self.fact_names: frozenset[str] = frozenset()
        if self.callable is None:
            try:
                node = exprlang.parse(self.source)
                problems = exprlang.check(node, expression_roots())
            except exprlang.ExprError as exc:
                problems = [exc]
            if problems:
                raise ValueError(f"{what} {self.source!r}: {problems[0].message}")
            self.fact_names = frozenset(n.parts[1] for n in exprlang.ast.walk(node)
                                        if isinstance(n, exprlang.Name) and n.root == "facts" and len(n.parts) > 1)
            self._evaluate = exprlang.compile_expr(node)

    def holds(self, env: Mapping[str, Any], arch: Arch) -> bool | None:
        """Whether the condition is true in ``env``; None when a name it reads is missing."""
        if self.callable is not None:
            try:
                return bool(self.callable(env["facts"], arch))
            except KeyError:
                return None
        try:
            return bool(self._evaluate(env))
        except exprlang.MissingName:
            return None


@dataclass
class Observation:
    """One config judged at the config stage, compiled, and judged against the limit."""

    rule: str
    arch: str
    config: KernelConfig
    predicted: dict[str, Any]
    fired: bool  # the rule fired at the config stage, on predicted facts
    deferred: bool  # the rule could not judge at the config stage
    compiled: dict[str, Any]
    fired_compiled: bool  # the rule fired on the compiled facts
    broken: bool | None  # the compiled facts break the limit (None: undecided)
    may_break: bool | None  # the prediction admits a break (None: not stated)
    shown: tuple[str, ...] = ()  # fact names worth printing

    def describe(self) -> str:
        """The config, the prediction and the compiled facts, for a failure message."""
        lines = [
            f"  rule {self.rule} on {self.arch}, config: {self.config}",
            f"  config stage: {'fired' if self.fired else 'deferred' if self.deferred else 'silent'}"
            f"; compiled stage: {'fired' if self.fired_compiled else 'silent'}"
            f"; limit broken by the compiled facts: {self.broken}"
            + ("" if self.may_break is None else f"; prediction admits a break: {self.may_break}"),
            f"  predicted: {_pick(self.predicted, self.shown)}",
            f"  compiled:  {_pick(self.compiled, self.shown)}",
        ]
        return "\n".join(lines)


def _pick(facts: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    return {name: facts[name] for name in names if name in facts}


# -- the property -----------------------------------------------------------------------


def _as_space(space: Space | str | os.PathLike[str], signature: Mapping[str, Any] | None) -> Space:
    loaded = space if isinstance(space, Space) else load_space(space)
    return dataclasses.replace(loaded, signature=dict(signature)) if signature is not None else loaded


def _as_rule(rule: Rule | str, rules: RuleSet) -> Rule:
    if isinstance(rule, Rule):
        return rule
    found = rules.get(rule)
    if found is None:
        raise ValueError(f"no rule {rule!r} (load your own rules with kernelrules.load_rules and pass rules=)")
    return found


class RuleProperty:
    """The property of one predicting rule on one kernel's space and one architecture.

    ``limit`` is what the compiled facts must break for the rule to be right (an
    expression over ``facts.*``, ``arch.*``, ``config.*``, ... or ``callable(facts,
    arch)``). ``exact`` states an iff; ``exact=False`` the one-sided form with
    ``may_break``, an expression over the *predicted* facts that must hold whenever the
    compiled facts break the limit. ``configs`` narrows what is drawn (a mapping of
    parameter -> values, a Space, or a hypothesis strategy of KernelConfig); the model
    is always learned from the whole space, as ``kernelrules prune`` does. ``where``
    (over config and predicted facts) skips drawn configs, e.g. ones that take minutes
    to compile. ``examples`` are configs always checked first (e.g. one on each side
    of the limit), then ``max_examples`` drawn ones; compiles cost ~1 s each, so that is
    small by default. :attr:`observations` keeps every config checked.
    """

    def __init__(self, rule: Rule | str, space: Space | str | os.PathLike[str], arch: Arch | str, *,
                 limit: Limit, exact: bool = True, may_break: Limit | None = None, rules: RuleSet | None = None,
                 configs: Any = None, where: Limit | None = None, signature: Mapping[str, Any] | None = None,
                 examples: Iterable[KernelConfig | Mapping[str, Any]] = (), max_examples: int = 5,
                 seed: int | None = None, derandomize: bool | None = None, shrink: bool = False,
                 session: PropertySession | None = None) -> None:
        self.rules = rules if rules is not None else builtin_rules()
        self.rule = _as_rule(rule, self.rules)
        self.space = _as_space(space, signature)
        self.arch = load_arch(arch) if isinstance(arch, str) else arch
        if not self.rule.applies(self.arch):
            raise ValueError(f"{self.rule.code} does not apply to {self.arch.name} (applies_to: "
                             f"{', '.join(self.rule.applies_to)}): there is nothing to predict")
        self.limit = Condition(limit)
        self.exact = exact
        self.may_break = Condition(may_break, "may_break") if may_break is not None else None
        self.where = Condition(where, "where") if where is not None else None
        self.configs = configs
        self.examples = [self._config(c) for c in examples]
        self.observations: list[Observation] = []  # every config checked, in order
        self.max_examples, self.seed, self.derandomize, self.shrink = max_examples, seed, derandomize, shrink
        self.session = session or default_session()
        self._engine = Engine(RuleSet([self.rule]))

    # -- one config ---------------------------------------------------------------------

    def _config(self, config: KernelConfig | Mapping[str, Any]) -> KernelConfig:
        """A KernelConfig; a mapping gets the space's fixed values, as drawn configs do."""
        return config if isinstance(config, KernelConfig) else KernelConfig.from_dict({**self.space.fixed, **config})

    def predicted(self, config: KernelConfig) -> dict[str, Any]:
        """The resource model's predictions for a config ({} when no model could be learned)."""
        model = self.session.model(self.space, self.arch, self.rules)
        return model.predict(config) if model is not None else {}

    def environment(self, config: KernelConfig, facts: Mapping[str, Any]) -> dict[str, Any]:
        """What limits and filters see: the rule environment with these facts."""
        return self._engine.environment(config, self.arch, self.space.kernel_info(), facts, self.space.problem)

    def skipped(self, config: KernelConfig) -> bool:
        """Whether ``where`` excludes this config (judged on predicted facts, no compile)."""
        if self.where is None:
            return False
        return not self.where.holds(self.environment(config, self.predicted(config)), self.arch)

    def observe(self, config: KernelConfig | Mapping[str, Any]) -> Observation:
        """Judge one config at the config stage, compile it, judge the compiled facts and the limit."""
        config = self._config(config)
        kernel = self.space.kernel_info()
        predicted = self.predicted(config)
        (verdict,) = self._engine.judge_many([config], self.arch, kernel=kernel, facts_fn=lambda _c: predicted)
        compiled = self.session.compiled(self.space, self.arch, config, predicted)
        after = self._engine.judge(config, self.arch, kernel=kernel, facts=compiled, problem=self.space.problem,
                                   stage="compiled")
        code = self.rule.code
        may_break = None
        if self.may_break is not None:
            may_break = self.may_break.holds(self.environment(config, predicted), self.arch)
        shown = (*sorted(self.rule.fact_names | self.limit.fact_names), "origin", "compile_status",
                 "compile_message", *REPORTED_FACTS)
        return Observation(
            rule=code, arch=self.arch.label, config=config, predicted=predicted,
            fired=any(d.code == code for d in verdict.diagnostics), deferred=code in verdict.deferred,
            compiled=compiled, fired_compiled=any(d.code == code for d in after.diagnostics),
            broken=self.limit.holds(self.environment(config, compiled), self.arch), may_break=may_break,
            shown=tuple(dict.fromkeys(shown)))

    def failure(self, obs: Observation) -> str | None:
        """Why the property fails for this observation, or None when it holds (or is undecided)."""
        name = self.rule.code
        if obs.deferred:
            notes = "; ".join(self.session.pruner(self.space).notes)
            return (f"{name} was deferred at the config stage: the prediction lacks a fact it reads, "
                    f"so it is not a predicting rule for this kernel" + (f" ({notes})" if notes else ""))
        if obs.broken is None:
            return None
        if obs.fired and not obs.broken:
            return f"{name} fired at the config stage, but the compiled facts do not break the limit {self.limit.source}"
        if obs.broken and not obs.fired:
            if self.exact:
                return f"the compiled facts break the limit {self.limit.source}, but {name} did not fire at the config stage"
            if self.may_break is not None and obs.may_break is not True:
                return (f"the compiled facts break the limit {self.limit.source}, but the prediction said they "
                        f"could not ({self.may_break.source} is {obs.may_break})")
            if not obs.fired_compiled:
                return f"the compiled facts break the limit {self.limit.source}, but {name} does not fire on them"
        return None

    def verify(self, config: KernelConfig | Mapping[str, Any], *, decided: bool = True) -> Observation:
        """Check the property for one config (no hypothesis); raise :class:`PropertyFailure` if it fails.

        With ``decided`` (the default), a config whose compile leaves the limit undecided
        (a compile error or time-out the limit does not speak of) is a ValueError, not a pass.
        """
        obs = self.observe(config)
        reason = self.failure(obs)
        if reason is not None:
            raise PropertyFailure(reason, obs)
        if decided and obs.broken is None:
            raise ValueError(f"the limit {self.limit.source} is undecided for this config "
                             f"(compile {obs.compiled.get('compile_status')}: {obs.compiled.get('compile_message')})")
        return obs

    # -- many configs, drawn by hypothesis ------------------------------------------------

    def strategy(self) -> Any:
        """The hypothesis strategy of the configs this property draws."""
        from hypothesis.strategies import SearchStrategy

        from .strategies import configs

        if isinstance(self.configs, SearchStrategy):
            return self.configs
        if self.configs is None:
            return configs(self.space)
        if isinstance(self.configs, Space):
            return configs(self.configs)
        return configs(self.configs, fixed=self.space.fixed, constraints=self.space.constraints,
                       problem=self.space.problem)

    def settings(self) -> Any:
        """Hypothesis settings: few examples, no deadline, no shrinking unless asked (each step compiles)."""
        from hypothesis import HealthCheck, Phase, settings

        phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if self.shrink else [])
        extra: dict[str, Any] = {"database": None} if self.derandomize or self.seed is not None else {}
        if self.derandomize is not None:  # else the loaded hypothesis profile decides
            extra["derandomize"] = self.derandomize
        return settings(max_examples=self.max_examples, deadline=None, phases=phases, report_multiple_bugs=False,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], **extra)

    def _example(self, config: KernelConfig) -> None:
        from hypothesis import assume, event

        if self.skipped(config):
            event("skipped by where")
            assume(False)
        obs = self.observe(config)
        self.observations.append(obs)
        event(f"{self.rule.code} {'fired' if obs.fired else 'silent'}, limit "
              f"{'undecided' if obs.broken is None else 'broken' if obs.broken else 'kept'}")
        reason = self.failure(obs)
        if reason is not None:
            raise PropertyFailure(reason, obs)
        assume(obs.broken is not None)  # a compile that failed or timed out decides nothing

    def check(self) -> None:
        """Draw configs and check the property on each; raise :class:`PropertyFailure` on a counterexample."""
        from hypothesis import example, given
        from hypothesis import seed as use_seed

        def rule_predicts(config: KernelConfig) -> None:
            self._example(config)

        self.session.compile_many(self.space, self.arch, [(c, self.predicted(c)) for c in self.examples
                                                          if not self.skipped(c)])  # in parallel, up front
        for config in reversed(self.examples):  # decorators apply inside out: keep the given order
            rule_predicts = example(config=config)(rule_predicts)
        rule_predicts = self.settings()(given(config=self.strategy())(rule_predicts))
        if self.seed is not None:
            rule_predicts = use_seed(self.seed)(rule_predicts)
        rule_predicts()


def assert_rule_predicts(rule: Rule | str, space: Space | str | os.PathLike[str], arch: Arch | str, *,
                         limit: Limit, **options: Any) -> None:
    """Check that ``rule`` predicts ``limit`` on ``space`` and ``arch`` (see :class:`RuleProperty`)."""
    RuleProperty(rule, space, arch, limit=limit, **options).check()
