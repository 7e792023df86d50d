"""The resource model on a kernel with two sequential loops: Triton's allocator reuses the
first loop's pipeline buffers for the second, and the predicted shared memory (the
largest set of buffers live at once, not their sum) equals a CPU cross-compile's
``metadata.shared`` on sm_80 (mma.sync, ``num_stages - 1`` buffers) and sm_90 (wgmma,
``num_stages`` buffers, and mma.sync for small tiles), pipelined or not (``num_stages = 1``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from kernelrules.arch import load_arch
from kernelrules.compile.compilejob import CompileJob, compile_job
from kernelrules.config import KernelConfig
from kernelrules.predict.resource_model import choose_probes, learn, probe_from_facts, read_probe

KERNEL = str(Path(__file__).resolve().parents[1] / "fixtures" / "two_loops" / "two_loops.py")
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 1024, "N": 1024, "K": "i32",
             "stride_am": 1024, "stride_ak": 1, "stride_bk": 1024, "stride_bn": 1, "stride_cm": 1024, "stride_cn": 1}


def config(bm, bn, bk, stages, warps=4) -> KernelConfig:
    return KernelConfig.from_dict({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                   "num_stages": stages, "num_warps": warps})


SPACE = [config(bm, bn, bk, s) for bm in (16, 64, 128) for bn in (32, 64, 128) for bk in (32, 64)
         for s in (1, 2, 3, 4)]
CHECKED = [config(128, 128, 64, 4), config(128, 64, 32, 3), config(64, 128, 64, 2), config(16, 64, 32, 3),
           config(128, 128, 64, 1)]


def compile_config(cfg: KernelConfig, arch):
    job = CompileJob(path=KERNEL, kernel="two_loop_matmul", signature=SIGNATURE, constexprs=dict(cfg.constexprs),
                     options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages},
                     target=("cuda", arch.sm, 32), analyze=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compile_job(job)
    assert result.ok, result.message
    return result


def read(cfg: KernelConfig, arch):
    """A probe as the pruner reads it: from the worker's facts, else (buffers reused) the TTGIR."""
    result = compile_config(cfg, arch)
    probe = probe_from_facts(cfg, result.facts)
    return probe if probe is not None else read_probe(cfg, result.asm["ttgir"])


@pytest.fixture(scope="module", params=["sm_80", "sm_90"])
def model(request):
    arch = load_arch(request.param)
    probes = [read(p, arch) for p in choose_probes(SPACE)]
    learned = learn(probes, arch)
    missing = [c for c in SPACE if learned.mma_path(c.constexprs, c.num_warps) not in learned.paths]
    if missing:  # the other MMA path, as ConfigJudge._complete_paths probes it
        probes += [read(p, arch) for p in choose_probes(missing, count=1)]
        learned = learn(probes, arch)
    return arch, learned


def test_two_loop_probe_needs_the_ttgir():
    """The facts alone cannot tell which buffers share space: the probe is read from the TTGIR."""
    cfg = config(64, 32, 64, 3)
    result = compile_config(cfg, load_arch("sm_80"))
    assert sum(b["bytes"] for b in result.facts["shared_layouts"]) > result.metadata["shared"]
    assert probe_from_facts(cfg, result.facts) is None
    probe = read_probe(cfg, result.asm["ttgir"])
    assert probe.live == ((0, 1), (2, 3))  # each loop's A and B buffers, never both loops at once


@pytest.mark.parametrize("cfg", CHECKED, ids=str)
def test_two_loop_prediction_matches_compile(model, cfg):
    arch, learned = model
    predicted = learned.predict(cfg)
    compiled = compile_config(cfg, arch).metadata["shared"]
    assert predicted["shared_bytes"] <= compiled <= predicted["shared_bytes_max"], (cfg, predicted, compiled)
    assert predicted["shared_bytes"] == compiled, (arch.name, cfg, predicted, compiled)
    buffers = learned.allocations(predicted["mma_path"])
    assert sum(t.bytes(cfg.constexprs, cfg.num_stages) for t in buffers) > compiled  # the sum over-predicts
