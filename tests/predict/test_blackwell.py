"""Blackwell: sm_100 (tcgen05, tensor memory) and sm_120 (mma.sync), cross-compiled on the CPU.

The resource model's predictions (shared memory, MMA path, tensor-memory columns,
accumulator registers) against compiled facts for configs of examples/matmul.py, as
tests/predict/test_resource_model.py does for sm_80..sm_90; the analyzers on tcgen05 PTX; the
Blackwell rules on compiled and predicted facts; ``kernelrules prune`` and ``lint``.
CI runs a few hypothesis examples per architecture; ``-m slow`` runs many.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelrules.analyzers import ptx as ptx_reader
from kernelrules.arch import load_arch
from kernelrules.compile.compilejob import CompileJob, compile_job
from kernelrules.config import KernelConfig
from kernelrules.judge.engine import default_engine
from kernelrules.judge.facts import compiled_facts, register_demand
from kernelrules.predict.resource_model import choose_probes, learn, probe_from_facts
from kernelrules.predict.tensor_memory import tmem_columns

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]
MATMUL = str(ROOT / "examples" / "matmul.py")
TWO_ACC = str(ROOT / "tests" / "fixtures" / "blackwell" / "two_accumulators.py")
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
             "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1}
ARCHS = ["sm_100", "sm_120"]


def matmul_config(bm, bn, bk, stages, warps) -> KernelConfig:
    return KernelConfig.from_dict({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8,
                                   "num_stages": stages, "num_warps": warps})


def compile_matmul(config: KernelConfig, sm: int, dtype: str = "fp16"):
    signature = dict(SIGNATURE, a_ptr="*" + dtype, b_ptr="*" + dtype)
    job = CompileJob(path=MATMUL, kernel="matmul_kernel", signature=signature, constexprs=dict(config.constexprs),
                     options={"num_warps": config.num_warps, "num_stages": config.num_stages},
                     target=("cuda", sm, 32), analyze=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compile_job(job)
    assert result.ok, result.message
    return result


def compiled(config: KernelConfig, arch) -> dict:
    result = compile_matmul(config, arch.sm)
    return {"shared": result.metadata["shared"], "tmem_size": result.metadata.get("tmem_size"), **result.facts}


# the space of tests/predict/test_resource_model.py, with BLOCK_M up to 256 (tensor memory up to 512 columns)
SPACE = [matmul_config(bm, bn, bk, s, w) for bm in (16, 32, 64, 128, 256) for bn in (16, 32, 64, 128, 256)
         for bk in (32, 64) for s in (1, 2, 3, 4) for w in (2, 4, 8)]


@pytest.fixture(scope="module")
def models():
    """One model per architecture, learned from probe compiles as ``kernelrules prune`` does."""
    learned = {}
    for name in ARCHS:
        arch = load_arch(name)
        probes = [probe_from_facts(p, compiled(p, arch)) for p in choose_probes(SPACE)]
        if name == "sm_100":  # also probe the tcgen05 path, as ConfigJudge._complete_paths does
            extra = matmul_config(64, 16, 32, 3, 4)
            probes.append(probe_from_facts(extra, compiled(extra, arch)))
        learned[name] = (arch, learn(probes, arch))
    return learned


def check_prediction(models, arch_name: str, config: KernelConfig) -> None:
    arch, model = models[arch_name]
    predicted = model.predict(config)
    facts = compiled(config, arch)
    assert predicted["shared_bytes"] <= facts["shared"] <= predicted["shared_bytes_max"], (config, predicted)
    if config.num_stages >= 3:  # two or more pipeline buffers outweigh the epilogue scratch
        assert predicted["shared_bytes"] == facts["shared"], (config, predicted, facts["shared"])
    assert predicted["mma_path"] == facts["mma_path"], config
    assert predicted.get("tensor_memory_columns", 0) == facts["tensor_memory_columns"] == (facts["tmem_size"] or 0)
    assert predicted["accumulator_registers_per_thread"] == facts["accumulator_registers_per_thread"]
    demand = register_demand(facts, config.num_warps)
    assert predicted["register_demand_per_thread"] == demand["register_demand_per_thread"]


def test_model_formulas(models):
    described = models["sm_100"][1].describe()["shared"]
    assert described["tcgen05"] == ["max(1, num_stages) x BLOCK_M x BLOCK_K x 2 B",
                                    "max(1, num_stages) x BLOCK_K x BLOCK_N x 2 B",
                                    "min(2, num_stages) x 8 B (mbarriers)"]
    assert described["mma_sync"] == ["max(1, num_stages - 1) x BLOCK_M x BLOCK_K x 2 B",
                                     "max(1, num_stages - 1) x BLOCK_K x BLOCK_N x 2 B"]
    assert list(models["sm_120"][1].describe()["shared"]) == ["mma_sync"]


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


# (BLOCK_M, BLOCK_N, num_warps) -> path on sm_100: tcgen05 needs M a multiple of 64 and 4 or 8 warps
@pytest.mark.parametrize("bm, bn, warps, path", [
    (64, 16, 4, "tcgen05"), (256, 64, 8, "tcgen05"), (32, 64, 4, "mma_sync"), (128, 64, 2, "mma_sync"),
])
def test_tcgen05_eligibility_and_tensor_memory(models, bm, bn, warps, path):
    arch, model = models["sm_100"]
    config = matmul_config(bm, bn, 32, 3, warps)
    facts = compiled(config, arch)
    assert model.predict(config)["mma_path"] == facts["mma_path"] == path
    if path == "tcgen05":
        assert facts["tensor_memory_columns"] == tmem_columns(bm, bn) == max(32, bn * max(1, bm // 128))
        assert facts["accumulator_registers_per_thread"] == 0  # the accumulator lives in tensor memory
    else:
        assert facts["tensor_memory_columns"] == 0
        assert facts["accumulator_registers_per_thread"] == bm * bn // (32 * warps)


def test_sm120_has_no_tcgen05(models):
    arch, _ = models["sm_120"]
    facts = compiled(matmul_config(128, 128, 64, 3, 4), arch)
    assert (facts["mma_path"], facts["tensor_memory_columns"], facts["ptx_target"]) == ("mma_sync", 0, "sm_120a")
    assert facts["shared"] == 2 * (128 * 64 + 64 * 128) * 2  # num_stages - 1 buffers, as on sm_8x


def test_tensor_memory_column_formula():
    """Columns measured on sm_100 (metadata.tmem_size) for the tiles of docs/blackwell.md."""
    measured = {(64, 16): 32, (64, 256): 256, (64, 512): 256, (128, 64): 64, (128, 256): 256, (128, 512): 512,
                (256, 64): 128, (256, 128): 256, (256, 256): 512}
    assert {tile: tmem_columns(*tile) for tile in measured} == measured


def test_ptx_reader_knows_tcgen05():
    result = compile_matmul(matmul_config(128, 128, 64, 3, 4), 100)
    listing = ptx_reader.parse(result.asm["ptx"])
    classes = listing.class_counts()
    assert classes["tcgen05_mma"] > 0 and classes["tcgen05_alloc"] == 1 and classes["tcgen05_ld"] >= 1
    assert listing.tensor_memory_columns() == result.metadata["tmem_size"] == 128
    assert [m["kind"] for m in listing.mma()] == ["tcgen05_mma"] and listing.mma()[0]["types"] == "f16"


def _compile_two_accumulators(bn2: int):
    job = CompileJob(path=TWO_ACC, kernel="two_acc", signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16",
                                                                 "d_ptr": "*fp16", "K": 4096},
                     constexprs={"BM": 128, "BN": 256, "BN2": bn2, "BK": 32}, options={"num_warps": 4, "num_stages": 2},
                     target=("cuda", 100, 32), analyze=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile_job(job)


def test_tensor_memory_over_512_columns_is_mem004():
    """Two accumulators (128x256 and 128x512) compile with 768 columns: Triton fails them at launch."""
    arch = load_arch("b200")
    result = _compile_two_accumulators(512)
    assert result.ok and result.metadata["tmem_size"] == 768 == tmem_columns(128, 256) + tmem_columns(128, 512)
    facts = compiled_facts(result, arch, num_warps=4)
    config = KernelConfig.from_dict({"BM": 128, "BN": 256, "BN2": 512, "BK": 32, "num_warps": 4, "num_stages": 2})
    verdict = default_engine().judge(config, arch, facts=facts, stage="compiled")
    assert "MEM004" in [d.code for d in verdict.diagnostics] and verdict.rejected
    fits = compiled_facts(_compile_two_accumulators(256), arch, num_warps=4)
    assert fits["tensor_memory_columns"] == 512
    assert "MEM004" not in [d.code for d in default_engine().judge(config, arch, facts=fits).diagnostics]


def test_fp8_off_tcgen05_is_upcast_on_sm100_but_native_on_sm120(models):
    """DTY004 predicts the sm_100 fallback's fp16 upcast; DTY003 sees it compiled; sm_120 keeps fp8."""
    config = matmul_config(32, 64, 64, 3, 4)
    facts_100 = compile_matmul(config, 100, "fp8e4nv").facts
    facts_120 = compile_matmul(config, 120, "fp8e4nv").facts
    assert (facts_100["mma_path"], facts_100["fp8_upcast"]) == ("mma_sync", True)
    assert (facts_120["mma_path"], facts_120["fp8_upcast"]) == ("mma_sync", False)
    assert [m["types"] for m in facts_120["mma_instructions"]] == ["f32.e4m3.e4m3.f32"]
    native = compile_matmul(matmul_config(128, 64, 64, 3, 4), 100, "fp8e4nv").facts
    assert (native["mma_path"], native["fp8_upcast"], native["mma_instructions"][0]["types"]) == (
        "tcgen05", False, "f8f6f4")

    engine, kernel = default_engine(), {"dtypes": ["fp8e4nv", "fp16"]}
    predicted = {**models["sm_100"][1].predict(config), "dot_operand_bits": 8}
    codes = [d.code for d in engine.judge(config, load_arch("sm_100"), kernel=kernel, facts=predicted).diagnostics]
    assert "DTY004" in codes and "MMA003" in codes
    after = [d.code for d in engine.judge(config, load_arch("sm_100"), kernel=kernel,
                                          facts={**facts_100, "predicted": False}).diagnostics]
    assert "DTY003" in after and "DTY004" not in after
    on_120 = [d.code for d in engine.judge(config, load_arch("sm_120"), kernel=kernel, facts=facts_120).diagnostics]
    assert not {"DTY003", "DTY004", "MMA003"} & set(on_120)


