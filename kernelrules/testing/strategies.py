"""Hypothesis strategies for rules and kernels: configs, architectures, sizes, launch signatures.

Public through :mod:`kernelrules.testing` (see ``docs/testing.md``); kept apart so that the
rule property (:mod:`kernelrules.testing.rule_property`) can draw configs without importing the
testing facade that re-exports it. Importing this module imports hypothesis, which is a
test dependency only.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

from hypothesis import strategies as st

from .. import expr as exprlang
from ..arch import Arch, list_archs, load_arch
from ..config import KernelConfig
from ..space import Constraint, Space, load_space

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
    from ..discover.kernels import discover
    from ..specify.signatures import infer_signature

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
