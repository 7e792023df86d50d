"""Hypothesis-based testing of rules and kernels: strategies, the rule property, our own limits.

For users' own test suites (see ``docs/testing.md``):

- strategies: :func:`configs` (points of a search space), :func:`archs` (architecture
  profiles), :func:`signatures` and :func:`sizes` (launch signatures of a kernel);
- :class:`RuleProperty` / :func:`assert_rule_predicts`: a predicting rule fires at the
  config stage iff the compiled facts break the limit it guards (from
  :mod:`kernelrules.rule_property`), on a :class:`PropertySession` that shares compiles;
- :data:`BUILTIN_LIMITS`: the limit each built-in predicting rule guards, exact or a
  bound, and :func:`predicting_rules` to find the rules that judge from predictions;
- the pytest plugin :mod:`kernelrules.pytest_plugin` (fixtures and a marker).

Importing this module imports hypothesis, which is a test dependency only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from hypothesis import strategies as st

from . import expr as exprlang
from .arch import Arch, list_archs, load_arch
from .config import KernelConfig
from .property_session import PropertySession, default_session
from .rule_property import Condition, Observation, PropertyFailure, RuleProperty, assert_rule_predicts
from .ruleset import RuleSet
from .space import Constraint, Space, load_space

#: Pointer element dtypes :func:`signatures` draws by default.
DEFAULT_DTYPES = ("fp16", "bf16")

#: Float pointer dtypes that :func:`signatures` may redraw (integer pointers keep theirs).
FLOAT_POINTER_DTYPES = ("fp16", "bf16", "fp32", "fp64", "fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")


# -- configs --------------------------------------------------------------------------


def _space_parts(space: Space | str | os.PathLike[str] | Mapping[str, Sequence[Any]]
                 ) -> tuple[dict[str, list[Any]], dict[str, Any], list[Any], dict[str, Any]]:
    """(values per key, fixed values, constraints, problem) of a space-like argument."""
    if isinstance(space, (str, os.PathLike)):
        space = load_space(space)
    if isinstance(space, Space):
        return dict(space.space), dict(space.fixed), list(space.constraints), dict(space.problem)
    return {k: list(v) for k, v in space.items()}, {}, [], {}


def _constraint(item: Any) -> Constraint:
    if isinstance(item, Constraint):
        return item
    node = exprlang.parse(item)
    problems = exprlang.check(node, {"config": None, "problem": None})
    if problems:
        raise ValueError(f"constraint {item!r}: {problems[0].message}")
    return Constraint(item, exprlang.compile_expr(node))


def configs(space: Space | str | os.PathLike[str] | Mapping[str, Sequence[Any]], *,
            fixed: Mapping[str, Any] | None = None, constraints: Iterable[Any] = (),
            problem: Mapping[str, Any] | None = None) -> st.SearchStrategy[KernelConfig]:
    """Configs drawn from a search space: each key from its list, merged with the fixed values.

    ``space`` is a :class:`~kernelrules.space.Space`, a space-file path, or a plain
    mapping of parameter -> list of values. A space's own ``fixed`` values and
    ``constraints`` apply; ``fixed``, ``constraints`` (expressions over ``config.*``
    and ``problem.*``) and ``problem`` add to them. Each key shrinks toward the first
    value of its list.
    """
    values, base_fixed, base_constraints, base_problem = _space_parts(space)
    pinned = {**base_fixed, **dict(fixed or {})}
    overlap = set(pinned) & set(values)
    if overlap:
        raise ValueError(f"{', '.join(sorted(overlap))} is both fixed and drawn")
    empty = [k for k, v in values.items() if not v]
    if empty:
        raise ValueError(f"no values to draw for {', '.join(empty)}")
    checks = [_constraint(c) for c in [*base_constraints, *constraints]]
    env_problem = {**base_problem, **dict(problem or {})}

    def build(point: Mapping[str, Any]) -> KernelConfig:
        return KernelConfig.from_dict({**pinned, **point})

    def allowed(config: KernelConfig) -> bool:
        env = {"config": config.namespace("nvidia"), "problem": env_problem}
        return all(c.evaluate(env) for c in checks)

    drawn = st.fixed_dictionaries({k: st.sampled_from(v) for k, v in values.items()}).map(build)
    return drawn.filter(allowed) if checks else drawn


# -- architectures ----------------------------------------------------------------------


def archs(names: str | Iterable[str] | None = None) -> st.SearchStrategy[Arch]:
    """Architecture profiles: the named ones (``"ada,hopper"``, ``["sm_80", "l4"]``), else every built-in one."""
    if names is None:
        return st.sampled_from(list_archs())
    items = names.split(",") if isinstance(names, str) else list(names)
    loaded = [load_arch(n.strip()) for n in items if n.strip()]
    if not loaded:
        raise ValueError("no architecture names given")
    return st.sampled_from(loaded)


# -- launch signatures ------------------------------------------------------------------


def sizes(max_value: int = 1 << 16) -> st.SearchStrategy[int]:
    """Integer arguments as launches see them: 1 (a constexpr), multiples of 16 (``tt.divisibility=16``) and others."""
    return st.one_of(
        st.just(1),
        st.integers(1, max(1, max_value // 16)).map(lambda v: 16 * v),
        st.integers(2, max_value).filter(lambda v: v % 16 != 0),
    )


_sizes = sizes  # signatures() has a parameter of the same name


def _signature_template(kernel: Space | str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """A signature mapping to vary: a space's, a given one, or one inferred for ``file.py:kernel``."""
    if isinstance(kernel, Space):
        return dict(kernel.signature)
    if isinstance(kernel, Mapping):
        return dict(kernel)
    text = os.fspath(kernel)
    if text.endswith((".yaml", ".yml")):
        return dict(load_space(text).signature)
    from .discover import discover
    from .signatures import infer_signature

    path, _, name = text.rpartition(":")
    found = discover([path]).by_name(name) if path else []
    if not found:
        raise ValueError(f"no @triton.jit kernel {name!r} in {path!r} (write it as path.py:kernel)")
    inferred = infer_signature(found[0])
    if not inferred.complete:
        raise ValueError(f"cannot infer the type of {', '.join(inferred.missing)}; pass a signature mapping")
    return dict(inferred.spec)