def test_prune_sm100(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / "cache"))
    from kernelrules.adapters.prune_api import prune

    result = prune(str(ROOT / "examples" / "matmul.space.yaml"), "sm_100", cache_dir=tmp_path / "cache")
    records = {(r.verdict.config.constexprs["BLOCK_M"], r.verdict.config.constexprs["BLOCK_N"],
                r.verdict.config.constexprs["BLOCK_K"], r.verdict.config.num_stages, r.verdict.config.num_warps): r
               for r in result.records}
    assert len(records) == 1875
    fits = records[(128, 128, 64, 5, 4)]  # 5 x 32 KiB + 16 B of mbarriers on tcgen05
    assert fits.facts["shared_bytes"] == 163856 and fits.facts["mma_path"] == "tcgen05" and not fits.verdict.rejected
    over = records[(256, 256, 64, 4, 8)]
    assert over.facts["shared_bytes"] == 4 * (256 * 64 + 64 * 256) * 2 + 16
    assert "MEM001" in [d.code for d in over.verdict.diagnostics]
    small = records[(32, 64, 32, 3, 4)]
    assert small.facts["mma_path"] == "mma_sync" and "MMA003" in [d.code for d in small.verdict.diagnostics]


@pytest.mark.slow
def test_lint_cli_sm100_sm120(tmp_path):
    env = {"KERNELRULES_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "kernelrules", "lint", "examples/matmul.py", "--arch", "sm_100,sm_120",
                           "--format", "json"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    findings = report["findings"] if isinstance(report, dict) else report
    by_arch: dict[str, set[str]] = {}
    for finding in findings:
        by_arch.setdefault(finding.get("arch", ""), set()).add(finding["code"])
    text = json.dumps(findings)
    assert "sm_120" in text and "sm_100" in text and "MEM001" in text and "MMA003" in text


def test_tensor_memory_first_fit_placement():
    """Triton's placement in two 64-lane halves (no compile: the compiled checks are in test_testing_rules.py)."""
    from kernelrules.predict.tensor_memory import tmem_allocation_size, tmem_chunk

    assert tmem_chunk(64, 256) == (1, 256) and tmem_chunk(64, 512) == (2, 256) and tmem_chunk(256, 128) == (2, 256)
    assert tmem_allocation_size([]) == 0
    assert tmem_allocation_size([(1, 16)]) == 32  # rounded up to the 32-column allocation unit
    assert tmem_allocation_size([(1, 256)] * 3) == 512  # two share columns 0-255, the third takes 256-511
    assert tmem_allocation_size([(2, 256)] * 3) == 768  # over 512: left as is, the kernel cannot load
    assert tmem_allocation_size([(1, 64), (2, 64), (1, 64)]) == 128  # the last fills the half the first left free
