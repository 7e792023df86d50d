"""The register model (kernelrules/predict/register_model.py) against CPU cross-compiles on sm_80 and sm_90.

A fixture kernel keeps two [ROWS, BLOCK_N] fp32 accumulators live across its loop. The
model is learned as ``kernelrules prune`` learns it (two cheap probes, two register
probes, the live tensors of one probe's TTGIR); then, for configs drawn by hypothesis,
the predicted registers are near the compiled ones and a predicted spill (or its
absence) is the compiled one whenever the prediction is clear of the limit.
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
from kernelrules.predict.register_model import distinct, fit, read_live_tensors, register_limit, register_probes
from kernelrules.predict.resource_model import choose_probes

KERNEL = str(Path(__file__).resolve().parents[1] / "fixtures" / "register_tiles.py")
SIGNATURE = {"x_ptr": "*fp16", "out_ptr": "*fp32", "M": 4096, "N": 8192, "stride": 8192}
ARCHS = ["sm_80", "sm_90"]
SPACE = [KernelConfig.from_dict({"ROWS": r, "BLOCK_N": n, "num_warps": w, "num_stages": 2})
         for r in (1, 2, 4, 8) for n in (128, 256, 512, 1024, 2048) for w in (1, 2, 4, 8)]
_COMPILED: dict = {}


def compile_config(config: KernelConfig, arch) -> dict:
    key = (arch.name, config.key())
    if key not in _COMPILED:
        job = CompileJob(path=KERNEL, kernel="row_moments_kernel", signature=SIGNATURE,
                         constexprs=dict(config.constexprs),
                         options={"num_warps": config.num_warps, "num_stages": config.num_stages},
                         target=("cuda", arch.sm, 32), analyze=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = compile_job(job)
        assert result.ok, result.message
        _COMPILED[key] = {**result.facts, "ttgir": result.asm["ttgir"]}
    return _COMPILED[key]


@pytest.fixture(scope="module")
def models():
    built = {}
    for name in ARCHS:
        arch = load_arch(name)
        probes = choose_probes(SPACE)
        probes += register_probes(SPACE, probes)
        compiled = [(p, compile_config(p, arch)) for p in probes]
        config, facts = max(compiled, key=lambda cf: (distinct(cf[0]), compiled.index(cf)))
        tensors = read_live_tensors(facts["ttgir"], config.constexprs)
        observed = [(p.constexprs, p.num_warps, f["registers"], f["spill_bytes"]) for p, f in compiled]
        model = fit(tensors, observed, arch)
        assert model is not None
        built[name] = (arch, model)
    return built


def test_live_tensors_read_from_ttgir(models):
    """The peak holds the two loop-carried accumulators and the loaded tile, as formulas of the constexprs."""
    _, model = models["sm_90"]
    terms = {t.describe() for t in model.tensors.terms}
    assert "ROWS x BLOCK_N (1 words)" in terms
    values = {"ROWS": 4, "BLOCK_N": 1024}
    assert model.tensors.largest_tile(values, 128) == 32
    assert model.tensors.demand(values, 128) >= 3 * 32  # acc, acc_sq, x (and x * x) at the loop's peak


def test_register_limit_follows_num_warps():
    arch = load_arch("sm_90")
    assert [register_limit(arch, w) for w in (1, 4, 8, 16)] == [255, 255, 255, 128]
    assert register_limit(arch, 4, maxnreg=128) == 128


@pytest.mark.parametrize("arch_name", ARCHS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.sampled_from(SPACE))
def test_prediction_matches_compile(models, arch_name, config):
    arch, model = models[arch_name]
    predicted = model.predict(config.constexprs, config.num_warps)
    compiled = compile_config(config, arch)
    if compiled["spill_bytes"] == 0:
        assert abs(predicted["registers_predicted"] - compiled["registers"]) <= 32, (config, predicted, compiled["registers"])
    margin = predicted["register_demand"] - predicted["register_limit"]
    if margin >= 40:
        assert compiled["spill_bytes"] > 0, (config, predicted)
    if margin <= -40:
        assert compiled["spill_bytes"] == 0, (config, predicted)
