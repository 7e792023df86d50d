"""The search loop of ``kernelrules tune``: ask, gate, benchmark, tell; then re-measure the best.

Per candidate, in order, each step able to end it without a benchmark:

1. Optuna proposes parameters (Sobol points first, then TPE or GP; the perf model's
   best guesses enqueued ahead of them in a new study), deduplicated at the sampler
   (:class:`~kernelrules.tune.samplers.DedupSampler`: a config the study holds is never
   proposed again; the run stops when every config of the space is in the study);
2. the config outside the space's constraints -> ``outside_space``;
3. the claim (made by the sampler already for its own proposals): another trial owns the
   config -> ``duplicate`` (nothing timed twice; a safety net now);
4. the rules at the config stage (predicted facts) -> ``rejected`` with the rule codes;
5. constraints learned from earlier failures -> ``learned``;
6. the rules at the compiled stage (a cross-compile in the compile pool, in a background
   thread, overlapping the benchmarks in flight) -> ``rejected``, ``compile_error`` or
   ``compile_timeout``;
7. the compiled stage showed a TTIR without a loop, and a config that differs only in
   ``num_stages`` was timed already -> ``same_binary`` (``num_stages`` reaches only
   Triton's loop passes: the same kernel; it is told the other's time, not timed again);
8. a benchmark worker (one per GPU) compiles, checks against the reference and times
   it -> ``better``/``slower`` or a failure class.

The benchmark workers start first and import torch and set up their GPUs while the rules
judge the whole space, the study opens and the first candidates compile
(:mod:`kernelrules.tune.startup`). At the end the best few configs are
re-measured interleaved on one GPU together with the problem's baseline (the reference
implementation) and the winner is named.

Why over 400 lines: the tuner's event loop (ask, gate, compile ahead, time, tell), the order of its start-up and
the study's opening. The start-up's steps before the loop (probes, first guesses, seeds) are in
:mod:`kernelrules.tune.early_start` (the base class :class:`~kernelrules.tune.early_start.EarlyStart`); the
options, candidates, result and perf-model seeds in :mod:`kernelrules.tune.options` (re-exported here); the
trials in flight (owned, told once, lost, abandoned) in :mod:`kernelrules.tune.ledger`; the session several
problems share and the benchmark workers' start and end in :mod:`kernelrules.tune.session`.
"""

from __future__ import annotations

import collections
import threading
import time
import weakref
from multiprocessing.connection import wait as wait_connections
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..arch import load_arch
from ..compile.stage_twins import binds_num_stages
from ..config import KernelConfig
from ..errors import KernelrulesError
from ..predict.ranking import twin_key
from ..space import load_space
from . import records as rec
from ..expr import safeexpr
from .feedback import GAP_CLASSES, TIMED, LearnedConstraints, bottlenecks, summary
from .edge_shapes import edge_signatures, launcher_jobs
from .gate import Gate, Judgement
from .host_modules import store_for
from .ledger import TrialLedger
from .final import brief, final_rounds
from .problem import ProblemSpec, load_problem
from .early_start import EarlyStart
from .startup import MAX_FIRST_GUESSES, first_compiles, warm_sampler_imports
from .options import Candidate, TuneOptions, TuneResult, perf_model_seeds, predicted_to_spill
from .session import TuneSession, kill_unconfigured, shut_worker, spawn_workers
from .target import arch_name, compiled_stage_blocked, default_study_name


