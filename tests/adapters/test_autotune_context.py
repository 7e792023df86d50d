"""One compile pool and one set of probe compiles per kernelrules.autotune tuner, torch-free workers, fork safety."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest
import triton

import kernelrules
from kernelrules.adapters.autotune_context import AutotuneContext
from kernelrules.compile.compilejob import CompileJob
from kernelrules.adapters.triton_perf import triton_perf_model
from kernelrules.compile.pool import CompilePool
from kernelrules.adapters.precompile import precompile_before_timing
from kernelrules.adapters.triton_prune import early_prune

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples"))
from matmul import matmul_kernel  # noqa: E402
from standins import matmul_named_args  # noqa: E402

prune_module = importlib.import_module("kernelrules.judge.pipeline")
MATMUL = str(REPO / "examples" / "matmul.py")
SIZE = 512
TOP_K = 2


def named_args():
    return matmul_named_args(SIZE, SIZE, SIZE)


def configs():
    """Small tiles (quick compiles) on both of Hopper's MMA paths; 128x128x128 at 4 stages does not fit."""
    shapes = [(16, 32, 32, 4, 2), (32, 16, 64, 2, 2), (64, 32, 32, 4, 2), (64, 64, 32, 4, 3), (128, 128, 128, 4, 4)]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_SIZE_M": 8}, num_warps=w, num_stages=s)
            for m, n, k, w, s in shapes]


def shape(config):
    return (tuple(sorted(config.kwargs.items())), config.num_warps, config.num_stages)


class Recorder:
    """Counts pools made, workers started, jobs sent (with the Triton cache each used) and models learned."""

    def __init__(self, monkeypatch):
        self.pools, self.spawned, self.sent, self.models = 0, [], [], []
        init, spawn, dispatch, learn = (CompilePool.__init__, CompilePool._spawn, CompilePool._dispatch,
                                        prune_module.ConfigJudge.learn_model)

        def counting_init(pool, *args, **kwargs):
            self.pools += 1
            init(pool, *args, **kwargs)

        def recording_spawn(pool):
            worker = spawn(pool)
            self.spawned.append(worker.proc.pid)
            return worker

        def recording_dispatch(pool, worker, job, key, shared_dir=None):
            self.sent.append((job, shared_dir))
            return dispatch(pool, worker, job, key, shared_dir)

        def recording_learn(pruner, candidates, arch):
            model = learn(pruner, candidates, arch)
            self.models.append(None if model is None else model.describe())
            return model

        monkeypatch.setattr(CompilePool, "__init__", counting_init)
        monkeypatch.setattr(CompilePool, "_spawn", recording_spawn)
        monkeypatch.setattr(CompilePool, "_dispatch", recording_dispatch)
        monkeypatch.setattr(prune_module.ConfigJudge, "learn_model", recording_learn)

    def probes(self):
        return [job for job, shared in self.sent if shared is None]

    def precompiled(self):
        return [job for job, shared in self.sent if shared is not None]


def fresh_caches(tmp_path, monkeypatch, name):
    triton_cache = tmp_path / name / "triton"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(triton_cache))
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / name / "kr"))
    monkeypatch.setenv("KERNELRULES_ARCH", "hopper")
    return triton_cache


def compiled_kernels(cache_dir: Path) -> int:
    return sum(1 for _ in cache_dir.rglob("matmul_kernel.json"))


def prune(tuner):
    tuner.nargs = named_args()
    try:
        return tuner.prune_configs({})
    finally:
        tuner.nargs = None


