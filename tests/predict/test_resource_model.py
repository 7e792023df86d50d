"""The resource model's predictions against compiled facts, on every NVIDIA architecture it claims.

Property (hypothesis): for configs drawn from the example matmul's space, the
predicted shared memory brackets the compiled ``metadata.shared``
(``shared_bytes <= compiled <= shared_bytes_max``), equals it whenever the
pipeline buffers dominate (``num_stages >= 3``; with one buffer the epilogue's
layout conversion can be larger), and the predicted MMA path and accumulator size are the compiled
ones. CI runs a few examples per architecture; ``-m slow`` runs many.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelrules.arch import load_arch
from kernelrules.compile.compilejob import CompileJob, compile_job
from kernelrules.config import KernelConfig
from kernelrules.judge.facts import register_demand
from kernelrules.predict.resource_model import choose_probes, learn, read_probe

MATMUL = str(Path(__file__).resolve().parents[2] / "examples" / "matmul.py")
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
             "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1}
ARCHS = ["sm_80", "sm_86", "sm_89", "sm_90"]


def compile_config(config: KernelConfig, arch) -> dict:
    options = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    job = CompileJob(path=MATMUL, kernel="matmul_kernel", signature=SIGNATURE, constexprs=dict(config.constexprs),
                     options=options, target=("cuda", arch.sm, 32), analyze=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compile_job(job)
    assert result.ok, result.message
    return {"shared": result.metadata["shared"], **result.facts, "ttgir": result.asm["ttgir"]}


def matmul_config(bm, bn, bk, stages, warps) -> KernelConfig:
    return KernelConfig.from_dict({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8,
                                   "num_stages": stages, "num_warps": warps})


SPACE = [matmul_config(bm, bn, bk, s, w) for bm in (16, 32, 64, 128) for bn in (16, 32, 64, 128)
         for bk in (32, 64) for s in (1, 2, 3, 4) for w in (2, 4, 8)]


@pytest.fixture(scope="module")
def models():
    """One model per architecture, learned from probe compiles as ``kernelrules prune`` does."""
    learned = {}
    for name in ARCHS:
        arch = load_arch(name)
        probes = [read_probe(p, compile_config(p, arch)["ttgir"]) for p in choose_probes(SPACE)]
        model = learn(probes, arch)
        if name == "sm_90":  # also probe the wgmma path, as ConfigJudge._complete_paths does
            extra = matmul_config(64, 16, 32, 3, 4)
            probes.append(read_probe(extra, compile_config(extra, arch)["ttgir"]))
            model = learn(probes, arch)
        learned[name] = (arch, model)
    return learned


def check_prediction(models, arch_name: str, config: KernelConfig) -> None:
    arch, model = models[arch_name]
    predicted = model.predict(config)
    compiled = compile_config(config, arch)
    assert predicted["shared_bytes"] <= compiled["shared"] <= predicted["shared_bytes_max"], (config, predicted)
    if config.num_stages >= 3:  # two or more pipeline buffers outweigh the epilogue scratch
        assert predicted["shared_bytes"] == compiled["shared"], (config, predicted, compiled["shared"])
    assert predicted["mma_path"] == compiled["mma_path"], config
    assert predicted["accumulator_registers_per_thread"] == compiled["accumulator_registers_per_thread"]
    assert (predicted["dot_m"], predicted["dot_n"], predicted["dot_k"]) == (
        compiled["dot_m"], compiled["dot_n"], compiled["dot_k"])  # DOT001, REG001/REG002 read these
    demand = register_demand(compiled, config.num_warps)
    assert predicted["register_demand_per_thread"] == demand["register_demand_per_thread"]


def test_model_formulas(models):
    assert models["sm_89"][1].describe()["shared"]["mma_sync"] == [
        "max(1, num_stages - 1) x BLOCK_M x BLOCK_K x 2 B", "max(1, num_stages - 1) x BLOCK_K x BLOCK_N x 2 B"]
    assert models["sm_90"][1].describe()["shared"]["wgmma"] == [
        "max(1, num_stages) x BLOCK_M x BLOCK_K x 2 B", "max(1, num_stages) x BLOCK_K x BLOCK_N x 2 B"]


@pytest.mark.parametrize("arch_name", ARCHS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.sampled_from(SPACE))
def test_prediction_matches_compile(models, arch_name, config):
    check_prediction(models, arch_name, config)


@pytest.mark.slow
@pytest.mark.parametrize("arch_name", ARCHS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.sampled_from(SPACE))
def test_prediction_matches_compile_many(models, arch_name, config):
    check_prediction(models, arch_name, config)


@pytest.mark.parametrize("arch_name", ["sm_89", "sm_90"])
def test_probe_from_worker_facts_equals_probe_from_ttgir(arch_name):
    from kernelrules.predict.resource_model import probe_from_facts

    arch = load_arch(arch_name)
    config = matmul_config(128, 64, 32, 3, 4)
    compiled = compile_config(config, arch)
    from_ir = read_probe(config, compiled["ttgir"])
    from_facts = probe_from_facts(config, compiled)
    assert (from_facts.path, from_facts.dots, from_facts.allocs) == (from_ir.path, from_ir.dots, from_ir.allocs)


def test_a_kernel_without_dots_is_probed_with_warps_that_keep_its_threads_light():
    """rope's smallest 16-wide tile (16 x 16 x HEAD_DIM 128) holds 1024 elements a thread with one warp, a probe that
    compiled for seconds (benchmarks/results/probe-choice-2026-12-05): without dots the probes take the warps that
    hold at most PROBE_ELEMENTS_PER_THREAD, then the fewest elements; a dot kernel keeps the space's order (its
    warps choose its MMA path), and so does a kernel whose threads are light anyway."""
    from kernelrules.predict.resource_model import PROBE_ELEMENTS_PER_THREAD

    rope = [KernelConfig.from_dict({"HEAD_DIM": 128, "BLOCK_S": s, "BLOCK_H": h, "num_warps": w})
            for s in (8, 16) for h in (8, 16) for w in (1, 2, 4, 8)]
    warps = [p.num_warps for p in choose_probes(rope, dots=False)]
    assert warps == [2, 4] and 16 * 16 * 128 / (32 * 2) <= PROBE_ELEMENTS_PER_THREAD
    assert [p.num_warps for p in choose_probes(rope)] == [1, 2]  # dots (the default): as the space orders them
    light = [KernelConfig.from_dict({"BLOCK_N": n, "num_warps": w}) for n in (256, 512) for w in (1, 4)]
    assert choose_probes(light, dots=False) == choose_probes(light)


def test_the_judge_reads_whether_the_kernel_file_calls_a_dot(tmp_path):
    from kernelrules.compile.target import KernelTarget
    from kernelrules.judge.pipeline import ConfigJudge

    def has_dots(text: str | None) -> bool:
        path = tmp_path / f"k{len(list(tmp_path.iterdir()))}.py"
        if text is not None:
            path.write_text(text)
        judge = ConfigJudge(KernelTarget.for_signature(path, "k", {"x_ptr": "*fp16"}), jobs=1)
        try:
            return judge.kernel_has_dots
        finally:
            judge.close()

    assert has_dots("acc += tl.dot(a, b)\n") and has_dots("acc = tl.dot_scaled(a, sa, 'e4m3', b, sb, 'e4m3')\n")
    assert has_dots("acc = a.dot (b)\n")
    assert not has_dots("y = tl.sum(x * x, axis=1)\nz = dotted_name(x)\n")
    assert has_dots(None)  # a file that cannot be read: as with dots (the probes stay as they were)
