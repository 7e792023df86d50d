"""``kernelrules.prune(kernel, configs, arch, signature=... | args=...)``: a plain prune for any tuner.

    result = kernelrules.prune(matmul_kernel, configs, "ada", args=(a, b, c, M, N, K, *strides))
    result.kept                      # the configs that pass, the caller's own objects
    result.rejected[0].codes         # ["MEM001"]; .reasons holds the diagnostics with their messages
    result.repaired[config]          # the nearest passing config, in the caller's type
    result.candidates()              # what to tune: kept configs plus the repairs, deduplicated

Configs may be ``triton.Config`` objects, flat dicts (``{"BLOCK_M": 128, "num_warps": 4}``)
or KernelConfigs; everything handed back has the type of the config it stands for.
Bad input (configs naming parameters the kernel does not have, arguments that do not
fit it, an unknown architecture) raises a :class:`~kernelrules.errors.KernelrulesError`
with a one-line message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from ..config import KernelConfig
from .kernel_prune import KernelJudge, as_kernel_config, is_triton_kernel, jit_function, signature_from_args, split_signature

if TYPE_CHECKING:
    from ..judge.pipeline import Progress, PruneResult
    from ..space import Space


class ConfigMap(Mapping):
    """An ordered ``original -> repair`` mapping keyed by the caller's configs.

    Dict configs are not hashable, so a lookup matches by identity first, then by
    equality; ``repaired[config]`` works for every config type.
    """

    def __init__(self, pairs: Sequence[tuple[Any, Any]] = ()) -> None:
        self._pairs = list(pairs)

    def __getitem__(self, key: Any) -> Any:
        for original, repair in self._pairs:
            if original is key:
                return repair
        for original, repair in self._pairs:
            if original == key:
                return repair
        raise KeyError(key)

    def __iter__(self) -> Iterator[Any]:
        return (original for original, _ in self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return list(self._pairs)

    def values(self) -> list[Any]:  # type: ignore[override]
        return [repair for _, repair in self._pairs]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping) or len(other) != len(self):
            return False
        try:
            return all(other[k] == v for k, v in self._pairs)
        except (KeyError, TypeError):
            return False

    def __repr__(self) -> str:
        return f"ConfigMap({self._pairs!r})"


@dataclass
class Rejection:
    """A rejected config: the caller's object, why (error diagnostics), and its repair."""

    config: Any
    reasons: list = field(default_factory=list)
    repair: Any = None
    repair_steps: tuple[str, ...] = ()

    @property
    def codes(self) -> list[str]:
        """The codes of the rules that reject it, e.g. ``["MEM001"]``."""
        return [d.code for d in self.reasons]

    @property
    def message(self) -> str:
        """Every reason on one line: ``MEM001: needs 147456 bytes ...; REG002: ...``."""
        return "; ".join(f"{d.code}: {d.message}" for d in self.reasons)


@dataclass
class KernelPruneResult:
    """The judgement of a kernel's configs on one architecture, in the caller's types.

    ``records`` holds the full :class:`~kernelrules.judge.pipeline.PruneRecord` of each config
    (diagnostics, predicted or compiled facts), in the order the configs were given.
    """

    arch: str
    configs: list
    records: list
    kept: list
    rejected: list[Rejection]
    repaired: ConfigMap
    notes: list[str] = field(default_factory=list)

    def candidates(self, repair: bool = True) -> list:
        """What a tuner should try: the kept configs and, in place of each rejected one, its
        repair (when ``repair`` and no kept config or earlier repair is the same), in order."""
        out = []
        seen = {as_kernel_config(c).key() for c in self.kept}  # as the caller sees them: heuristics' values left out
        for original, record in zip(self.configs, self.records):
            if not record.verdict.rejected:
                out.append(original)
            elif repair and original in self.repaired:
                fixed = self.repaired[original]
                if as_kernel_config(fixed).key() not in seen:
                    seen.add(as_kernel_config(fixed).key())
                    out.append(fixed)
        return out

    def to_json(self) -> dict[str, Any]:
        """The records in the format of ``kernelrules prune --format json``, and the notes."""
        return {"arch": self.arch, "results": [r.to_json() for r in self.records], "notes": list(self.notes)}

    def __repr__(self) -> str:
        return (f"KernelPruneResult(arch={self.arch!r}, kept={len(self.kept)}, rejected={len(self.rejected)}, "
                f"repaired={len(self.repaired)})")


def like(original: Any, config: KernelConfig, added: frozenset[str] = frozenset()) -> Any:
    """``config`` in the type of ``original``, without the values the judge added to it."""
    new = config.to_dict()
    values = {k: new[k] for k in as_kernel_config(original).to_dict() if k in new}  # the caller's key order
    values.update({k: v for k, v in new.items() if k not in values and k not in added})
    if isinstance(original, KernelConfig):
        return KernelConfig.from_dict(values)
    if isinstance(original, Mapping):
        return values
    converted = KernelConfig.from_dict(values).to_triton()
    converted.pre_hook = getattr(original, "pre_hook", None)
    return converted