def test_one_pool_and_one_set_of_probes_per_tuner_with_the_same_verdicts(tmp_path, monkeypatch):
    monkeypatch.setattr(AutotuneContext, "compiles_all_at_once", lambda self, count: False)  # the probing path
    monkeypatch.setattr(AutotuneContext, "configs_to_time", lambda self, count: None)  # (not ranking first)
    # the standalone APIs, each with its own pool and its own probes: the path before the context
    fresh_caches(tmp_path, monkeypatch, "separate")
    alone = Recorder(monkeypatch)
    tuner = triton.autotune(configs=configs(), key=["M", "N", "K"],
                            prune_configs_by={"early_config_prune": early_prune(matmul_kernel.fn), "top_k": TOP_K}
                            )(matmul_kernel.fn)
    tuner.perf_model = triton_perf_model(tuner)
    separate = [shape(c) for c in prune(precompile_before_timing(tuner))]
    tuner.kernelrules_compile_ahead.join()  # its compiles run in the background
    assert alone.pools == 3 and len(alone.models) == 2
    separate_probes = len(alone.probes())

    triton_cache = fresh_caches(tmp_path, monkeypatch, "shared")
    seen = Recorder(monkeypatch)
    tuner = kernelrules.autotune(configs(), ["M", "N", "K"], perf_model=True, top_k=TOP_K)(matmul_kernel.fn)
    kept = prune(tuner)
    tuner.kernelrules_compile_ahead.join()

    assert [shape(c) for c in kept] == separate and len(kept) == TOP_K  # the same verdicts and ranking
    assert seen.pools == 1 and tuner.kernelrules_context.pools_made == 1
    # both phases fitted the model, from one set of probe compiles
    assert len(seen.models) == 2 and seen.models[0] is not None and seen.models[0] == seen.models[1]
    probes = seen.probes()
    assert 2 <= len(probes) <= 3 and len(set(probes)) == len(probes)
    assert separate_probes == 2 * len(probes)  # each phase compiled the same probes on its own
    # the precompiles went through the same workers, into Triton's cache
    assert len(seen.precompiled()) == TOP_K and compiled_kernels(triton_cache) == TOP_K
    assert {shared for _, shared in seen.sent if shared} == {str(triton_cache)}
    assert len(seen.spawned) <= min(os.cpu_count() or 1, max(len(probes), TOP_K))
    assert tuner.kernelrules_context.workers == len(seen.spawned)  # none restarted, all kept for the next key
    tuner.kernelrules_context.close()
    assert tuner.kernelrules_context.workers == 0


def test_a_short_list_is_compiled_first_into_tritons_cache_with_no_probes(tmp_path, monkeypatch):
    # the machine can compile every config at once: no resource model, every config the rules
    # pass compiled once, straight into Triton's cache, judged on its compiled facts
    monkeypatch.setattr(AutotuneContext, "max_workers", property(lambda self: 8))
    monkeypatch.setattr(AutotuneContext, "configs_to_time", lambda self, count: None)  # (not ranking first)
    triton_cache = fresh_caches(tmp_path, monkeypatch, "first")
    seen = Recorder(monkeypatch)
    tuner = kernelrules.autotune(configs(), ["M", "N", "K"], perf_model=True, top_k=TOP_K)(matmul_kernel.fn)
    kept = prune(tuner)
    context = tuner.kernelrules_context
    tuner.kernelrules_compile_ahead.join()
    assert seen.models == [] and seen.probes() == []  # no probes, in the early prune or the perf model
    sent = seen.precompiled()[:len(configs())]  # the early prune's; the compiles ahead come after them
    assert len(sent) == len(set(sent)) and {shared for _, shared in seen.sent} == {str(triton_cache)}
    # each config compiled once: the perf model ranked on those facts, the precompile compiled nothing again
    assert len(context.compiled_facts) == len(configs())  # the rules pass all five at the config stage
    assert all(facts["origin"] == "compiled" for facts in context.compiled_facts.values())
    # the 128x128x128 4-stage config needs more shared memory than Hopper has: rejected on its compiled
    # facts (MEM001) and repaired; the repair is not compiled by the early prune: the precompile compiles
    # and checks it only if top_k leaves it to time
    assert len(context.unchecked) == 1
    [repair_job] = context.unchecked
    assert repair_job.options["num_stages"] < 4
    assert len(kept) == TOP_K and all(context.was_compiled(job) for job in sent)
    assert all((c.kwargs["BLOCK_M"], c.num_stages) != (128, 4) for c in kept)
    timed_repair = any(context.check_deferred(job) for job in seen.precompiled()[len(configs()):])
    assert compiled_kernels(triton_cache) == len(seen.precompiled()) == len(configs()) + timed_repair
    context.close()