class Tuner(EarlyStart):
    """One ``kernelrules tune`` run (see the module docstring)."""

    def __init__(self, space_path: str | Path, options: TuneOptions, session: TuneSession | None = None) -> None:
        self.started = time.monotonic()  # the run's clock (records' elapsed_s, the budget) includes loading the space
        self.options = options
        #: The processes kept from problem to problem by :func:`tune_many` (None: this run's own).
        self.session = session
        #: Benchmark workers spawned first, importing torch while the space loads (given their settings in run()),
        #: or the session's, which serve this problem next.
        self.spawned = session.workers if session is not None and session.workers else spawn_workers(options)
        try:
            self._load(space_path)
        except BaseException:
            kill_unconfigured(self.spawned)
            raise
        weakref.finalize(self, kill_unconfigured, self.spawned)  # a tuner never run (an error before run()) leaves none

    def _load(self, space_path: str | Path) -> None:
        """The space, its problem, the architecture and what the run needs of them."""
        options = self.options
        self.space = load_space(space_path)
        self.spec: ProblemSpec = load_problem(self.space)
        self.arch = load_arch(arch_name(options.arch, options.interpret))
        self.configs = list(self.space.configs())
        if not self.configs:
            raise KernelrulesError("the space has no configs (after its constraints)", path=str(self.space.path))
        self.space_keys = {_key(c) for c in self.configs}
        self.flops = self.spec.flop_count()
        #: The problem's edge-shape signatures (:func:`edge_signatures`): the gate compiles them, the benchmark
        #: workers build their launchers (none interpreted: no binary is launched).
        self.edge_shape_signatures = [] if options.interpret else edge_signatures(self.spec, self.space.signature)
        self.notes: list[str] = []
        self.records: list[dict] = []
        self.learned = LearnedConstraints()
        #: Who queues the perf model's seeds in a new study ("here", "elsewhere"; None: not decided before the
        #: judging) and the keys of the first guesses asked before it (:meth:`_time_first_guesses`).
        self.seeding: str | None = None
        self.first_guess_keys: set[str] = set()
        self.first_guess_sent = False
        #: Early guesses whose compiles were not over when the space's judging started (:meth:`_judge_while_timing`):
        #: the loop's compile stream takes them first.
        self.guesses_to_compile: list[Candidate] = []
        self.best_ms: float | None = None
        self.previous_ms: float | None = None
        #: A timed config of a loop-free kernel by its key without num_stages: (trial, ms), for its stage twins.
        self.timed_twins: dict[tuple, tuple[int, float]] = {}
        #: When each start-up step ended, in seconds from the start (``_mark``).
        self.startup: dict[str, float] = {}
        #: Whether a kernel parameter takes the num_stages option's value (then no config has a stage twin).
        self.binds_num_stages = binds_num_stages(str(self.space.kernel_path), self.space.kernel_name)
        if options.stage == "compiled":
            blocked = compiled_stage_blocked(self.space)
            if blocked:
                options.stage = "config"
                self.notes.append(f"the compiled stage is off: the Inductor kernel reads {', '.join(blocked)} from "
                                  f"imports the compile gate does not load (torch._inductor); candidates were judged "
                                  f"at the config stage and compiled by the benchmark worker")

    # -- set-up ---------------------------------------------------------------------------

    def _open(self) -> None:
        from .recovery import Heartbeat, recover, write_owner
        from .samplers import make_sampler
        from .study import Claims, ParamCodec, open_storage, storage_url
        import optuna

        o = self.options
        self.codec = ParamCodec(self.space)
        self.url = storage_url(o.storage, self.space.path, Path(o.study_dir) if o.study_dir else None)
        self.storage = open_storage(self.url)
        self._mark("storage_opened")
        self.study_name = o.study_name or default_study_name(self.space, self.spec, self.arch, o.interpret)
        startup = o.startup_trials if o.startup_trials is not None else max(4, min(16, (o.trials or 64) // 5))
        sampler = make_sampler(o.sampler, self.codec, seed=o.seed, n_startup=startup)
        self.sampler = sampler
        self.study = optuna.create_study(storage=self.storage, study_name=self.study_name, direction="minimize",
                                         sampler=sampler, load_if_exists=True)
        self._check_study_attrs()
        self.claims = Claims(self.storage, self.study_name)
        if hasattr(sampler, "reserve"):  # the sampler claims what it proposes: processes do not draw the same config
            sampler.reserve = lambda params, number: self.claims.claim(
                _key(KernelConfig.from_dict(self.codec.decode(params))), number, limit=self.options.trials)
        if hasattr(sampler, "on_start"):  # the owner first, before the sampler works: see recovery.is_stale
            sampler.on_start = write_owner
        recovered = recover(self.study, self.claims, grace=o.grace)
        if recovered:
            self.notes.append(f"resumed: {len(recovered)} interrupted trial(s) queued again ({recovered})")
        for record in _records(self.study):
            self.learned.observe(record)
            if record.get("status") in TIMED and record.get("ms"):
                self.best_ms = record["ms"] if self.best_ms is None else min(self.best_ms, record["ms"])
        self.heartbeat = Heartbeat(self.study).start()
        self.ledger = TrialLedger(self.study, self.claims, self.heartbeat, self._told)

    def _check_study_attrs(self) -> None:
        from .study import display_url

        attrs = self.study.user_attrs
        identity = {"kernel": f"{Path(self.spec.kernel_path).name}:{self.spec.kernel_name}", "arch": self.arch.name,
                    "sizes": self.spec.sizes, "space": {k: list(v) for k, v in self.space.space.items()},
                    "fixed": dict(self.space.fixed), "interpret": self.options.interpret}
        if "kr_identity" in attrs and attrs["kr_identity"] != identity:
            raise KernelrulesError(f"study {self.study_name!r} in {display_url(self.url)} was made for another "
                                   f"kernel, space, problem or architecture", hint="pass another --study-name")
        if "kr_identity" not in attrs:
            flat, sku = self.arch.flat(), getattr(self.arch, "sku", None)
            if not any(k.endswith("_tflops_dense") for k in flat) and flat.get("skus"):
                sku = flat["skus"][0]  # the roofline needs a SKU's figures: the family's first one
                flat = load_arch(sku).flat()
            self.study.set_user_attr("kr_identity", identity)
            self.study.set_user_attr("kr_meta", {
                "space_file": self.space.path.name, "space_size": len(self.configs), "flops": self.flops,
                "bytes": self.spec.byte_count(), "dtype": self.spec.precision_dtype(),
                "arch": self.arch.name, "sku": sku,
                "peaks": {k: flat[k] for k in flat if k.endswith(("_tflops_dense", "_tflops", "bandwidth_gbps"))},
                "interpret": self.options.interpret, "sizes": self.spec.sizes})

    def _start_workers(self) -> list:
        """Give the benchmark workers spawned with the tuner (:func:`spawn_workers`) their settings, without waiting:
        each imports torch and sets up its GPU (seconds with a CUDA build) while this process opens the study and the
        rules judge the space."""
        from .worker import WorkerSettings

        o = self.options
        gpus = o.gpus or ["0"]
        cache = None if o.interpret else self._triton_cache()
        workers, self.spawned = self.spawned or spawn_workers(o), []  # a second run() spawns its own
        if self.session is not None:
            self.session.workers = workers
        #: Workers that served a problem before (a session's later problem): they are ready within milliseconds.
        self.warm_workers = bool(workers) and all(worker.settings is not None for worker in workers)
        launchers = [] if cache is None else launcher_jobs(self.space, self.configs[:1], self.arch,
                                                           self.edge_shape_signatures)
        for worker, gpu in zip(workers, gpus):
            give = worker.configure if worker.settings is None else worker.load  # a session's worker: next problem
            give(WorkerSettings(
                spec=self.spec, gpu=None if o.interpret else gpu, interpret=o.interpret, triton_cache_dir=cache,
                warmup_ms=o.warmup_ms, rep_ms=o.rep_ms, max_error=o.max_error, timer=o.timer,
                l2_bytes=int(self.arch.flat().get("l2_bytes") or 0),
                host_module_store=None if cache is None else str(store_for(o.cache_dir)),
                launcher_jobs=launchers, **self._edge_probe(cache)))
        return workers

    def _edge_probe(self, triton_cache: str | None) -> dict[str, Any]:
        """What a worker needs to read a harness problem's edge-shape signatures: two configs (the first
        and last of the space) and the space's signature; nothing for other problems or without a shared cache."""
        if not (self.spec.harness and self.spec.edge_sizes and triton_cache and self.options.stage == "compiled"):
            return {}
        probes = [self.configs[0].to_dict(), self.configs[-1].to_dict()]
        return {"edge_probe_configs": probes, "space_signature": dict(self.space.signature)}

    def _share_triton_key(self, shared: tuple[str, str] | None = None) -> None:
        """Hand the benchmark workers the Triton source hash the gate's first compile worker reported (called by the
        pool as it reads it, while the probes compile; and again at two points of the start-up, in case the key
        came another way), :meth:`BenchWorker.share_triton_key`; nothing under ``--interpret`` (no JIT), and nothing
        from another thread (a key read by the compile stream's thread: sending there would race the loop's sends)."""
        if threading.get_ident() != self._run_thread:  # the compile stream's thread: the loop owns the connections
            return
        shared = None if self.options.interpret else (shared or self.gate.triton_key())
        for worker in self.workers:
            worker.share_triton_key(shared)

    def _await_workers(self, workers: list) -> None:
        """Wait until every worker is ready; one that cannot start is a one-line error."""
        from .worker import WorkerError

        try:
            for worker in workers:
                if not worker.info:  # (one the first guess went to is ready already)
                    worker.wait_ready()
        except WorkerError as exc:
            for worker in workers:
                worker.kill()
            raise KernelrulesError(str(exc), path=str(self.space.path)) from None

    def _triton_cache(self) -> str:
        """One Triton cache for the gate's compiles and the workers' JITs (a JIT of a gated config is a hit)."""
        folder = Path(self.options.study_dir or self.space.path.parent)
        if self.options.storage and "://" not in self.options.storage:
            folder = Path(self.options.storage).resolve().parent
        return str(folder / "triton-cache")

    def run(self) -> TuneResult:
        o = self.options
        from ..compile.cache import ResultCache
        from ..compile.specialize import hide_torch_from_specializer

        hide_torch_from_specializer()  # the driver launches nothing (its workers do): spare torch's import
        self._run_thread = threading.get_ident()  # the one that talks to the benchmark workers

        workers: list = []
        stream = None  # the compiled stage's compile stream, once the space is judged (it then runs the pool)
        self.deferred_count = 0  # configs predicted to spill, held back until nothing else waits
        try:
            # First: a benchmark worker's start (torch, CUDA, the references) is the longest chain to the first timing.
            workers = self._start_workers()
            self.workers = workers
            cache = ResultCache(o.cache_dir) if o.cache_dir else ResultCache()
            self.gate = Gate(self.space, self.arch, stage=o.stage, jobs=o.jobs, timeout=o.compile_timeout,
                             cache=cache, triton_cache_dir=None if o.interpret else self._triton_cache(),
                             edge_signatures=self.edge_shape_signatures,
                             pool=self.session.pool if self.session is not None else None)
            if self.session is not None:
                self.session.pool = self.gate.keep_pool()
            if o.stage != "none":  # the raw space compiles nothing in the gate: no probes, no compiled stage
                self.gate.start_compile_workers(on_triton_key=None if o.interpret else self._share_triton_key)
            self._mark("workers_started")
            if o.stage != "none":  # compiled by the workers while the study opens; the judging takes their results
                self._send_probes()
                self._mark("probes_sent")
            if self.warm_workers and self.spec.harness and o.stage == "compiled":
                # a kept worker reads a harness problem's edge shapes as it loads it (0.02-0.08 s into the H200
                # runs): the first guesses compile and are judged with them, as for any other problem
                self._await_workers(workers[:1])
                self._take_harness_edges(workers[:1])
            # the first guesses compile while the study opens (0.09-0.15 s of the H200 warm series' start)
            guesses = self._compile_first_guesses()
            self._open()
            self._mark("study_opened")
            self._share_triton_key()
            # after the study's opening, which it slowed by holding the GIL; beside the probe compiles, which wait
            warming = warm_sampler_imports(o.sampler)
            early = self._time_first_guesses(workers, guesses, warming)
            if o.stage == "none":
                judged = {}
            elif self.first_guess_sent:
                judged = self._judge_while_timing(workers, early)
            else:
                judged = self.gate.prejudge(self.configs)
            self.gate.stop_compiling_ahead()
            self._mark("space_judged")
            self._share_triton_key()
            if o.stage == "compiled":
                stream = self.gate.stream()
                for candidate in self.guesses_to_compile:  # the perf model's first picks, before its seeds
                    stream.want(candidate.config)
            rejected = [j for j in judged.values() if not j.passed]
            self.config_stage = {"space": len(self.configs), "rejected": len(rejected),
                                 "codes": dict(collections.Counter(c for j in rejected for c in j.codes))}
            self.study.set_user_attr("kr_config_stage", self.config_stage)
            seeds = self._seed()
            # at most MAX_FIRST_GUESSES while the workers start (compiles compete with their start for the cores)
            first = first_compiles(seeds, min(self._capacity(), MAX_FIRST_GUESSES), self._compiled_first) \
                if stream is not None else []
            for config in first:  # the loop's first compiles, while the workers start
                stream.want(config)
            self._mark("seeded")
            self._await_workers(workers)
            if warming is not None:  # the sampler imports it at its first proposal: never two threads at once
                warming.join()
            self._mark("workers_ready")
            self._learn_harness_edges(workers, stream, first)
            self._loop(workers, stream, early, self.guesses_to_compile if stream is not None else ())
            if stream is not None:  # compiles still running (out of time) stop before the final rounds time
                stream.close()
                stream = None
            if self._target_met():
                self.notes.append(f"stopped: a config timed at {self.best_ms:.4g} ms, at or under the target "
                                  f"{self.options.stop_at_ms:g} ms (--stop-at-ms)")
            if self.deferred_count:
                self.notes.append(f"{self.deferred_count} config(s) predicted to spill registers were compiled and "
                                  f"timed after the others (deferred, not rejected)")
            if self.ledger.lost:
                lost = self.ledger.lost
                self.notes.append(f"{len(lost)} trial(s) of this run were failed as stale by another process "
                                  f"while in flight and their configs queued again ({lost}); its heartbeat "
                                  f"looked older than the grace period (TuneOptions.grace)")
            final = self._final(workers[0]) if workers else None
            return self._result(final)
        finally:
            if stream is not None:
                stream.close()
            if hasattr(self, "ledger"):  # made when the study opens, which may have failed
                self.ledger.abandon()
            for worker in workers:
                if worker.info and self.session is not None:
                    continue  # kept for the session's next problem (it shuts them at the end)
                shut_worker(worker)  # one never ready (an error while the space was judged) is killed
            if hasattr(self, "heartbeat"):
                self.heartbeat.stop()
            if hasattr(self, "gate"):  # made after the workers' start, which may have failed
                self.gate.close()

    def _mark(self, step: str) -> None:
        """Seconds from the run's start to the end of a start-up step (the summary's ``startup``)."""
        self.startup[f"{step}_s"] = self._elapsed()

    def _elapsed(self) -> float:
        """Seconds on the run's clock (records' ``elapsed_s``, ``asked_s`` and ``sent_s``, the start-up marks)."""
        return round(time.monotonic() - self.started, 3)

    def _time_out(self) -> bool:
        """Whether the run stops asking: its time budget is spent, or a config timed at or under ``stop_at_ms``."""
        o = self.options
        return self._target_met() or (o.time_budget is not None and time.monotonic() - self.started >= o.time_budget)

    def _target_met(self) -> bool:
        """Whether a config timed at or under ``stop_at_ms`` (never without one)."""
        target = self.options.stop_at_ms
        return target is not None and self.best_ms is not None and self.best_ms <= target

    def _budget_left(self) -> bool:
        o = self.options
        if self._time_out():
            return False
        claimed = self.claims.count()
        if claimed >= len(self.configs):
            return False
        if o.trials is not None and claimed >= o.trials:
            return False
        exhausted = getattr(self.sampler, "exhausted", None)  # every config is in the study, none queued
        return not (exhausted and exhausted(self.study))

    def _capacity(self) -> int:
        """How many candidates may be between the sampler and the GPUs at once: one per benchmark worker,
        plus ``lookahead`` (default: one per compile worker of the gate, so all of them compile while the
        GPUs time; 2 when nothing is compiled before the benchmark)."""
        lookahead = self.options.lookahead
        if lookahead is None:
            lookahead = self.gate.compile_workers() if self.options.stage == "compiled" else 2
        return len(self.workers) + lookahead

    def _loop(self, workers: list, stream: Any, early: Sequence[Candidate] = (),
              compiling_first: Sequence[Candidate] = ()) -> None:
        pending: collections.deque[Candidate] = collections.deque(early)  # ready for a benchmark worker
        compiling: list[Candidate] = list(compiling_first)  # in the compile stream (compiled stage)
        deferred: list[Candidate] = []  # predicted to spill: compiled and timed only when nothing else waits
        duplicates_in_a_row = 0
        asking = True
        capacity = self._capacity()

        def admit(candidates: Sequence[Candidate]) -> None:
            for candidate in candidates:
                if stream is not None:
                    stream.want(candidate.config)
                    compiling.append(candidate)
                else:
                    pending.append(candidate)

        while True:
            interrupted = False  # asking stopped early to start an idle worker: ask on without waiting
            while asking and len(pending) + len(compiling) < capacity:
                if not self._budget_left() or duplicates_in_a_row >= self.options.max_duplicates:
                    if duplicates_in_a_row >= self.options.max_duplicates:
                        self.notes.append(f"stopped: {duplicates_in_a_row} proposals in a row were configs "
                                          f"already judged (the sampler has converged)")
                    asking = False
                    break
                candidate, new = self._ask()
                duplicates_in_a_row = 0 if new else duplicates_in_a_row + 1
                if candidate is None:
                    continue
                if predicted_to_spill(candidate.judgement):
                    deferred.append(candidate)
                    self.deferred_count += 1
                    continue
                admit([candidate])
                self._wait([w for w in workers if w.busy], None, timeout=0)  # a result in: its worker is free
                if _worker_can_start(workers, pending, stream):
                    interrupted = True
                    break
            if self._time_out():  # out of time: left in flight, so the ledger queues them again at the end
                deferred, compiling = [], []
                pending.clear()
            idle = not pending and not compiling and not any(w.busy for w in workers)
            if deferred and (not asking or idle):  # nothing better is left (or coming): their turn
                released, deferred = deferred, []
                admit(released)
            if compiling:
                verdicts = stream.pop(c.config for c in compiling)
                for candidate in list(compiling):
                    verdict = verdicts.get(candidate.config.key())
                    if verdict is not None:
                        compiling.remove(candidate)
                        if self._after_compile(candidate, verdict):
                            pending.append(candidate)
            for worker in workers:
                if not worker.busy and pending:
                    worker.ensure_ready()
                    self._send(worker, _next_to_send(pending))
            busy = [w for w in workers if w.busy]
            if not busy and not pending and not compiling and not asking and not deferred:
                return
            if not interrupted:
                self._wait(busy, stream if compiling else None)

    def _send(self, worker: Any, candidate: Candidate) -> None:
        """Send ``candidate`` to a free benchmark worker to compile, check and time; its ``sent_s`` is now."""
        candidate.sent_s = self._elapsed()
        worker.send(("evaluate", candidate.config.to_dict()), candidate)

    def _wait(self, busy: list, stream: Any, timeout: float = 0.5) -> None:
        """Wait for whichever comes first, a benchmark result or a compiled-stage verdict, and file the
        benchmark results (and expired benchmarks). With ``timeout=0`` (between two asks), only what has come in:
        a worker is busy until its result is read, and while the loop asked to fill its lookahead (40 ms an ask,
        one per compile worker), a first guess's result waited 1.5 s unread with the GPU idle (gemm/large,
        benchmarks/results/suite/pairs-a639a79-warm)."""
        if not busy:
            if stream is not None:
                stream.wait(timeout)
            return
        waited = [w.conn for w in busy] + ([stream.signal] if stream is not None else [])
        ready = wait_connections(waited, timeout=timeout)
        for worker in busy:
            if worker.conn in ready:
                done = worker.handle()
                if done is not None and done[0] is not None:
                    self._benchmarked(done[0], done[1], worker)
            done = worker.expire()
            if done is not None and done[0] is not None:
                self._benchmarked(done[0], done[1], worker)

    def _ask(self) -> tuple[Candidate | None, bool]:
        """Ask Optuna for one trial and take it as far as the config-stage gate; (candidate, was new)."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        try:
            trial = self.study.ask(self.codec.distributions)
        except UpdateFinishedTrialError:  # a new trial failed as stale by another process while being asked
            return None, False
        values = self.codec.decode(trial.params)
        config = KernelConfig.from_dict(values)
        key = _key(config)
        candidate = Candidate(trial, config, key, asked_s=self._elapsed(), seeded=trial.user_attrs.get("kr_seeded"))
        if not self.ledger.own(candidate, values):  # failed as stale by another process before it knew its owner
            return None, False
        if key not in self.space_keys:
            self._finish(candidate, "outside_space", error="violates the space's constraints")
            return None, False
        owner = self.claims.claim(key, trial.number, limit=self.options.trials)
        if owner is None:  # another process reached the study's --trials total since the budget was checked
            record = {"trial": trial.number, "status": "over_budget", "config": values,
                      "config_text": str(config), "key": key}
            self.ledger.tell(candidate, record, False, state=TrialState.FAIL)
            return None, False
        if owner != trial.number:
            self.ledger.duplicate(candidate, owner)
            return None, False
        if self.options.candidate_filter is not None:
            reason = self.options.candidate_filter(values)
            if reason:
                self._finish(candidate, "rejected", stage="filter", codes=["FILTER"], error=reason)
                return None, True
        judgement = self.gate.at_config_stage(config)
        if self.options.stage == "none":  # the raw space (a baseline for comparisons): no rule rejects
            judgement = Judgement(passed=True, stage="none", facts=judgement.facts, warnings=judgement.warnings)
        candidate.judgement = judgement
        if not judgement.passed:
            self._reject_at_config_stage(candidate, judgement)
            return None, True
        learned = self.learned.reason(judgement.facts) if self.options.stage != "none" else None
        if learned:
            self._finish(candidate, "learned", stage="config", error=learned, facts=judgement.facts)
            return None, True
        return candidate, True

    def _reject_at_config_stage(self, candidate: Candidate, judgement: Judgement) -> None:
        """Record the config stage's rejection of ``candidate`` (its codes, messages, facts and repair)."""
        self._finish(candidate, "rejected", stage="config", codes=judgement.codes,
                     error="; ".join(judgement.messages), facts=judgement.facts, repair=judgement.repair)

    def _after_compile(self, candidate: Candidate, judgement: Judgement) -> bool:
        """Record a compiled-stage rejection; True when the candidate goes on to a benchmark."""
        candidate.judgement = judgement
        if judgement.passed:
            loop_free = judgement.facts.get("loop_count") == 0 and not self.binds_num_stages
            twin = self.timed_twins.get(twin_key(candidate.config)) if loop_free else None
            if twin is None:
                return True
            self._finish(candidate, "same_binary", stage="compile", facts=judgement.facts, same_binary_as=twin[0],
                         error=f"the kernel has no loop: the same binary as trial {twin[0]}, which differs only in "
                               f"num_stages; told its time", told_ms=twin[1])
            return False
        if "CMP002" in judgement.codes:
            status = "compile_timeout"
        elif "CMP001" in judgement.codes:
            status = "compile_error"
        else:
            status = "rejected"
        error = str(judgement.facts.get("compile_message") or "") if status != "rejected" else ""
        self._finish(candidate, status, stage="compile", codes=judgement.codes,
                     error=summary(error or "; ".join(judgement.messages)), facts=judgement.facts)
        return False

    def _benchmarked(self, candidate: Candidate, result: Mapping[str, Any], worker: Any) -> None:
        facts = dict(candidate.judgement.facts) if candidate.judgement else {}
        facts.update({f"launch_{k}": v for k, v in (result.get("launch_facts") or {}).items()})
        status = result.get("status", "crash")
        gpu = worker.settings.gpu
        if status != "ok":
            self._finish(candidate, status, stage="launch", error=result.get("error"), facts=facts, gpu=gpu,
                         checks=result.get("checks"))
            return
        timing = result["timing"]
        self._finish(candidate, "timed", stage="timed", facts=facts, gpu=gpu, timing=timing,
                     checks=result.get("checks"), compile_seconds=result.get("compile_seconds"),
                     phase_seconds=result.get("phase_seconds"))
        if facts.get("loop_count") == 0 and not self.binds_num_stages:
            self.timed_twins.setdefault(twin_key(candidate.config), (candidate.trial.number, float(timing["ms"])))

    # -- records --------------------------------------------------------------------------

    def _finish(self, candidate: Candidate, status: str, *, stage: str | None = None, codes: Sequence[str] = (),
                error: str | None = None, facts: Mapping[str, Any] | None = None, timing: Mapping | None = None,
                gpu: str | None = None, **extra: Any) -> dict:
        from .study import worker_id

        values = candidate.config.to_dict()
        record: dict[str, Any] = {
            "trial": candidate.trial.number, "status": status, "config": values,
            "config_text": str(candidate.config), "key": candidate.key, "stage": stage, "rule_codes": list(codes),
            "error": error, "ms": None, "tflops": None, "spread": None, "vs_best": None, "vs_previous": None,
            "bottleneck": [], "facts": dict(facts or {}), "worker": worker_id(), "gpu": gpu,
            "elapsed_s": self._elapsed(), "asked_s": candidate.asked_s, "sent_s": candidate.sent_s,
            "seeded": candidate.seeded,
        }
        record.update({k: v for k, v in extra.items() if v is not None})
        feasible = False
        if timing is not None:
            ms = float(timing["ms"])
            record.update(ms=ms, spread=timing.get("spread"), timing=dict(timing))
            if self.flops:
                record["tflops"] = self.flops / (ms * 1e-3) / 1e12
            record["vs_best"] = None if self.best_ms is None else ms / self.best_ms
            record["vs_previous"] = None if self.previous_ms is None else ms / self.previous_ms
            record["status"] = "better" if self.best_ms is None or ms < self.best_ms else "slower"
            self.best_ms = ms if self.best_ms is None else min(self.best_ms, ms)
            self.previous_ms = ms
            feasible = True
        if status in ("timed", "wrong_result", *GAP_CLASSES) or (status == "rejected" and stage == "compile"):
            warnings = candidate.judgement.warnings if candidate.judgement else []
            record["bottleneck"] = bottlenecks(record["facts"], values, self.arch, self._programs(values), warnings)
        self.learned.observe(record)
        told = record.get("told_ms")  # a stage twin's time (same_binary): feasible, at that time
        self.ledger.tell(candidate, record, feasible or told is not None, value=told)
        return record

    def _told(self, record: dict) -> None:
        """A record the study took: kept for the result and handed to the callbacks."""
        self.records.append(record)
        if record["status"] not in ("duplicate", "over_budget") and self.options.on_record:
            self.options.on_record(record)
        if self.options.on_progress:
            self.options.on_progress({"judged": self.claims.count(), "total": self._target(), "best_ms": self.best_ms,
                                      "record": record})

    def _target(self) -> int:
        return min(len(self.configs), self.options.trials or len(self.configs))

    def _programs(self, config: Mapping[str, Any]) -> int | None:
        if not self.spec.grid:
            return None
        try:
            env = {**self.spec.values, **config, **self.spec.sizes}
            total = 1
            for expr in self.spec.grid:
                total *= int(safeexpr.evaluate(expr, env, torch_allowed=False))
            return total
        except Exception:  # noqa: BLE001
            return None

    # -- the end --------------------------------------------------------------------------

    def _final(self, worker: Any) -> dict[str, Any] | None:
        """Re-measure the best configs and the baseline, interleaved, on one worker; name the winner."""
        final = final_rounds(_records(self.study), self.spec, worker, top_k=self.options.top_k,
                             rounds=self.options.rounds, interpret=self.options.interpret)
        if final is not None:
            self.study.set_user_attr("kr_final", final)
        return final

    def _result(self, final: dict | None) -> TuneResult:
        from .study import display_url

        records = _records(self.study)
        summary_ = {
            "study": self.study_name, "storage": display_url(self.url), "arch": self.arch.name,
            "interpret": self.options.interpret,
            "timings_meaningful": not self.options.interpret, "space_file": str(self.space.path),
            "funnel": rec.funnel(records, len(self.configs)), "rejected_codes": rec.rejected_codes(records),
            "config_stage": self.config_stage, "best": [brief(r) for r in rec.best(records, 10)],
            "final": final, "gaps": rec.gaps(records), "learned": self.learned.describe(), "flops": self.flops,
            "elapsed_s": self._elapsed(), "startup": dict(self.startup),
            "worker_startup": self._worker_startup(),
        }
        winner = (final or {}).get("winner") or (summary_["best"][0] if summary_["best"] else None)
        if winner:
            summary_["winner"] = {"config": winner["config"], "ms": winner["ms"],
                                  "triton_config": rec.triton_config_line(winner["config"])}
        return TuneResult(self.records, summary_, self.notes)

    def _worker_startup(self) -> dict[str, float]:
        """The first benchmark worker's start-up steps, in seconds from the run's start (``BenchWorker.steps``):
        where its seconds before ``ready`` go (the torch import, the references) and when its warm-up ended."""
        workers = getattr(self, "workers", None) or []
        steps = workers[0].steps if workers else {}
        return {f"{name}_s": round(stamp - self.started, 3) for name, stamp in steps.items()
                if isinstance(stamp, (int, float))}


def tune_many(spaces: Sequence[str | Path], **options: Any) -> list[TuneResult]:
    """Tune several spaces (problems) in turn with the same options, in one :class:`TuneSession`: the second and later
    problems find the benchmark workers and the compile workers started. Each problem has its own study, clock and
    result; an error in one (a space that cannot be loaded, a problem that cannot run) stops the series there."""
    session = TuneSession()
    try:
        return [Tuner(space, TuneOptions(**options), session=session).run() for space in spaces]
    finally:
        session.close()


def _worker_can_start(workers: Sequence[Any], pending: Sequence[Candidate], stream: Any) -> bool:
    """Whether a benchmark worker is idle while a candidate could go to it (one ready, or a verdict in): the loop
    then sends it before asking the sampler for more. Filling the whole lookahead first (one ask per compile
    worker, each a few database round trips) held the first config back for the whole batch."""
    if all(w.busy for w in workers):
        return False
    return bool(pending) or (stream is not None and stream.ready())


def _next_to_send(pending: collections.deque[Candidate]) -> Candidate:
    """Take the candidate a free benchmark worker times next: the perf model's seeds first, the best ranked first
    (their trial numbers follow the model's order), then the others in the order they became ready. Compiles
    finish in no particular order: sent as they finished, the model's first choice (often the winner) waited
    behind four others in an H200 run of layernorm/large (benchmarks/results/suite/pairs-ad2a2a2-warm)."""
    seeds = [c for c in pending if c.seeded]
    chosen = min(seeds, key=lambda c: c.trial.number) if seeds else pending[0]
    pending.remove(chosen)
    return chosen


def _records(study: Any) -> list[dict]:
    from .study import load_records

    return load_records(study)


def _key(config: KernelConfig) -> str:
    return rec.config_key(config)


def tune(space: str | Path, **options: Any) -> TuneResult:
    """Python API of ``kernelrules tune``: ``tune("matmul.tune.yaml", arch="hopper", trials=100)``."""
    return Tuner(space, TuneOptions(**options)).run()


__all__ = ["Candidate", "TuneOptions", "TuneResult", "TuneSession", "Tuner", "perf_model_seeds", "predicted_to_spill",
           "tune", "tune_many"]
