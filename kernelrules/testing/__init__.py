"""Hypothesis-based testing of rules and kernels: strategies, the rule property, our own limits.

For users' own test suites (see ``docs/testing.md``):

- strategies (:mod:`kernelrules.testing.strategies`): :func:`configs` (points of a search space),
  :func:`archs` (architecture profiles), :func:`signatures` and :func:`sizes` (launch
  signatures of a kernel);
- :class:`RuleProperty` / :func:`assert_rule_predicts`: a predicting rule fires at the
  config stage iff the compiled facts break the limit it guards (from
  :mod:`kernelrules.testing.rule_property`), on a :class:`PropertySession` that shares compiles;
- :data:`BUILTIN_LIMITS`: the limit each built-in predicting rule guards, exact or a
  bound, and :func:`predicting_rules` to find the rules that judge from predictions;
- the pytest plugin :mod:`kernelrules.testing.pytest_plugin` (fixtures and a marker).

Importing this module imports hypothesis, which is a test dependency only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..arch import Arch
from .property_session import PropertySession, default_session
from .rule_property import Condition, Observation, PropertyFailure, RuleProperty, assert_rule_predicts
from ..judge.ruleset import RuleSet
from .strategies import DEFAULT_DTYPES, archs, configs, signatures, sizes


# -- which rules predict, and what they guard ----------------------------------------------


@dataclass(frozen=True)
class RuleLimit:
    """What a predicting rule claims: the limit over compiled facts, and whether it is exact.

    ``exact=False`` means the prediction is a documented bound: a config-stage
    rejection is certain, and a break the rule misses is admitted by ``may_break``
    (over the predicted facts) and caught after compiling.
    """

    code: str
    limit: str
    exact: bool = True
    may_break: str | None = None
    note: str = ""

    def rule_property(self, space: Any, arch: Any, **options: Any) -> RuleProperty:
        """The :class:`RuleProperty` of this rule on ``space`` and ``arch``."""
        return RuleProperty(self.code, space, arch, limit=self.limit, exact=self.exact, may_break=self.may_break,
                            **options)


#: The built-in predicting rules and the limit each guards (docs/testing.md explains each).
BUILTIN_LIMITS: dict[str, RuleLimit] = {r.code: r for r in (
    RuleLimit("DOT001", "facts.compile_status == 'error' and 'K >= ' in facts.compile_message",
              note="Triton's minimum dot K: the compile fails with 'Input shapes should have ... K >= 16'"),
    RuleLimit("MEM001", "facts.shared_bytes > arch.shared_memory_per_block_optin", exact=False,
              may_break="facts.shared_bytes_max > arch.shared_memory_per_block_optin",
              note="predicted shared_bytes is a lower bound, shared_bytes_max an upper bound"),
    RuleLimit("MMA001", "facts.dot_count > 0 and facts.mma_path == 'none'",
              note="the compiled dot runs on scalar FMA"),
    RuleLimit("MMA002", "facts.dot_count > 0 and facts.mma_path == 'mma_sync'",
              note="sm_90 only: the compiled dot takes mma.sync, not wgmma"),
    RuleLimit("REG001", "facts.accumulator_registers_per_thread > arch.max_registers_per_thread"
                        " and facts.register_demand_per_thread < 448",
              note="the compiled dot's fp32 accumulator alone exceeds a thread's registers (REG002 above 448)"),
    RuleLimit("REG002", "facts.register_demand_per_thread >= 448",
              note="accumulator plus operand registers of the compiled dot"),
    # Blackwell (sm_100)
    RuleLimit("MEM004", "facts.tensor_memory_columns > arch.tensor_memory_columns",
              note="the compiled kernel's tensor-memory columns (metadata.tmem_size) over 512; the prediction "
                   "sums the accumulators' columns, exact on the tested kernels, an over-count where 64-row "
                   "accumulators share lanes"),
    RuleLimit("MMA003", "facts.dot_count > 0 and facts.mma_path == 'mma_sync'",
              note="sm_100 only: the compiled dot takes mma.sync, not tcgen05"),
    RuleLimit("DTY004", "facts.dot_count > 0 and facts.mma_path == 'mma_sync' and facts.fp8_upcast"
                        " and len(intersect(kernel.fp8_dtypes, arch.fp8_mma_dtypes)) > 0",
              note="sm_100 only: the compiled dot of an fp8e4nv/fp8e5 kernel takes mma.sync with its operands "
                   "converted to fp16"),
    # AMD (gfx942)
    RuleLimit("AMD001", "facts.shared_bytes > arch.shared_memory_per_block_optin", exact=False,
              may_break="facts.shared_bytes_max > arch.shared_memory_per_block_optin",
              note="LDS over 64 KiB; predicted shared_bytes is a lower bound (unpipelined tiles are a bracket), "
                   "shared_bytes_max an upper bound"),
    RuleLimit("AMD008", "facts.dot_count > 0 and facts.mma_path == 'none'",
              note="the compiled dot has no v_mfma (vector FMA)"),
)}


def predicting_rules(rules: RuleSet | Iterable[Any], predicted: Mapping[str, Any], arch: Arch | None = None
                     ) -> list[Any]:
    """The rules that judge at the config stage from these predicted facts (not deferred), for ``arch``.

    A rule is predicting when it reads facts and every fact it reads is predicted:
    its config-stage verdict then rests on the resource model.
    """
    known = frozenset(predicted)
    return [r for r in rules if r.fact_names and r.fact_names <= known and (arch is None or r.applies(arch))]


__all__ = [
    "BUILTIN_LIMITS", "Condition", "DEFAULT_DTYPES", "Observation", "PropertyFailure", "PropertySession",
    "RuleLimit", "RuleProperty", "archs", "assert_rule_predicts", "configs", "default_session",
    "predicting_rules", "signatures", "sizes",
]