def test_a_list_ranked_first_compiles_only_the_configs_left_to_time(tmp_path, monkeypatch):
    # perf_model=True with top_k below the list's length, on a matmul: the early prune judges at the config
    # stage and compiles nothing (no probes, no compile-first); the perf model ranks on the configs' values;
    # only the top_k configs are compiled, by the precompile, each checked on its compiled facts
    from kernelrules.adapters import kernel_prune
    from kernelrules.arch import load_arch
    from kernelrules.config import KernelConfig
    from kernelrules.predict.perf_general import estimate_any

    monkeypatch.setattr(AutotuneContext, "max_workers", property(lambda self: 8))
    triton_cache = fresh_caches(tmp_path, monkeypatch, "ranked")
    seen = Recorder(monkeypatch)
    checked, passes = [], kernel_prune.KernelJudge.passes_compiled

    def recording(judge, config, result):
        checked.append((config.constexprs["BLOCK_M"], result.ok, "dot_count" in result.facts))
        return passes(judge, config, result)

    monkeypatch.setattr(kernel_prune.KernelJudge, "passes_compiled", recording)
    tuner = kernelrules.autotune(configs(), ["M", "N", "K"], perf_model=True, top_k=TOP_K)(matmul_kernel.fn)
    kept = prune(tuner)
    context, ahead = tuner.kernelrules_context, tuner.kernelrules_compile_ahead
    ahead.join()
    assert seen.models == [] and seen.probes() == [] and context.compiled_facts == {}
    assert context.ranked_first == {load_arch("hopper").name}
    # the top_k by the model's estimates from the configs' values alone (the over-sized 128x128x128 config
    # repaired by the config stage's shared-memory rule or ranked out)
    arch = load_arch("hopper")
    problem = {"M": SIZE, "N": SIZE, "K": SIZE, "dtype": "fp16"}
    by_estimate = sorted(configs(), key=lambda c: estimate_any(KernelConfig.from_triton(c), arch, problem, facts={}))
    assert len(kept) == TOP_K and [shape(c) for c in kept] == [shape(c) for c in by_estimate[:TOP_K]]
    assert len(seen.precompiled()) == TOP_K and compiled_kernels(triton_cache) == TOP_K
    assert len(seen.spawned) <= TOP_K  # the workers the precompile needs, started with the early prune
    assert sorted(m for m, _, _ in checked) == sorted(c.kwargs["BLOCK_M"] for c in kept)
    assert all(ok and has_facts for _, ok, has_facts in checked), checked  # checked on the compile's facts
    assert all(ahead.ready(c) for c in kept)
    # a launch the configs' values cannot rank (no M, N, K): compile first, as without top_k
    args = {k: v for k, v in named_args().items() if k not in ("M", "N", "K")}
    assert not tuner.perf_model.ranks_from_values(args, configs())
    assert tuner.perf_model.ranks_from_values(named_args(), configs())
    context.close()


def test_configs_ranked_from_their_values_are_estimated_once(monkeypatch):
    # ranks_from_values estimates every config to decide; Triton's perf_model calls that follow, one per
    # config with the launch's arguments, are answered from those estimates (no second estimate, no probe)
    import kernelrules.predict.perf_general as perf_general

    calls, estimate = [], perf_general.estimate_any

    def counting(*args, **kwargs):
        calls.append(kwargs.get("facts"))
        return estimate(*args, **kwargs)

    monkeypatch.setattr(perf_general, "estimate_any", counting)
    model = triton_perf_model(matmul_kernel, arch="hopper")
    assert model.ranks_from_values(named_args(), configs())
    assert len(calls) == len(configs())
    estimates = [model(**named_args(), **c.all_kwargs()) for c in configs()]
    assert len(calls) == len(configs()) and calls == [{}] * len(configs())
    assert len(set(estimates)) > 1 and all(e > 0 for e in estimates)


