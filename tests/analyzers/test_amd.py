"""AMD CDNA 3 (gfx942): the profile, the amdgcn analyzer, the AMD rules and the resource model.

Everything is cross-compiled on the CPU with Triton 3.6.0's HIP backend (its bundled LLVM
and lld); no ROCm, no GPU. The compiled numbers asserted here are the ones docs/amd.md
reports.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelrules.analyzers import amdgcn
from kernelrules.arch import list_archs, load_arch
from kernelrules.compile.compilejob import CompileJob, compile_job
from kernelrules.config import KernelConfig
from kernelrules.judge.engine import default_engine
from kernelrules.judge.facts import compiled_facts
from kernelrules.predict.resource_model import choose_probes, learn, read_probe
from kernelrules.space import load_space

REPO = Path(__file__).resolve().parents[2]
MATMUL = str(REPO / "examples" / "matmul.py")
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
             "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1}
GFX942 = load_arch("gfx942")


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / "cache"))


def matmul_config(bm, bn, bk, stages, warps, **amd) -> KernelConfig:
    return KernelConfig.from_dict({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8,
                                   "num_stages": stages, "num_warps": warps, **amd})


def compile_gfx942(config: KernelConfig):
    """One in-process gfx942 cross-compile of the example matmul, with its facts."""
    options = {"num_warps": config.num_warps, "num_stages": config.num_stages, **config.backend_options}
    job = CompileJob(path=MATMUL, kernel="matmul_kernel", signature=SIGNATURE, constexprs=dict(config.constexprs),
                     options=options, target=GFX942.triton_target, analyze=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compile_job(job)
    assert result.ok, result.message
    return result


@pytest.fixture(scope="module")
def tile_128():
    """128x128x64, 4 warps, 2 stages, without and with waves_per_eu (the measured table of docs/amd.md)."""
    return {wpe: compile_gfx942(matmul_config(128, 128, 64, 2, 4, waves_per_eu=wpe)) for wpe in (0, 3, 4)}


# -- the profile -------------------------------------------------------------------------


def test_arch_show_json_reports_the_amd_limits(run_cli):
    done = run_cli("arch", "show", "gfx942", "--format", "json")
    assert done.returncode == 0, done.stderr
    flat = json.loads(done.stdout)
    assert flat["waves_per_eu_supported"] is True and flat["backend"] == "hip" and flat["vendor"] == "amd"
    assert (flat["shared_memory_per_block_optin"], flat["shared_memory_per_sm"]) == (65536, 65536)
    assert (flat["vgprs_per_simd_lane"], flat["max_arch_vgprs_per_thread"], flat["max_agprs_per_thread"]) == (512, 256, 256)
    assert (flat["vgpr_allocation_granule"], flat["max_waves_per_simd"], flat["simds_per_cu"]) == (8, 8, 4)
    assert (flat["warp_size"], flat["max_warps_per_sm"], flat["max_threads_per_block"]) == (64, 32, 1024)


@pytest.mark.parametrize("name,sku,cus", [("mi300x", "mi300x", 304), ("MI300A", "mi300a", 228), ("mi325x", "mi325x", 304),
                                          ("cdna3", None, None), ("9.4.2", None, None)])
def test_amd_names_resolve(name, sku, cus):
    arch = load_arch(name)
    assert (arch.name, arch.sku, arch.triton_target) == ("gfx942", sku, ("hip", "gfx942", 64))
    if cus:
        assert arch.sku_data["sm_count"] == cus


def test_nvidia_profiles_keep_waves_per_eu_unsupported():
    assert {a.name: a.features["waves_per_eu_supported"] for a in list_archs() if a.vendor == "nvidia"} and not any(
        a.features["waves_per_eu_supported"] for a in list_archs() if a.vendor == "nvidia")
    assert {a.backend for a in list_archs() if a.vendor == "nvidia"} == {"cuda"}


def test_profile_matches_the_hip_backend():
    from triton.backends.amd.compiler import HIPBackend, HIPOptions
    from triton.backends.compiler import GPUTarget

    backend = HIPBackend(GPUTarget(*GFX942.triton_target))
    options = backend.parse_options({})
    f = GFX942.features
    assert (options.num_warps, options.num_stages, options.warp_size) == (
        f["default_num_warps"], f["default_num_stages"], GFX942.limits["warp_size"])
    assert sorted(options.supported_fp8_dtypes) == list(f["fp8_dtypes"])
    assert ("tf32" in options.allowed_dot_input_precisions) is f["tf32"]
    assert {"waves_per_eu", "matrix_instr_nonkdim", "kpack"} <= {x.name for x in dataclasses.fields(HIPOptions)}
    with pytest.raises(ValueError, match="num_ctas > 1"):
        backend.parse_options({"num_ctas": 2})


# -- the analyzer ------------------------------------------------------------------------

SNIPPET = """\
\t.amdhsa_kernel k
\t\t.amdhsa_next_free_vgpr 96
\t.end_amdhsa_kernel
k:
\tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
\tv_pk_fma_f32 v[4:5], v[4:5], v[6:7], v[8:9]
\tv_fmac_f32_e32 v1, v2, v3
\tds_read_b128 v[10:13], v1
\tds_write_b64 v1, v[2:3]
\tscratch_store_dword off, v2, off offset:4 ; 4-byte Folded Spill
\tscratch_load_dword v2, off, off offset:4 ; 4-byte Folded Reload
; Occupancy: 5
\t.amdgpu_metadata
amdhsa.kernels:
  - .agpr_count:     16
    .private_segment_fixed_size: 8
    .sgpr_count:     20
    .vgpr_count:     96
    .vgpr_spill_count: 1
