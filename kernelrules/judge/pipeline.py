"""The judging core: judge every config of a kernel on one or more architectures.

Lint, check-config, ``kernelrules prune``, the tune gate, the tuner adapters, the perf
model's probes and the testing helpers all judge through :class:`ConfigJudge`. Per
architecture it walks a table of named stages in order (as Triton's backend fills
``stages["ttir"|...]`` in ``add_stages`` and ``compile()`` walks it), see
:meth:`ConfigJudge.add_stages`:

1. ``predict``: the resource model is learned from a few probe compiles of the kernel;
2. ``config``: every rule judges every config from the config, the architecture and the
   launch signature, plus the model's predictions; a rejected config gets the nearest
   config that passes, found with the rules' repairs over predicted facts;
3. with ``compile=True``, ``compile``: every config that survives is cross-compiled in the
   worker pool (time-limited, cached on disk);
4. ``compiled``: the survivors are judged again on their compiled facts;
5. ``repairs``: each suggested repair is compiled once and dropped if its facts reject it
   (a tuner that compiles its configs ahead of timing checks them then: :func:`passes_compiled`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, MutableMapping, Sequence

from ..compile.cache import UNCACHED_KINDS, ResultCache
from ..compile.compilejob import CompileJob, CompileResult
from ..compile.feed import JobFeed
from ..config import KernelConfig
from .engine import Engine, default_engine
from ..compile.target import KernelTarget
from ..compile.pool import CompilePool
from ..predict.register_model import distinct, fit as fit_registers, read_live_tensors, register_probes
from ..predict.resource_model import ModelError, ResourceModel, choose_probes, learn, probe_from_facts, read_probe, synthetic_probes
from ..space import Space

# The stages and their shared state live in stages.py; imported here under the names users know.
from .stages import (COMPILE_FIRST_CONFIGS, ArchJudging, PruneRecord, Stage, compile_stage, compiled_stage,  # noqa: F401
                     config_stage, passes_compiled, predict_stage, repairs_stage)

Progress = Callable[[str, int, int], None]

#: The time limit of a resource-model probe compile, in seconds (the judge's own limit when lower). Probes are
#: picked to be cheap; one that compiles longer (a synthetic probe that gives a block size constant across the
#: kernel's configs 256 to tell it apart: 16 s to past the 30 s limit for fla-core's wall attention) is given
#: up, and the kernel is judged as when no probe compiles (its configs compile, the model is not learned).
PROBE_TIMEOUT = 10.0
#: A dot call in a kernel file's text (``tl.dot(``, ``tl.dot_scaled(``, ``acc.dot(``).
DOT_CALL = re.compile(r"\bdot(?:_scaled)?\s*\(")


@dataclass
class PruneResult:
    """Every record, plus what the resource models learned and notes for the user."""

    records: list[PruneRecord]
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[PruneRecord]:
        return [r for r in self.records if r.verdict.verdict == "pass"]

    @property
    def rejected(self) -> list[PruneRecord]:
        return [r for r in self.records if r.verdict.verdict == "reject"]

    def to_json(self) -> dict[str, Any]:
        return {"results": [r.to_json() for r in self.records], "models": self.models, "notes": self.notes}


class ConfigJudge:
    """Holds the engine, the compile pool and the learned models for one judging run.

    ``pool``, a pool shared with other users (lint's, or a tuner's
    :class:`~kernelrules.adapters.autotune_context.AutotuneContext`), is used but never closed
    here; ``cache`` then applies to this judge's compiles only (the pool's own when
    None). ``probe_results``, a mapping from compile job to result shared by the
    judges of one tuner, answers probe compiles made before (deterministic results
    only: what a compile of the same job would give again). ``triton_cache_dir`` sends
    every compile of this judge into that Triton cache, uncached by kernelrules (a tuner
    whose compiled-stage compiles are the launch's own: the JIT then finds them).
    """

    def __init__(self, target: KernelTarget, *, engine: Engine | None = None, jobs: int | None = None,
                 timeout: float = 30.0, cache: ResultCache | None = None, progress: Progress | None = None,
                 pool: CompilePool | None = None, probe_results: MutableMapping[CompileJob, CompileResult] | None = None,
                 triton_cache_dir: str | None = None):
        self.target = target
        self.engine = engine or default_engine()
        self.timeout = timeout
        self.progress = progress
        self._own_pool = pool is None  # a pool shared across kernels (lint) is closed by its owner
        self.pool = pool if pool is not None else CompilePool(max_workers=jobs, timeout=timeout, cache=cache)
        self._run_options = {"cache": cache} if pool is not None and cache is not None else {}
        if triton_cache_dir is not None:
            self._run_options = {"cache": None, "triton_cache_dir": triton_cache_dir}
        self.probe_results = probe_results
        #: (arch name, config key) -> the compile result of a probe compiled ahead of its round
        #: (:meth:`register_probes_ahead`), taken by that round.
        self._ahead_results: dict[tuple[str, str], CompileResult] = {}
        self.notes: list[str] = []
        #: Architecture -> why no resource model could be learned (the probe compiles failed, ...).
        self.model_errors: dict[str, str] = {}

    def close(self) -> None:
        if self._own_pool:
            self.pool.close()

    def release_pool(self) -> CompilePool:
        """The judge's pool, from now on the caller's to close (``tune_many`` keeps it for the next problem)."""
        self._own_pool = False
        return self.pool

    # -- compiling ----------------------------------------------------------------

    def compile_many(self, configs: Sequence[KernelConfig], arch: Any, label: str,
                     timeout: float | None = None) -> list[CompileResult]:
        """Compile configs in the pool (each under ``timeout``, default the judge's); results in the order of ``configs``."""
        jobs = [self.compile_job(c, arch, timeout) for c in configs]
        index = {id(job): i for i, job in enumerate(jobs)}
        results: list[CompileResult | None] = [None] * len(jobs)

        def hook(done: int, total: int, _job: CompileJob, _result: CompileResult) -> None:
            if self.progress:
                self.progress(label, done, total)

        for job, result in self.pool.run(jobs, progress=hook, **self._run_options):
            results[index[id(job)]] = result
        return [r if r is not None else CompileResult.failure("internal", "no result") for r in results]

    def compile_job(self, config: KernelConfig, arch: Any, timeout: float | None = None) -> CompileJob:
        """The pool job that compiles ``config`` for ``arch`` (under ``timeout``, default the judge's)."""
        return self.target.job(config, arch, timeout or self.timeout)

    def compile_feed(self, feed: JobFeed) -> Iterator[tuple[CompileJob, CompileResult]]:
        """Compile the jobs put into ``feed`` as they come; ``(job, result)`` as each compile ends."""
        return self.pool.run(feed, **self._run_options)

    # -- the resource model -----------------------------------------------------------

    @cached_property
    def kernel_has_dots(self) -> bool:
        """Whether the kernel's file calls a dot (``tl.dot``, ``tl.dot_scaled``, a ``.dot(`` method), read as text:
        a file that cannot be read, or names a dot call anywhere, counts as one with dots (the probes then stay as the
        space orders them: :func:`~kernelrules.predict.resource_model.choose_probes`)."""
        try:
            text = Path(self.target.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return True
        return DOT_CALL.search(text) is not None

    def probes_for(self, candidates: Sequence[KernelConfig], count: int = 2) -> list[KernelConfig]:
        """The resource model's first probe configs among ``candidates`` (the judging's, and the ones a tune run
        sends before its study opens)."""
        return choose_probes(candidates, count=count, dots=self.kernel_has_dots)

    def learn_model(self, candidates: Sequence[KernelConfig], arch: Any) -> ResourceModel | None:
        """Probe-compile a few cheap configs and fit the resource model (None when it cannot)."""
        error: Exception | None = None
        for probes in (self.probes_for(candidates), synthetic_probes(candidates)):
            if not probes:
                continue
            read = self._compile_probes(probes, arch, ahead=self.register_probes_ahead(candidates, probes, arch))
            try:
                model = learn(read, arch)
            except ModelError as exc:
                error = exc
                continue
            model = self._complete_paths(model, read, candidates, arch)
            model.registers = self._fit_registers(model, candidates, arch)
            return model
        if error is not None:
            self.model_errors[arch.name] = str(error)
            self.notes.append(f"{arch.name}: no resource model ({error}); shared memory is judged after compiling")
        return None

    def register_probes_ahead(self, candidates: Sequence[KernelConfig], probes: Sequence[KernelConfig],
                              arch: Any) -> list[KernelConfig]:
        """The register probes :meth:`_fit_registers` will ask for after ``probes``, when the kernel's file calls no
        dot (known before any compile): they depend on which configs were probed, not on the probes' results, so
        they compile beside the first probes instead of in a second round after them (on a machine whose workers
        the first probes fill, that is the same compiles in the same time; with more workers, one round less)."""
        if self.kernel_has_dots or getattr(arch, "vendor", "nvidia") != "nvidia":
            return []
        earlier = [c for c, _ in getattr(self, "_probed", [])] if getattr(self, "_probed_arch", None) == arch.name \
            else []
        return register_probes(candidates, earlier + list(probes))

    def _fit_registers(self, model: ResourceModel, candidates: Sequence[KernelConfig], arch: Any) -> Any:
        """For a kernel without dots on NVIDIA, registers and spills from its live tensors
        (:mod:`kernelrules.predict.register_model`): two more probes with larger tiles, then the fit."""
        if model.dots or getattr(arch, "vendor", "nvidia") != "nvidia":
            return None
        done = list(getattr(self, "_probed", []))
        extra = register_probes(candidates, [c for c, _ in done])
        self._compile_probes(extra, arch)
        done = [(c, r) for c, r in getattr(self, "_probed", []) if r.ok and r.asm.get("ttgir")
                and (r.facts or {}).get("registers") is not None]
        if not done:
            return None
        config, result = max(done, key=lambda cr: (distinct(cr[0]), done.index(cr)))
        try:
            tensors = read_live_tensors(str(result.asm["ttgir"]), config.constexprs)
            observed = [(c.constexprs, c.num_warps or 4, int(r.facts["registers"]), int(r.facts.get("spill_bytes") or 0))
                        for c, r in done]
            return fit_registers(tensors, observed, arch)
        except Exception as exc:  # noqa: BLE001 - no register model: the rules defer to the compile
            self.notes.append(f"{arch.name}: no register model ({exc})")
            return None

    def _compile_probes(self, probes: Sequence[KernelConfig], arch: Any, ahead: Sequence[KernelConfig] = ()) -> list:
        """Compile probe configs and read each one that compiled (from the worker's facts, else its TTGIR).
        ``ahead``: configs a later round will probe, compiled in the same batch and kept for it (not read now)."""
        read = []
        results = self._probe_results(list(probes) + list(ahead), arch)
        results, later = results[:len(probes)], results[len(probes):]
        self._ahead_results.update(((arch.name, c.key()), r) for c, r in zip(ahead, later))
        if not hasattr(self, "_probed") or getattr(self, "_probed_arch", None) != arch.name:
            self._probed, self._probed_arch = [], arch.name
        self._probed.extend(zip(probes, results))
        for config, result in zip(probes, results):
            if not result.ok:
                continue
            probe = probe_from_facts(config, result.facts or {})
            if probe is None and result.asm.get("ttgir"):
                probe = read_probe(config, result.asm["ttgir"])
            if probe is not None:
                read.append(probe)
        return read

    def _probe_results(self, probes: Sequence[KernelConfig], arch: Any) -> list[CompileResult]:
        """The probes' compile results, in order: compiled ahead with an earlier round, or from ``probe_results``
        when there, else compiled (and kept there)."""
        ready = {i: self._ahead_results.pop((arch.name, c.key())) for i, c in enumerate(probes)
                 if (arch.name, c.key()) in self._ahead_results}
        if ready:
            rest = [c for i, c in enumerate(probes) if i not in ready]
            found = iter(self._probe_results(rest, arch) if rest else [])
            return [ready[i] if i in ready else next(found) for i in range(len(probes))]
        label = f"probing {arch.name}"
        limit = min(self.timeout, PROBE_TIMEOUT)
        if self.probe_results is None:
            return self.compile_many(probes, arch, label, limit)
        jobs = [self.target.job(c, arch, limit) for c in probes]
        known = {i: self.probe_results[job] for i, job in enumerate(jobs) if job in self.probe_results}
        missing = [i for i in range(len(jobs)) if i not in known]
        compiled = dict(zip(missing, self.compile_many([probes[i] for i in missing], arch, label, limit)))
        for i, result in compiled.items():
            if result.error_kind not in UNCACHED_KINDS:  # a timeout or a crash may not happen again
                self.probe_results[jobs[i]] = result
        return [known[i] if i in known else compiled[i] for i in range(len(jobs))]

    def _complete_paths(self, model: ResourceModel, read: list, candidates: Sequence[KernelConfig],
                        arch: Any) -> ResourceModel:
        """On Hopper, also probe the MMA path the first probes did not take, if the space has it."""
        missing: dict[str, list[KernelConfig]] = {}
        for config in candidates:
            path = model.mma_path(config.constexprs, config.num_warps or 4)
            if path not in model.paths and path != "none":
                missing.setdefault(path, []).append(config)
        if not missing:
            return model
        extra = [probe for configs in missing.values() for probe in choose_probes(configs, count=1)]
        read = read + self._compile_probes(extra, arch)
        try:
            return learn(read, arch)
        except ModelError:
            return model

    def model_for(self, configs: Sequence[KernelConfig], arch: Any) -> ResourceModel | None:
        """The resource model learned from the configs no config-stage rule rejects (None if none passes)."""
        candidates = self.plain_survivors(configs, arch)
        return self.learn_model(candidates, arch) if candidates else None

    def plain_survivors(self, configs: Sequence[KernelConfig], arch: Any) -> list[KernelConfig]:
        """The configs no config-stage rule rejects without predictions: the probes' candidates."""
        plain = self.engine.judge_many(configs, arch, kernel=dict(self.target.kernel_info))
        return [v.config for v in plain if not v.rejected]

    # -- judging ------------------------------------------------------------------

    def judge_arch(self, configs: Sequence[KernelConfig], arch: Any, compile: bool,
                   problem: Mapping[str, Any], probe: bool = True,
                   model: ResourceModel | None = None,
                   verify_repairs: bool = True,
                   defer_probes: bool = False) -> tuple[list[PruneRecord], ResourceModel | None]:
        """All records of one architecture; ``probe=False`` skips the resource model (no dot to model).

        ``model``, a resource model learned earlier for this kernel and architecture,
        spares the probe compiles (a judge that lives across calls passes its own). The stages
        of :meth:`add_stages` run in their order, but for ``repairs`` with ``verify_repairs=False``.
        ``defer_probes`` (lint): with ``compile`` and at most :data:`COMPILE_FIRST_CONFIGS` configs,
        the configs are compiled first and the model is learned only if a rejection needs it.
        """
        judging = ArchJudging(list(configs), arch, problem, dict(self.target.kernel_info), probe, model,
                              compiling=compile, defer_probes=defer_probes)
        stages: dict[str, Stage] = {}
        self.add_stages(stages, compile)
        stages.pop("repairs" if not verify_repairs else "", None)
        for stage in stages.values():
            stage(self, judging)
        return judging.records, judging.model

    @staticmethod
    def add_stages(stages: dict[str, Stage], compile: bool) -> None:
        """Fill ``stages`` with the named stages of one architecture's judging, in the order they run."""
        stages["predict"] = predict_stage
        stages["config"] = config_stage
        if compile:
            stages["compile"] = compile_stage
            stages["compiled"] = compiled_stage
            stages["repairs"] = repairs_stage

    def vgpr_need(self, configs: Sequence[KernelConfig], results: Sequence[CompileResult], arch: Any) -> list:
        """On AMD, the VGPRs each compiled config needs without its ``waves_per_eu`` cap.

        A config without ``waves_per_eu`` needs what it uses; one with it is compiled
        once more without it (the reference the cap is judged against). None where
        unknown, and on NVIDIA.
        """
        if getattr(arch, "vendor", "nvidia") != "amd":
            return [None] * len(configs)
        needs = [(r.facts or {}).get("registers") if r.ok else None for r in results]
        capped = [i for i, c in enumerate(configs) if c.backend_options.get("waves_per_eu") and results[i].ok]
        if capped:
            plain = [configs[i].replace({}, remove=["waves_per_eu"]) for i in capped]
            for i, ref in zip(capped, self.compile_many(plain, arch, f"compiling {arch.name} without waves_per_eu")):
                needs[i] = (ref.facts or {}).get("registers") if ref.ok else None
        return needs


def check_target(target: KernelTarget, configs: Sequence[KernelConfig], archs: Sequence[Any]) -> None:
    """Fail early, with one clear error, when the kernel cannot be read or the signature does not fit it:
    :class:`~kernelrules.errors.KernelSourceError` or :class:`~kernelrules.errors.SignatureSpecError` (exit 2)."""
    import warnings

    from ..compile.compilejob import prepare

    if not configs or not archs:
        return
    with warnings.catch_warnings():  # Triton's specialiser may import torch, which can warn on import
        warnings.simplefilter("ignore")
        prepare(target.job(configs[0], archs[0], None))


def prune_space(space: Space, archs: Sequence[Any], *, compile: bool = False, jobs: int | None = None,
                timeout: float = 30.0, cache: ResultCache | None = None, engine: Engine | None = None,
                progress: Progress | None = None) -> PruneResult:
    """Judge every config of a loaded space on each architecture."""
    target = KernelTarget.from_space(space)
    configs = list(space.configs())
    check_target(target, configs, archs)
    judge = ConfigJudge(target, engine=engine, jobs=jobs, timeout=timeout, cache=cache, progress=progress)
    result = PruneResult(records=[])
    try:
        for arch in archs:
            records, model = judge.judge_arch(configs, arch, compile, space.problem)
            result.records.extend(records)
            if model is not None:
                result.models[arch.name] = model.describe()
    finally:
        judge.close()
    result.notes.extend(judge.notes)
    return result