def test_a_deferred_repair_is_compiled_while_the_others_are_timed_and_checked(tmp_path, monkeypatch):
    # no top_k: every kept config is timed, the repair too. The early prune compiles the five configs;
    # the repair is handed back last and compiled in the background into Triton's cache
    monkeypatch.setattr(AutotuneContext, "max_workers", property(lambda self: 8))
    triton_cache = fresh_caches(tmp_path, monkeypatch, "ahead")
    seen = Recorder(monkeypatch)
    tuner = kernelrules.autotune(configs(), ["M", "N", "K"])(matmul_kernel.fn)
    kept = prune(tuner)
    ahead, context = tuner.kernelrules_compile_ahead, tuner.kernelrules_context
    assert len(kept) == len(configs()) and seen.probes() == []
    repair = kept[-1]
    assert (repair.kwargs["BLOCK_M"], repair.kwargs["BLOCK_K"]) == (128, 128) and repair.num_stages < 4
    assert all(shape(c) in {shape(o) for o in configs()} for c in kept[:-1])
    assert ahead.ready(repair)  # waits for its compile; a repair to fewer stages fits in shared memory
    assert compiled_kernels(triton_cache) == len(configs()) + 1
    [repair_job] = [job for job in seen.precompiled() if context.check_deferred(job)]
    assert repair_job.options["num_stages"] == repair.num_stages
    context.close()


def test_a_repair_the_rules_reject_after_its_compile_is_never_timed(tmp_path, monkeypatch):
    from kernelrules.adapters import kernel_prune
    from kernelrules.adapters.compile_ahead import CANNOT_LAUNCH

    monkeypatch.setattr(AutotuneContext, "max_workers", property(lambda self: 8))
    fresh_caches(tmp_path, monkeypatch, "reject")
    checked = []

    def reject(judge, config, result):
        checked.append((config.num_stages, result.ok))
        return False

    monkeypatch.setattr(kernel_prune.KernelJudge, "passes_compiled", reject)
    tuner = kernelrules.autotune(configs(), ["M", "N", "K"])(matmul_kernel.fn)
    kept = prune(tuner)
    ahead = tuner.kernelrules_compile_ahead
    ahead.join()
    assert len(checked) == 1 and checked[0][1]  # only the repair is checked, after a compile that succeeded
    assert not ahead.ready(kept[-1]) and all(ahead.ready(c) for c in kept[:-1])
    assert tuner._bench(config=kept[-1]) == CANNOT_LAUNCH  # skipped: no launch, never the best
    tuner.kernelrules_context.close()


def matmul_job(bm=32, bn=32, bk=32, arch=80):
    spec = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096, "stride_am": 4096,
            "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1}
    return CompileJob(MATMUL, "matmul_kernel", spec, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8},
                      {"num_warps": 4, "num_stages": 2}, ("cuda", arch, 32))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_one_worker_serves_private_and_shared_cache_jobs_without_torch(tmp_path, monkeypatch):
    from kernelrules.compile.compilejob import prepare

    pytest.importorskip("torch")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "unused"))
    shared = tmp_path / "shared"
    job = matmul_job()
    with CompilePool(max_workers=1, timeout=120) as pool:
        [(_, cold)] = pool.run([job])
        [(_, into_shared)] = pool.run([job], triton_cache_dir=str(shared))
        [(_, cold_again)] = pool.run([job])
        [worker] = pool._workers
        maps = Path(f"/proc/{worker.proc.pid}/maps").read_text()
    assert cold.ok and into_shared.ok and cold_again.ok
    assert compiled_kernels(shared) == 1 and not (tmp_path / "unused").exists()
    assert cold_again.asm["ptx"] == cold.asm["ptx"] and not cold_again.from_cache
    assert "libtorch" not in maps and "libtriton" in maps  # the worker compiled without ever loading torch
    import torch  # noqa: F401 - the parent specializes with torch loaded: the same specialization

    assert prepare(job)[1].key_data() == cold.specialization


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_leaves_the_parents_workers_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    context = AutotuneContext(jobs=1, timeout=120)
    with context.pool() as pool:
        [(_, first)] = pool.run([matmul_job()])
        [parent_worker] = [w.proc.pid for w in pool._workers]
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            pool._finalizer()  # what the child's interpreter exit runs: it must not stop the parent's workers
            with context.pool() as own:
                answer = b"new" if own is not pool and context.workers == 0 else b"same"
            context.close()
            os.write(write, answer)
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    assert os.read(read, 16) == b"new"
    os.close(read)
    with context.pool() as again:
        assert again is pool
        [(_, second)] = again.run([matmul_job(bk=64)])
        assert [w.proc.pid for w in again._workers] == [parent_worker]  # alive, not restarted
    assert first.ok and second.ok
    context.close()


