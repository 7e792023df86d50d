"""The rules gate: every candidate is judged before it may cost a benchmark.

1. **Config stage**, for the whole space at start (tens of thousands of configs a
   second after the resource model's probe compiles): the rules plus predicted facts
   (:class:`kernelrules.judge.pipeline.ConfigJudge`). A rejected candidate is recorded with its rule
   codes and never launched.
2. **Compiled stage**, per candidate: the config is cross-compiled for the target
   architecture in the shared :class:`kernelrules.compile.pool.CompilePool` (time-limited,
   results in the shared :class:`kernelrules.compile.cache.ResultCache`) and judged again on its
   compiled facts. With a shared Triton cache directory, the benchmark worker's own
   JIT compile of the same config is then a cache hit.

The driver runs the compiled stage as a stream in a background thread
(:class:`kernelrules.tune.compile_stream.CompileStream`): each candidate's compile starts when
the loop asks for it and a compile worker is free, and its verdict comes back when that
compile ends, so compiles of upcoming candidates overlap the benchmarks and one slow
compile holds up no other candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..compile.cache import ResultCache
from ..config import KernelConfig
from ..judge.facts import compiled_facts
from ..judge.pipeline import PROBE_TIMEOUT, ConfigJudge, check_target
from ..compile.target import KernelTarget
from ..space import Space
from .problem import scalar_problem
from .startup import room_for_register_probes

if TYPE_CHECKING:
    from .compile_stream import CompileStream


@dataclass
class Judgement:
    """The rules' verdict on one candidate."""

    passed: bool
    stage: str
    codes: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    repair: dict[str, Any] | None = None
    compile_status: str | None = None


def _judgement(verdict: Any, facts: Mapping[str, Any], stage: str) -> Judgement:
    errors = [d for d in verdict.diagnostics if d.severity == "error"]
    warnings = [f"{d.code} {d.name}" for d in verdict.diagnostics if d.severity == "warning"]
    status = facts.get("compile_status")
    return Judgement(passed=not errors, stage=stage, codes=[d.code for d in errors],
                     messages=[f"{d.code} {d.message}" for d in errors], warnings=warnings,
                     facts={k: v for k, v in facts.items() if isinstance(v, (int, float, str, bool)) or v is None},
                     repair=None if verdict.repair is None else verdict.repair.to_dict(),
                     compile_status=status if isinstance(status, str) else None)


