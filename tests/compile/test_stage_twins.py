"""Configs of a loop-free kernel that differ only in num_stages: one compile answers them all; the workers' priority."""

from __future__ import annotations

import hashlib
import os
import json
import textwrap

import pytest

from kernelrules.compile.cache import ResultCache, cache_key
from kernelrules.compile.compilejob import CompileJob, CompileResult, compile_job
from kernelrules.compile.pool import CompilePool
from kernelrules.compile.stage_twins import StageTwins, answer_from, loop_free

triton = pytest.importorskip("triton")

KERNELS = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def tile_dot(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        idx = offs[:, None] * BLOCK + offs[None, :]
        a = tl.load(a_ptr + idx)
        b = tl.load(b_ptr + idx)
        tl.store(c_ptr + idx, tl.dot(a, b).to(tl.float16))


    @triton.jit
    def row_loop(a_ptr, c_ptr, N, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, N, BLOCK):
            acc += tl.load(a_ptr + start + offs, mask=start + offs < N, other=0.0)
        tl.store(c_ptr + offs, acc)


    @triton.jit
    def stage_param(a_ptr, c_ptr, num_stages: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(c_ptr + offs, tl.load(a_ptr + offs) * num_stages)
''')

DOT_SPEC = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
LOOP_SPEC = {"a_ptr": "*fp32", "c_ptr": "*fp32", "N": 4096}


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return str(path)


def _job(path, kernel, signature, stages, arch=90, block=32):
    return CompileJob(path=path, kernel=kernel, signature=signature, constexprs={"BLOCK": block},
                      options={"num_warps": 4, "num_stages": stages}, target=("cuda", arch, 32), analyze=True)


def _digest(result: CompileResult) -> tuple:
    """What must not differ between twins: PTX, cubin and facts."""
    facts = json.dumps(result.facts, sort_keys=True, default=str)
    return (hashlib.sha256(result.asm["ptx"].encode()).hexdigest(), hashlib.sha256(result.asm["cubin"]).hexdigest(),
            hashlib.sha256(facts.encode()).hexdigest())


def _ok(result: CompileResult) -> CompileResult:
    assert result.ok, result.message
    return result


# --------------------------------------------------------------------------- the claim, on every NVIDIA arch


@pytest.mark.parametrize("arch", [90, pytest.param(80, marks=pytest.mark.slow), pytest.param(89, marks=pytest.mark.slow),
                                  pytest.param(100, marks=pytest.mark.slow), pytest.param(120, marks=pytest.mark.slow)])
def test_loop_free_twins_compile_identically(kernels, arch):
    """num_stages 1 and 4 of a loop-free dot kernel: the same PTX, cubin and facts (what the pool relies on)."""
    one, four = (_ok(compile_job(_job(kernels, "tile_dot", DOT_SPEC, s, arch))) for s in (1, 4))
    assert loop_free(one) and loop_free(four)
    assert _digest(one) == _digest(four)
    assert (one.metadata["num_stages"], four.metadata["num_stages"]) == (1, 4)


def test_looping_kernel_is_not_loop_free(kernels):
    assert loop_free(_ok(compile_job(_job(kernels, "row_loop", LOOP_SPEC, 3)))) is False


# --------------------------------------------------------------------------- the pool


def test_pool_compiles_one_twin_and_answers_the_rest(kernels, tmp_path):
    jobs = [_job(kernels, "tile_dot", DOT_SPEC, s) for s in (2, 3, 4, 5)]
    reference = _ok(compile_job(jobs[2]))
    with CompilePool(max_workers=2, cache=ResultCache(tmp_path / "cache")) as pool:
        results = dict((job.options["num_stages"], result) for job, result in pool.run(jobs))
        assert pool._next_id == 1  # one job reached a worker
    assert sorted(results) == [2, 3, 4, 5]
    for stages, result in results.items():
        assert _ok(result).metadata["num_stages"] == stages
        assert _digest(result) == _digest(reference)
    compiled = [r for r in results.values() if "hash" in r.metadata]
    assert len(compiled) == 1 and {r.compile_seconds for r in results.values()} == {compiled[0].compile_seconds}


def test_twin_answers_are_stored_under_their_own_keys(kernels, tmp_path):
    cache = ResultCache(tmp_path / "cache")
    jobs = [_job(kernels, "tile_dot", DOT_SPEC, s) for s in (2, 4)]
    with CompilePool(max_workers=1, cache=cache) as pool:
        list(pool.run(jobs))
    with CompilePool(max_workers=1, cache=cache) as pool:
        again = [result for _job_, result in pool.run(jobs)]
        assert pool._next_id == 0
    assert all(r.from_cache for r in again)
    assert sorted(r.metadata["num_stages"] for r in again) == [2, 4]


def test_pool_compiles_every_twin_of_a_looping_kernel(kernels, tmp_path):
    jobs = [_job(kernels, "row_loop", LOOP_SPEC, s) for s in (1, 2, 3)]
    with CompilePool(max_workers=2, cache=ResultCache(tmp_path / "cache")) as pool:
        results = [_ok(result) for _job_, result in pool.run(jobs)]
        assert pool._next_id == 3
    assert all("hash" in r.metadata for r in results)


def test_no_twins_when_filling_a_triton_cache(kernels, tmp_path):
    """kernelrules.autotune's precompile fills Triton's cache, whose key has num_stages: every twin compiles."""
    jobs = [_job(kernels, "tile_dot", DOT_SPEC, s) for s in (2, 3)]
    with CompilePool(max_workers=1, cache=ResultCache(tmp_path / "cache")) as pool:
        list(pool.run(jobs, triton_cache_dir=str(tmp_path / "shared")))
        assert pool._next_id == 2


def test_no_twins_for_a_num_stages_parameter(kernels, tmp_path):
    """A launch binds the num_stages option to a parameter of that name: the twins differ."""
    spec = {"a_ptr": "*fp32", "c_ptr": "*fp32"}
    jobs = [_job(kernels, "stage_param", spec, s) for s in (2, 3)]
    with CompilePool(max_workers=1, cache=ResultCache(tmp_path / "cache")) as pool:
        results = [_ok(result) for _job_, result in pool.run(jobs)]
        assert pool._next_id == 2
    assert results[0].asm["ttir"] != results[1].asm["ttir"]


# --------------------------------------------------------------------------- bookkeeping


def test_twin_key_ignores_only_num_stages(kernels):
    base = _job(kernels, "tile_dot", DOT_SPEC, 2)
    assert cache_key(base, "h", twin=True) == cache_key(_job(kernels, "tile_dot", DOT_SPEC, 4), "h", twin=True)
    assert cache_key(base, "h", twin=True) != cache_key(_job(kernels, "tile_dot", DOT_SPEC, 2, block=64), "h", twin=True)
    assert cache_key(base, "h", twin=True) != cache_key(base, "h")


def test_hold_only_while_a_twin_compiles_and_the_kernel_may_be_loop_free():
    twins = StageTwins()
    job = CompileJob(path="k.py", kernel="k", signature={})
    assert twins.hold(job, "t", {"t"}) and not twins.hold(job, "t", {"u"}) and not twins.hold(job, None, {"t"})
    looping = CompileResult(ok=True, asm={"ttir": "scf.for %i = %a to %b step %c {"})
    twins.learn(job, "u", looping)
    assert not twins.hold(job, "t", {"t"})
    assert twins.answer(job, "u") is None


def test_answer_sets_the_jobs_num_stages_and_drops_tritons_hash():
    twin = CompileResult(ok=True, asm={"ttir": "tt.func @k() { tt.return }"}, metadata={"num_stages": 2, "hash": "x"},
                         compile_seconds=1.5, facts={"registers": 40})
    twins = StageTwins()
    twins.learn(CompileJob(path="k.py", kernel="k", signature={}), "t", twin)
    default = twins.answer(CompileJob(path="k.py", kernel="k", signature={}), "t")
    assert default.metadata == {"num_stages": 3} and default.facts == {"registers": 40}
    assert answer_from(twin, CompileJob(path="k.py", kernel="k", signature={}, options={"num_stages": 5})).metadata == \
        {"num_stages": 5}
    assert twin.metadata == {"num_stages": 2, "hash": "x"}  # the compiled result is left as it was


def test_workers_run_at_a_lower_cpu_priority(kernels, tmp_path):
    """Compile workers (and their ptxas) step back for the process that times kernels."""
    from kernelrules.compile.compile_worker import WORKER_NICENESS

    with CompilePool(max_workers=1, cache=None) as pool:
        list(pool.run([_job(kernels, "tile_dot", DOT_SPEC, 2)]))
        worker = pool._workers[0].proc.pid
        assert os.getpriority(os.PRIO_PROCESS, worker) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICENESS)


def test_cache_stats_see_the_twin_group(kernels, tmp_path):
    """benchmarks/compile_cache_stats.py reads a lint's cache back: the twin group, identical, and the LDL/STL reader."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import compile_cache_stats

    with CompilePool(max_workers=1, cache=ResultCache(tmp_path / "cache")) as pool:
        list(pool.run([_job(kernels, "tile_dot", DOT_SPEC, s) for s in (2, 4)] + [_job(kernels, "row_loop", LOOP_SPEC, 3)]))
    figures = compile_cache_stats.stats(tmp_path / "cache")
    assert figures["entries"] == 3 and figures["ok"] == 3
    assert figures["stage_twins"] == {"groups": 1, "identical": 1, "kernels": 1, "entries": 2,
                                      "seconds_beyond_one_per_group": figures["stage_twins"]["seconds_beyond_one_per_group"]}
    assert figures["ldl_stl_reader"] == {"agree": 3, "disagree": 0, "declined": 0}
    assert figures["duplicate_cubins"]["entries"] == 1


def test_a_kernel_parameter_named_num_stages_rules_out_twins(tmp_path):
    from kernelrules.compile.stage_twins import binds_num_stages

    path = tmp_path / "k.py"
    path.write_text("import triton\n\n@triton.jit\ndef plain(x, BLOCK):\n    pass\n\n"
                    "@triton.jit\ndef takes(x, num_stages: int = 2):\n    pass\n")
    assert not binds_num_stages(str(path), "plain")
    assert binds_num_stages(str(path), "takes")
    assert binds_num_stages(str(path), "missing") and binds_num_stages(str(tmp_path / "none.py"), "plain")


HEURISTIC_KERNELS = '''\
import triton
import triton.language as tl


@triton.heuristics({"UNROLL": lambda args: 2 if args["num_stages"] > 2 else 1})
@triton.jit
def staged(x_ptr, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * UNROLL)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def even(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
'''


def test_a_heuristic_that_reads_num_stages_rules_out_twins(tmp_path):
    """Under ``triton.autotune`` a launch hands the config's ``num_stages`` to ``@triton.heuristics``: a value
    computed from it makes the configs of a stage-twin group different kernels, loop or no loop."""
    import importlib.util

    from kernelrules.compile.stage_twins import binds_num_stages, heuristics_read_num_stages

    path = tmp_path / "heuristic_kernels.py"
    path.write_text(HEURISTIC_KERNELS)
    assert binds_num_stages(str(path), "staged") and not binds_num_stages(str(path), "even")
    spec = importlib.util.spec_from_file_location("heuristic_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert heuristics_read_num_stages(module.staged) and not heuristics_read_num_stages(module.even)
    assert not heuristics_read_num_stages(module.even.fn)  # the bare JITFunction under it