def test_idle_workers_are_stopped_and_a_later_use_starts_new_ones(tmp_path, monkeypatch):
    """After ``idle_timeout`` seconds unused the workers exit; a timer older than the last use does nothing."""
    import time

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    context = AutotuneContext(jobs=1, timeout=120, idle_timeout=3600)
    with context.pool() as pool:
        [(_, result)] = pool.run([matmul_job()])
        [worker] = [w.proc for w in pool._workers]
    context._close_if_idle(context._uses - 1)  # a timer started before the last use: stale, no effect
    assert result.ok and context.workers == 1 and worker.poll() is None
    context.idle_timeout = 0.2
    with context.pool():  # this use arms a 0.2 s timer on release
        pass
    deadline = time.monotonic() + 30
    while context.workers and time.monotonic() < deadline:
        time.sleep(0.05)
    assert context.workers == 0 and worker.wait(timeout=30) is not None  # the idle worker process exited
    with context.pool() as again:
        [(_, second)] = again.run([matmul_job(bk=64)])
    assert second.ok and again is not pool and context.pools_made == 2
    context.close()
    assert context._idle_timer is None and context.workers == 0


def test_num_stages_twins_of_a_loop_free_kernel_are_timed_once(tmp_path, monkeypatch):
    """On a kernel without a loop, configs that differ only in num_stages are one binary: the first one of
    each group is benchmarked, the others reuse its timing; other configs are benchmarked as usual."""
    from fused_pointwise import fused_bias_gelu_residual
    from standins import FakeTensor

    fresh_caches(tmp_path, monkeypatch, "twins")
    benched = []

    def bench(self, *args, config, **meta):
        benched.append((config.kwargs["XBLOCK"], config.num_stages))
        return [float(len(benched))] * 3

    monkeypatch.setattr(triton.runtime.autotuner.Autotuner, "_bench", bench)
    listed = [triton.Config({"XBLOCK": b}, num_warps=4, num_stages=s) for b, s in
              ((256, 1), (256, 2), (512, 2), (256, 3), (512, 3))]
    tuner = kernelrules.autotune(listed, ["xnumel"])(fused_bias_gelu_residual.fn)
    tuner.nargs = {"in_ptr0": FakeTensor(), "in_ptr1": FakeTensor(), "in_ptr2": FakeTensor(),
                   "out_ptr0": FakeTensor(), "xnumel": 1 << 20, "hidden": 4096}
    kept = tuner.prune_configs({})
    tuner.nargs = None
    tuner.kernelrules_compile_ahead.join()
    timings = [tuner._bench(config=c) for c in kept]
    assert sorted(benched) == [(256, 1), (512, 2)]  # one benchmark per group of twins
    first = {b: t for (b, _), t in zip(benched, [[1.0] * 3, [2.0] * 3])}
    assert [t for t in timings] == [first[c.kwargs["XBLOCK"]] for c in kept]
    tuner.kernelrules_context.close()


def test_num_stages_twins_of_a_kernel_with_a_loop_are_each_timed(tmp_path, monkeypatch):
    fresh_caches(tmp_path, monkeypatch, "loop-twins")
    benched = []

    def bench(self, *args, config, **meta):
        benched.append(config.num_stages)
        return [1.0] * 3

    monkeypatch.setattr(triton.runtime.autotuner.Autotuner, "_bench", bench)
    listed = [triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=s)
              for s in (2, 3, 4)]
    tuner = kernelrules.autotune(listed, ["M", "N", "K"])(matmul_kernel.fn)
    kept = prune(tuner)
    tuner.kernelrules_compile_ahead.join()
    for config in kept:
        tuner._bench(config=config)
    assert sorted(benched) == [2, 3, 4]  # the K loop is pipelined differently: each is its own kernel
    tuner.kernelrules_context.close()
