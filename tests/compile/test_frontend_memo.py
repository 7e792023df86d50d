"""The front-end memo (kernelrules.compile.frontend_memo): configs that differ only in ``num_stages``
reuse the first one's TTIR, and compile to the same PTX, cubin and facts as without the memo."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from kernelrules.arch import load_arch
from kernelrules.compile import frontend_memo
from kernelrules.compile.compilejob import CompileJob, compile_job

MATMUL = str(Path(__file__).resolve().parents[2] / "examples" / "matmul.py")
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 1024, "N": 1024, "K": 1024,
             "stride_am": 1024, "stride_ak": 1, "stride_bk": 1024, "stride_bn": 1, "stride_cm": 1024, "stride_cn": 1}
BLOCKS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_SIZE_M": 8}


def compile_stages(stages: list[int], warps: int = 4, arch: str = "sm_89") -> list:
    target = ("cuda", load_arch(arch).sm, 32)
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in stages:
            job = CompileJob(path=MATMUL, kernel="matmul_kernel", signature=SIGNATURE, constexprs=BLOCKS,
                             options={"num_warps": warps, "num_stages": s}, target=target, analyze=True)
            results.append(compile_job(job))
    assert all(r.ok for r in results), [r.message for r in results]
    return results


@pytest.fixture
def fresh(monkeypatch):
    frontend_memo.clear()
    yield monkeypatch
    frontend_memo.clear()


def test_stage_variants_reuse_the_front_end_and_compile_identically(fresh):
    fresh.setenv("KERNELRULES_FRONTEND_MEMO", "0")
    plain = compile_stages([2, 3, 4])
    fresh.setenv("KERNELRULES_FRONTEND_MEMO", "1")
    before = dict(frontend_memo.counts)
    memo = compile_stages([2, 3, 4])
    assert frontend_memo.counts["built"] - before["built"] == 1
    assert frontend_memo.counts["reused"] - before["reused"] == 2
    for a, b in zip(plain, memo):
        assert a.asm["ptx"] == b.asm["ptx"] and a.asm["cubin"] == b.asm["cubin"]
        assert a.facts == b.facts and a.metadata["shared"] == b.metadata["shared"]
    # the pipeliner still sees each config's own num_stages
    assert len({r.metadata["shared"] for r in memo}) == 3


def test_other_options_build_their_own_front_end(fresh):
    fresh.setenv("KERNELRULES_FRONTEND_MEMO", "1")
    before = dict(frontend_memo.counts)
    compile_stages([3], warps=4)
    compile_stages([3], warps=8)  # num_warps can change the TTIR (tl.extra.cuda.num_warps)
    assert frontend_memo.counts["built"] - before["built"] == 2
    assert frontend_memo.counts["reused"] == before["reused"]


def test_memo_key_ignores_num_stages_only():
    class Source:
        def hash(self) -> str:
            return "abc"

    from triton.backends.nvidia.compiler import CUDAOptions

    key = frontend_memo.memo_key(Source(), "cuda:89", CUDAOptions(num_warps=4, num_stages=2))
    assert key == frontend_memo.memo_key(Source(), "cuda:89", CUDAOptions(num_warps=4, num_stages=4))
    assert key != frontend_memo.memo_key(Source(), "cuda:89", CUDAOptions(num_warps=8, num_stages=2))
    assert key != frontend_memo.memo_key(Source(), "cuda:90", CUDAOptions(num_warps=4, num_stages=2))


def test_pool_hands_a_worker_the_jobs_its_front_end_serves():
    """An idle worker takes a queued job equal to its last but for num_stages, else one no busy
    worker's front end covers, so that two workers split stage variants by group."""
    from kernelrules.compile.pool import CompilePool, _Worker

    def job(warps: int, stages: int) -> CompileJob:
        return CompileJob(path=MATMUL, kernel="matmul_kernel", signature=SIGNATURE, constexprs=BLOCKS,
                          options={"num_warps": warps, "num_stages": stages})

    pool = CompilePool(max_workers=2)
    a, b = _Worker(process=None, scratch=""), _Worker(process=None, scratch="")
    pool._workers = [a, b]
    queue = [(job(4, 3), None), (job(8, 2), None), (job(4, 4), None), (job(8, 3), None)]
    a.job, a.front_end = job(4, 2), frontend_memo.frontend_group(job(4, 2))
    assert pool._next_index(b, queue) == 1  # not a's group: the num_warps=8 variants
    b.job, b.front_end = queue.pop(1)[0], frontend_memo.frontend_group(job(8, 2))
    a.job = None
    assert pool._next_index(a, queue) == 0  # its own group first
    queue.pop(0)
    assert pool._next_index(a, queue) == 0 and queue[0][0].options["num_stages"] == 4
    pool._workers = []