def build_result(arch: str, originals: Sequence[Any], records: Sequence[Any], added: frozenset[str],
                 notes: Sequence[str] = ()) -> KernelPruneResult:
    """Partition the caller's configs by their records into kept, rejected and repaired."""
    kept, rejected, repaired = [], [], []
    for original, record in zip(originals, records):
        verdict = record.verdict
        if not verdict.rejected:
            kept.append(original)
            continue
        repair = None if verdict.repair is None else like(original, verdict.repair, added)
        reasons = [d for d in verdict.diagnostics if d.severity == "error"]
        rejected.append(Rejection(original, reasons, repair, tuple(verdict.repair_steps)))
        if repair is not None:
            repaired.append((original, repair))
    return KernelPruneResult(arch, list(originals), list(records), kept, rejected, ConfigMap(repaired), list(notes))


def launch_inputs(kernel: Any, signature: Mapping[str, Any] | None, args: Mapping[str, Any] | Sequence[Any] | None
                  ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(runtime signature, constexpr values, what heuristics see)`` from ``signature=`` or ``args=``."""
    if (signature is None) == (args is None):
        raise TypeError("give the launch as signature= or as args=, exactly one of them")
    fn = jit_function(kernel)
    if signature is not None:
        runtime, constexprs = split_signature(fn, signature)
        return runtime, constexprs, dict(signature)
    runtime, constexprs = signature_from_args(fn, args)
    return runtime, constexprs, dict(args) if isinstance(args, Mapping) else dict(zip(fn.arg_names, args))


def prune_kernel(kernel: Any, configs: Sequence[Any], arch: Any = None, *, signature: Mapping[str, Any] | None = None,
                 args: Mapping[str, Any] | Sequence[Any] | None = None, fixed: Mapping[str, Any] | None = None,
                 problem: Mapping[str, Any] | None = None, compile: bool = False, jobs: int | None = None,
                 timeout: float = 30.0, cache_dir: str | Path | None = None) -> KernelPruneResult:
    """Judge ``configs`` of a live Triton kernel on ``arch`` (a name, an Arch, or None for
    ``$KERNELRULES_ARCH`` / the current GPU).

    Give the launch either as ``signature`` (``{"a_ptr": "*fp16", "M": 4096, ...}``; constexpr
    values may be included) or as example ``args`` (a mapping or a positional sequence of
    tensors, CPU ones too, and numbers). ``fixed`` sets constexprs the problem fixes (never
    changed by a repair). With ``compile=True`` every surviving config is cross-compiled.
    """
    from ..compile.cache import ResultCache

    runtime, constexprs, heuristic_args = launch_inputs(kernel, signature, args)
    originals = list(configs)
    cache = ResultCache(cache_dir) if cache_dir is not None else None
    with KernelJudge(kernel, arch, runtime, {**constexprs, **(fixed or {})}, heuristic_args=heuristic_args,
                     compile=compile, jobs=jobs, timeout=timeout, cache=cache) as judge:
        judged = [judge.prepare(c) for c in originals]
        if not judged:
            return build_result(judge.arch.name, [], [], judge.added_names)
        judge.check(judged)
        records = judge.judge(judged, problem)
        return build_result(judge.arch.name, originals, records, judge.added_names, judge.notes)


def prune(space: Any, *args: Any, **kwargs: Any) -> Any:
    """Python API of ``kernelrules prune``, and the plain prune for tuners (``kernelrules.prune``).

    ``prune(space, arch, *, compile=False, jobs=None, timeout=30.0, cache_dir=None, progress=None)``
    judges a space file (or a loaded :class:`~kernelrules.space.Space`) on one or more
    architectures (``"ada,hopper"``) and returns a :class:`~kernelrules.judge.pipeline.PruneResult`.

    ``prune(kernel, configs, arch=None, *, signature=None, args=None, fixed=None, compile=False, ...)``
    judges the configs of a live Triton kernel (a ``JITFunction`` or the Autotuner/Heuristics
    around one) and returns a :class:`KernelPruneResult` in the caller's config types; see
    :func:`prune_kernel`.
    """
    from ..space import Space

    if isinstance(space, (str, Path, Space)):
        return prune_space_file(space, *args, **kwargs)
    if not is_triton_kernel(space):
        raise TypeError(f"prune() takes a space file, a Space or a Triton kernel, not {type(space).__name__}")
    return prune_kernel(space, *args, **kwargs)


def prune_space_file(space: str | Path | Space, arch: str | Iterable[str], *, compile: bool = False,
                     jobs: int | None = None, timeout: float = 30.0, cache_dir: str | Path | None = None,
                     progress: Progress | None = None) -> PruneResult:
    """Judge a space file (or Space) on architecture names (``"ada,hopper"`` or a list)."""
    from ..arch import load_arch
    from ..compile.cache import ResultCache
    from ..judge.pipeline import prune_space
    from ..space import Space, load_space

    loaded = space if isinstance(space, Space) else load_space(space)
    names = [arch] if isinstance(arch, str) else list(arch)
    archs = [load_arch(n) for name in names for n in name.split(",") if n.strip()]
    cache = ResultCache(cache_dir) if cache_dir is not None else ResultCache()
    return prune_space(loaded, archs, compile=compile, jobs=jobs, timeout=timeout, cache=cache, progress=progress)