\t.end_amdgpu_metadata
"""


def test_analyzer_reads_resources_and_instruction_mix():
    facts = amdgcn.facts(amdgcn.parse(SNIPPET))
    assert (facts["registers"], facts["agpr_count"], facts["arch_vgpr_count"]) == (96, 16, 80)
    assert (facts["vgpr_spill_count"], facts["spill_bytes"], facts["llvm_occupancy_waves_per_simd"]) == (1, 8, 5)
    assert (facts["mma_path"], facts["mfma_count"], facts["fma_count"]) == ("mfma", 1, 2)
    assert (facts["lds_loads"], facts["lds_stores"], facts["local_memory_ops"]) == (1, 1, 2)
    assert (facts["spill_store_instructions"], facts["spill_load_instructions"]) == (1, 1)


def test_analyzer_module_imports_no_engine():
    source = (REPO / "analyzers" / "amdgcn.py").read_text()
    assert "kernelrules" not in source.replace('"kernelrules', "")  # analyzers never import the engine


def test_compiled_facts_of_the_example_matmul(tile_128):
    plain = compiled_facts(tile_128[0], GFX942, num_warps=4)
    # 152 arch VGPRs + 64 AGPRs: registers counts both, as the unified file allocates them
    assert (plain["registers"], plain["agpr_count"], plain["spill_bytes"], plain["vgpr_spill_count"]) == (216, 64, 0, 0)
    assert plain["shared_bytes"] == 32768 and plain["mma_path"] == "mfma"
    assert plain["mfma_instructions"] == {"v_mfma_f32_32x32x8_f16": 96} and plain["fma_count"] == 0
    assert plain["lds_loads"] > 0 and plain["lds_stores"] > 0
    # occupancy: 512 // 216 = 2 waves per SIMD by VGPRs; LLVM's comment agrees
    assert (plain["waves_per_simd"], plain["llvm_occupancy_waves_per_simd"], plain["occupancy_limiter"]) == (2.0, 2, "registers")


@pytest.mark.parametrize("wpe,cap", [(3, 168), (4, 128)])
def test_waves_per_eu_caps_vgprs_and_spills(tile_128, wpe, cap):
    facts = compiled_facts(tile_128[wpe], GFX942, num_warps=4)
    assert cap == GFX942.limits["vgprs_per_simd_lane"] // wpe // 8 * 8
    assert facts["registers"] == cap and facts["agpr_count"] == 0
    assert facts["vgpr_spill_count"] > 0 and facts["spill_bytes"] > 0 and facts["local_memory_ops"] > 0
    assert facts["llvm_occupancy_waves_per_simd"] == wpe


def test_waves_per_eu_below_the_workgroup_floor_is_ignored():
    """16 warps put 4 waves on each SIMD: LLVM ignores waves_per_eu=2 (AMD003) and keeps the 128-VGPR floor."""
    plain = compile_gfx942(matmul_config(128, 128, 64, 2, 16))
    asked = compile_gfx942(matmul_config(128, 128, 64, 2, 16, waves_per_eu=2))
    assert plain.asm["amdgcn"].count("v_mfma") == asked.asm["amdgcn"].count("v_mfma")
    assert amdgcn.facts(amdgcn.parse(plain.asm["amdgcn"]))["registers"] == \
        amdgcn.facts(amdgcn.parse(asked.asm["amdgcn"]))["registers"] <= 128


# -- the rules -------------------------------------------------------------------------------


def test_waves_per_eu_spill_rule_on_compiled_facts(tile_128):
    """AMD002 on the real compile: need 216 without the cap, 128 with waves_per_eu=4."""
    config = matmul_config(128, 128, 64, 2, 4, waves_per_eu=4)
    facts = compiled_facts(tile_128[4], GFX942, num_warps=4)
    facts["vgpr_need"] = compiled_facts(tile_128[0], GFX942, num_warps=4)["registers"]
    verdict = default_engine().check(config, GFX942, facts=facts, stage="compiled")
    found = {d.code: d for d in verdict.diagnostics}
    assert "AMD002" in found and not verdict.rejected
    message = found["AMD002"].message
    assert "caps each wave at 128 VGPRs" in message and "needs 216 VGPRs" in message
    assert f"{facts['spill_bytes']} bytes per lane" in message and "waves_per_eu=2" in message


@pytest.mark.slow
def test_check_config_on_a_kernel_warns_about_spills(run_cli):
    """The judged command: waves_per_eu=4 on a kernel that needs more than 128 VGPRs."""
    done = run_cli("check-config", "--arch", "gfx942", "waves_per_eu=4", "BLOCK_M=128", "BLOCK_N=128", "BLOCK_K=64",
                   "GROUP_SIZE_M=8", "num_warps=4", "num_stages=2", "--kernel", MATMUL)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "AMD002 warning" in done.stdout and "128 VGPRs" in done.stdout and "needs 216 VGPRs" in done.stdout


@pytest.mark.parametrize("assignments,codes,exit_code", [
    (["num_warps=16", "waves_per_eu=2"], {"AMD003"}, 0),
    (["num_warps=8", "waves_per_eu=3"], {"AMD004"}, 0),
    (["num_warps=8", "waves_per_eu=4"], set(), 0),
    (["matrix_instr_nonkdim=4"], {"AMD005"}, 1),
    (["kpack=3"], {"AMD006"}, 1),
    (["kpack=16"], {"AMD007"}, 0),
    (["num_warps=32"], {"CFG003"}, 1),
])
def test_config_stage_amd_rules(run_cli, assignments, codes, exit_code):
    done = run_cli("check-config", "--arch", "gfx942", *assignments, "--format", "json")
    assert done.returncode == exit_code, done.stdout + done.stderr
    assert {d["code"] for d in json.loads(done.stdout)["diagnostics"]} == codes


def test_amd_options_stay_rejected_on_nvidia(run_cli):
    for arch in ("ada", "hopper"):
        done = run_cli("check-config", "--arch", arch, "waves_per_eu=2", "matrix_instr_nonkdim=16", "kpack=2",
                       "--format", "json")
        assert done.returncode == 1
        assert {d["code"] for d in json.loads(done.stdout)["diagnostics"]} == {"CFG004"}


def test_unreachable_waves_per_eu_arithmetic():
    """num_warps=8, waves_per_eu=3: 168 VGPRs give 3 waves per SIMD, 12 per CU, one 8-wave workgroup: 2 per SIMD."""
    from kernelrules.judge.facts import occupancy_facts

    occ = occupancy_facts(GFX942, num_warps=8, registers=168, shared_bytes=0)
    assert (occ["active_blocks_per_sm"], occ["waves_per_simd"]) == (1, 2.0)
    assert occupancy_facts(GFX942, num_warps=8, registers=128, shared_bytes=0)["waves_per_simd"] == 4.0


def test_lint_flags_the_hip_configs_on_nvidia(run_cli):
    done = run_cli("lint", str(REPO / "examples" / "matmul_amd.py"), "--arch", "ada", "--stage", "config",
                   "--format", "json")
    findings = json.loads(done.stdout)["findings"]
    assert {f["code"] for f in findings} == {"CFG004"} and len(findings) == 10


@pytest.mark.slow
def test_lint_judges_the_hip_configs_for_gfx942(run_cli):
    done = run_cli("lint", str(REPO / "examples" / "matmul_amd.py"), "--arch", "gfx942", "--format", "json")
    codes = sorted(f["code"] for f in json.loads(done.stdout)["findings"])
    assert codes == ["AMD001", "AMD002", "AMD004", "AMD005"], done.stdout


# -- the resource model on gfx942 --------------------------------------------------------------

# The configs of examples/matmul.space.yaml with tiles up to 128 (larger ones take seconds to compile each).
SPACE = [c for c in load_space(REPO / "examples" / "matmul.space.yaml").configs()
         if max(c.constexprs["BLOCK_M"], c.constexprs["BLOCK_N"], c.constexprs["BLOCK_K"]) <= 128]


@pytest.fixture(scope="module")
def model():
    probes = [read_probe(p, compile_gfx942(p).asm["ttgir"]) for p in choose_probes(SPACE)]
    return learn(probes, GFX942)


def test_model_learns_num_stages_minus_one_buffers(model):
    assert model.describe()["shared"] == {"mfma": [
        "max(1, num_stages - 1) x BLOCK_M x BLOCK_K x 2 B", "max(1, num_stages - 1) x BLOCK_K x BLOCK_N x 2 B"]}


def check_prediction(model, config: KernelConfig) -> None:
    predicted = model.predict(config)
    compiled = compiled_facts(compile_gfx942(config), GFX942, num_warps=config.num_warps)
    assert predicted["shared_bytes"] <= compiled["shared_bytes"] <= predicted["shared_bytes_max"], (config, predicted)
    if config.num_stages >= 3:  # two or more pipeline buffers outweigh the epilogue scratch
        assert predicted["shared_bytes"] == compiled["shared_bytes"], (config, predicted)
    assert predicted["mma_path"] == compiled["mma_path"] == "mfma"
    assert predicted["accumulator_registers_per_thread"] == compiled["accumulator_registers_per_thread"]
    assert (predicted["dot_m"], predicted["dot_n"], predicted["dot_k"]) == (
        compiled["dot_m"], compiled["dot_n"], compiled["dot_k"])


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.sampled_from(SPACE))
def test_prediction_matches_compile(model, config):
    check_prediction(model, config)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.sampled_from(SPACE))
def test_prediction_matches_compile_many(model, config):
    check_prediction(model, config)


@pytest.mark.parametrize("bm,bn,warps,compiled", [(32, 64, 2, 4096), (32, 16, 2, 1024), (32, 16, 4, 2048)])
def test_one_stage_stages_operands_one_at_a_time(model, bm, bn, warps, compiled):
    """num_stages=1 on gfx942: less than both tiles at once (measured); the prediction brackets it."""
    config = matmul_config(bm, bn, 32, 1, warps)
    predicted = model.predict(config)
    assert compile_gfx942(config).metadata["shared"] == compiled
    assert predicted["shared_bytes"] <= compiled <= predicted["shared_bytes_max"] < (bm * 32 + 32 * bn) * 2 * 2


@pytest.mark.parametrize("nonkdim", [4, 8, 64])
def test_a_forced_mfma_size_outside_the_profile_predicts_no_matrix_cores(model, nonkdim):
    """matrix_instr_nonkdim 4, 8 or 64 on a 4x64 tile compiles to no v_mfma: predicted so (the AMD008-nonkdim
    case of test_testing_rules.py checks that AMD008 then fires at the config stage)."""
    config = matmul_config(4, 64, 64, 2, 4, matrix_instr_nonkdim=nonkdim)
    compiled = compiled_facts(compile_gfx942(config), GFX942, num_warps=4)
    assert model.predict(config)["mma_path"] == compiled["mma_path"] == "none"
    default = matmul_config(4, 64, 64, 2, 4)
    assert model.predict(default)["mma_path"] == "mfma"
    for allowed in (0, 16, 32):
        assert model.predict(matmul_config(4, 64, 64, 2, 4, matrix_instr_nonkdim=allowed))["mma_path"] == "mfma"
