"""Attention's chained dots on mma.sync: the softmax output ``P`` (the first dot's accumulator,
converted into the second dot's A operand) takes shared memory only when Triton lays the warps
along the second dot's N (``BLOCK_M < HEAD_DIM``); with the warps along M it converts in
registers. The model learns the ``P`` buffer from probes that need it (small ``BLOCK_M``) and
predicts it per config: the suite's flash-attention kernel, CPU cross-compiles on sm_80, sm_89
and sm_120, against ``metadata.shared`` (until this, the 128x128 and 256x64 tiles were predicted
32 KiB over the compile, a false MEM001 on sm_86, sm_89 and sm_120)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from kernelrules.analyzers.irgraph import IrGraph
from kernelrules.arch import load_arch
from kernelrules.compile.compilejob import compile_job
from kernelrules.compile.target import KernelTarget
from kernelrules.config import KernelConfig
from kernelrules.predict.resource_model import AllocTerm, Dim, choose_probes, learn, probe_from_facts, read_probe
from kernelrules.space import load_space

SPACE_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "suite" / "flash_attn" / "large.tune.yaml"


def attention(bm: int, bn: int, warps: int, stages: int, head_dim: int = 128) -> KernelConfig:
    return KernelConfig(constexprs={"HEAD_DIM": head_dim, "CAUSAL": False, "BLOCK_M": bm, "BLOCK_N": bn},
                        num_warps=warps, num_stages=stages)


@pytest.fixture(scope="module")
def target() -> KernelTarget:
    return KernelTarget.from_space(load_space(SPACE_FILE))


def compile_config(target: KernelTarget, config: KernelConfig, arch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compile_job(target.job(config, arch, 120))
    assert result.ok, result.message
    return result


def learned(target: KernelTarget, arch_name: str):
    arch = load_arch(arch_name)
    space = list(load_space(SPACE_FILE).configs())
    probes = []
    for config in choose_probes(space):
        result = compile_config(target, config, arch)
        probes.append(probe_from_facts(config, result.facts) or read_probe(config, result.asm["ttgir"]))
    return arch, learn(probes, arch)


def p_buffers(ttgir: str) -> list:
    return [b for b in IrGraph.from_text(ttgir).shared_layouts() if b.source == "nvidia_mma"]


@pytest.mark.parametrize("arch_name", ["sm_89", pytest.param("sm_80", marks=pytest.mark.slow),
                                       pytest.param("sm_120", marks=pytest.mark.slow)])
def test_p_tile_predicted_only_when_the_warps_split_it(target, arch_name):
    arch, model = learned(target, arch_name)
    converted = [t for t in model.paths["mma_sync"] if t.converts is not None]
    assert converted and all(t.converts == 0 for t in converted)  # P, as the second dot's A operand
    # the two configs the cross-architecture check rejected falsely, then two that do need P
    for config, needs_p in ((attention(128, 128, 4, 2), False), (attention(256, 64, 4, 1), False),
                            (attention(64, 64, 8, 3), True), (attention(32, 128, 4, 2), True)):
        result = compile_config(target, config, arch)
        assert bool(p_buffers(result.asm["ttgir"])) == needs_p, config
        predicted = model.predict(config)
        assert predicted["shared_bytes"] == result.metadata["shared"], (config, predicted, result.metadata["shared"])


def test_buffer_names_its_source_and_dot_operand(target):
    arch = load_arch("sm_89")
    result = compile_config(target, attention(32, 64, 4, 2), arch)
    found = p_buffers(result.asm["ttgir"])
    assert found and {b.dot_operand for b in found} == {0}
    assert all(b.shape == (32, 64) for b in found)
    by_name = {b["name"]: b for b in result.facts["shared_layouts"]}
    assert {by_name[b.op.result_names[0]]["source"] for b in found} == {"nvidia_mma"}
    empty = [b for b in IrGraph.from_text(result.asm["ttgir"]).shared_layouts() if not b.op.operands]
    assert empty and all(b.source == "" and b.dot_operand is None for b in empty)  # K/V pipeline buffers


def test_facts_without_buffer_sources_fall_back_to_the_ttgir():
    """A compile cached before buffers named their source: the probe must be read from the TTGIR."""
    facts = {"dots": [], "shared_layouts": [{"buffer_shape": [32, 64], "num_buffers": 1, "dtype": "f16", "bytes": 4096}]}
    assert probe_from_facts(attention(32, 64, 4, 2), facts) is None
    facts["shared_layouts"][0]["source"] = ""
    assert probe_from_facts(attention(32, 64, 4, 2), facts) is not None


@pytest.mark.parametrize("m,n,warps,operand,needed", [
    (128, 128, 4, 0, False), (64, 128, 4, 0, True), (64, 128, 1, 0, False),
    (128, 64, 8, 1, True), (64, 128, 8, 1, False)])
def test_conversion_needed_follows_the_chained_warp_layout(m, n, warps, operand, needed):
    """Triton's warpsPerTileV2 for chained dots: all warps along M when the last dot has M >= N."""
    from kernelrules.predict.resource_model import DotTerm, ResourceModel

    dot = DotTerm(Dim("BLOCK_M"), Dim("HEAD_DIM"), Dim("BLOCK_N"), "f16", 32, "mma")
    term = AllocTerm((Dim("BLOCK_M"), Dim("BLOCK_N")), 16, None, 1, converts=operand)
    model = ResourceModel(arch="sm_89", wgmma=False, dots=(dot, dot), paths={"mma_sync": (term,)})
    values = {"BLOCK_M": m, "HEAD_DIM": n, "BLOCK_N": 64}
    assert model.conversion_needed(term, "mma_sync", values, warps) is needed
    assert model.conversion_needed(term, "wgmma", values, warps) is True  # other paths keep what was probed
    assert model.buffers_bytes("mma_sync", values, 1, warps)[0] == (m * 64 * 2 if needed else 0)