class Gate:
    """Judges candidates for one architecture: config stage up front, compiled stage on demand."""

    def __init__(self, space: Space, arch: Any, *, stage: str = "compiled", jobs: int | None = None,
                 timeout: float = 60.0, cache: ResultCache | None = None, triton_cache_dir: str | None = None,
                 edge_signatures: Sequence[Mapping[str, Any]] = (), pool: Any = None) -> None:
        self.space, self.arch, self.stage = space, arch, stage
        self.problem = scalar_problem(space.problem)
        self.target = KernelTarget.from_space(space)
        cache = cache if cache is not None else ResultCache()
        # ``pool``: a compile pool kept from an earlier problem (tune_many): its workers are up, and it stays open
        self.pruner = ConfigJudge(self.target, jobs=jobs, timeout=timeout, cache=cache, pool=pool)
        if pool is not None:  # its compiles ahead and judge_now's are this problem's, not the first problem's
            self.pruner.pool.cache = cache
        if triton_cache_dir:
            self.pruner.pool.triton_cache_dir = triton_cache_dir
        self.timeout = timeout
        #: The kernel at the problem's edge shapes (kernelrules.tune.edge_shapes): compiled beside each candidate,
        #: only to fill the Triton cache the benchmark worker's checks launch from (none without that cache).
        self.shared_triton_cache = bool(triton_cache_dir)
        self.edge_targets: list[KernelTarget] = []
        self.add_edge_signatures(edge_signatures)
        self.config_stage: dict[tuple, Judgement] = {}
        self.model: Any = None  # the resource model learned by prejudge (the perf model uses it)
        self.probe_jobs: list[Any] = []  # the probe compiles start_probes sent

    def add_edge_signatures(self, signatures: Sequence[Mapping[str, Any]]) -> bool:
        """Compile every later candidate at these edge-shape signatures too (when the gate has none yet and
        shares the worker's Triton cache); whether they were taken."""
        if self.edge_targets or not self.shared_triton_cache or not signatures:
            return False
        self.edge_targets = [replace(self.target, signature=dict(s)) for s in signatures]
        return True

    def prejudge(self, configs: Sequence[KernelConfig]) -> dict[tuple, Judgement]:
        """Judge the whole space at the config stage (learns the resource model first)."""
        check_target(self.target, list(configs), [self.arch])
        records, self.model = self.pruner.judge_arch(list(configs), self.arch, False, self.problem)
        self.config_stage = {r.verdict.config.key(): _judgement(r.verdict, r.facts, "config") for r in records}
        return self.config_stage

    def at_config_stage(self, config: KernelConfig) -> Judgement:
        found = self.config_stage.get(config.key())
        if found is None:  # not prejudged (a config from outside the space): judge it now
            verdict = self.pruner.engine.check(config, self.arch, kernel=dict(self.target.kernel_info),
                                               problem=self.problem)
            found = _judgement(verdict, {}, "config")
        return found

    def stream(self) -> "CompileStream":
        """The compiled stage as a stream: configs go in one at a time, each verdict comes back as its
        compile ends (one stream at a time: it runs the pool until closed)."""
        from .compile_stream import CompileStream

        return CompileStream(self.judge_compiled, self.job, self.pruner.compile_feed, side_jobs=self.edge_jobs)

    def judge_now(self, config: KernelConfig) -> Judgement:
        """The compiled-stage verdict on ``config`` in this thread, before :meth:`stream` runs the pool: its compile
        and its edge-shape compiles (taken from the compiles ahead, or waited for), judged as the stream would."""
        main = self.job(config)
        result = None
        for job, answer in self.pruner.pool.run([main, *self.edge_jobs(config)]):
            if job is main:
                result = answer
        return self.judge_compiled(config, result)

    def judge_if_compiled(self, config: KernelConfig) -> Judgement | None:
        """:meth:`judge_now`'s verdict when ``config``'s compiles (its edge shapes' too) are over already, else None:
        nothing waits (:meth:`CompilePool.answered_now`)."""
        main = self.job(config)
        results = self.pruner.pool.answered_now([main, *self.edge_jobs(config)])
        if any(result is None for result in results):
            return None
        return self.judge_compiled(config, results[0])

    def answers_without_waiting(self) -> bool:
        """Whether :meth:`judge_if_compiled` and :meth:`probes_over` can tell (a pool of this process, with a cache)."""
        return self.pruner.pool.compiles_ahead()

    def probes_over(self) -> bool:
        """Whether none of the probe compiles :meth:`start_probes` sent is running (True when it sent none, and for
        one it had no worker for, which the judging compiles): the judging of the space waits for nothing else."""
        return not self.pruner.pool.compiling_ahead(self.probe_jobs)

    def compile_workers(self) -> int:
        """How many compiles the gate runs at once (its pool's workers)."""
        return self.pruner.pool.max_workers

    def compile_ahead(self, configs: Sequence[KernelConfig], limit: int) -> int:
        """Compile ``configs`` (each with its edge-shape jobs), at most ``limit`` jobs, on pool workers no asked-for
        job needs (:meth:`CompilePool.compile_ahead`): a later compile of the same job takes the result. How many
        of ``configs``, from the first, have all their jobs among them."""
        jobs, whole = [], 0
        for config in configs:
            own = [self.job(config), *self.edge_jobs(config)]
            if len(jobs) + len(own) <= limit:
                whole += 1
            jobs.extend(own)
        ahead = iter(jobs[:limit])
        self.pruner.pool.compile_ahead(lambda: next(ahead, None))
        return whole

    def stop_compiling_ahead(self) -> None:
        """Start no more compiles ahead (those running finish, and stay for a later compile of their job)."""
        self.pruner.pool.compile_ahead(None)

    def plain_survivors(self, configs: Sequence[KernelConfig]) -> list[KernelConfig]:
        """The configs no config-stage rule rejects without predictions (no probe compile needed)."""
        return self.pruner.plain_survivors(list(configs), self.arch)

    def start_probes(self, configs: Sequence[KernelConfig]) -> int:
        """Send the resource model's first probe compiles (:func:`~kernelrules.predict.resource_model.choose_probes`
        over the configs no plain rule rejects, the ones :meth:`prejudge` compiles first, with the register probes of
        a kernel without dots where the workers allow: :func:`~kernelrules.tune.startup.room_for_register_probes`) to
        the compile workers now,
        ready or not (:meth:`CompilePool.compile_now`), so they compile while the caller opens the study; the
        judging then takes their results from the pool. How many were sent."""
        survivors = self.plain_survivors(configs)
        probes = self.pruner.probes_for(survivors)
        extra = self.pruner.register_probes_ahead(survivors, probes, self.arch)  # the judging compiles them as one
        if room_for_register_probes(self.compile_workers(), len(probes), len(extra)):
            probes += extra
        limit = min(self.pruner.timeout, PROBE_TIMEOUT)
        self.probe_jobs = [self.pruner.compile_job(c, self.arch, limit) for c in probes]
        return self.pruner.pool.compile_now(self.probe_jobs)

    def triton_key(self) -> tuple[str, str] | None:
        """The driver's Triton source hash, once its pool computed it (None before, and without compile workers)."""
        return self.pruner.pool.triton_key()

    def start_compile_workers(self, on_triton_key: Callable[[tuple[str, str]], None] | None = None) -> None:
        """Start the pool's workers now, without waiting: each imports Triton while the caller opens the study,
        instead of after it, when the probe compiles need them. The first one also reports Triton's source hash
        once it is ready (:meth:`CompilePool.report_triton_key`), to ``on_triton_key`` too."""
        self.pruner.pool.report_triton_key(on_triton_key)
        self.pruner.pool.start(self.pruner.pool.max_workers)

    def edge_jobs(self, config: KernelConfig) -> list[Any]:
        """The compile jobs of ``config`` at the problem's edge shapes (none without a shared Triton cache)."""
        return [target.job(config, self.arch, self.timeout) for target in self.edge_targets]

    def job(self, config: KernelConfig) -> Any:
        """The compile job of ``config`` for the gate's architecture."""
        return self.pruner.compile_job(config, self.arch)

    def judge_compiled(self, config: KernelConfig, result: Any) -> Judgement:
        """The compiled-stage verdict on ``config`` from its compile ``result``."""
        predicted = self.config_stage.get(config.key())
        facts = compiled_facts(result, self.arch, num_warps=config.num_warps or 4, timeout=self.timeout,
                               predicted=predicted.facts if predicted else None)
        verdict = self.pruner.engine.check(config, self.arch, kernel=dict(self.target.kernel_info), facts=facts,
                                           problem=self.problem, repair=False, stage="compiled")
        return _judgement(verdict, facts, "compiled")

    def keep_pool(self) -> Any:
        """The gate's compile pool, kept open when the gate closes (for the next problem of ``tune_many``)."""
        return self.pruner.release_pool()

    def close(self) -> None:
        self.pruner.close()