def signatures(kernel: Space | str | os.PathLike[str] | Mapping[str, Any], *,
               dtypes: Sequence[str] = DEFAULT_DTYPES, sizes: st.SearchStrategy[int] | None = None,
               keep: Iterable[str] = (), same_dtype: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """Launch signatures for a kernel's parameters, varied from a template.

    The template is a space's signature, a signature mapping, or the one kernelrules
    infers for ``"path.py:kernel"``. Float pointers (``"*fp16"``) get a dtype from
    ``dtypes`` (one for all when ``same_dtype``), integer values a size from ``sizes``
    (default :func:`sizes`: 1, multiples of 16 and others); integer pointers, scalar
    types (``"fp32"``) and the names in ``keep`` stay as in the template.
    """
    template = _signature_template(kernel)
    size_strategy = sizes if sizes is not None else _sizes()
    kept = set(keep)
    unknown = kept - set(template)
    if unknown:
        raise ValueError(f"keep names {', '.join(sorted(unknown))}, which the signature does not have")
    pointers = [n for n, v in template.items() if n not in kept and isinstance(v, str)
                and v.startswith("*") and v[1:] in FLOAT_POINTER_DTYPES]
    ints = [n for n, v in template.items() if n not in kept and isinstance(v, int) and not isinstance(v, bool)]
    dtype = st.sampled_from(list(dtypes))

    @st.composite
    def signature(draw: Any) -> dict[str, Any]:
        out = dict(template)
        shared = draw(dtype) if same_dtype else None
        for name in pointers:
            out[name] = "*" + (shared if same_dtype else draw(dtype))
        for name in ints:
            out[name] = draw(size_strategy)
        return out

    return signature()


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
