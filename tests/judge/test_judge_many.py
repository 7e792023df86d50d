"""judge_many on a large batch (the conditions bound to the architecture's values) gives, config by
config, the verdict ``Engine.judge`` gives: diagnostics with their messages, deferred rules, in order."""

from __future__ import annotations

import itertools
import textwrap

import pytest

from kernelrules.arch import load_arch
from kernelrules.config import KernelConfig
from kernelrules.judge.engine import BIND_BATCH, Engine
from kernelrules.judge.ruleset import RuleSet, builtin_rules, load_rule_file

ODD_RULE = """\
code: TST200
name: odd-test
summary: test
severity: warning
stage: config
applies_to: [all]
condition: facts.shared_bytes // config.BLOCK_K > arch.shared_memory_per_block_optin // 64
message: "{facts.shared_bytes} bytes over {config.BLOCK_K}"
repairs: []
rationale: r
references: [r]
examples:
  bad: [{arch: ada, config: {BLOCK_K: 1}, facts: {shared_bytes: 200000}}]
  good: [{arch: ada, config: {BLOCK_K: 64}, facts: {shared_bytes: 1}}]
"""


def batch() -> list[KernelConfig]:
    """Configs with odd values too: non-powers of two, strings, zero, AMD options, missing keys."""
    out = []
    for bm, bk, warps, stages, extra in itertools.product(
            [16, 48, 64, 256], [0, 32, "x", None], [1, 3, 4, 64], [1, 3], [{}, {"num_ctas": 2}, {"kpack": 2}]):
        values = {"BLOCK_M": bm, "BLOCK_N": 64, "num_warps": warps, "num_stages": stages, **extra}
        if bk is not None:
            values["BLOCK_K"] = bk
        out.append(KernelConfig.from_dict(values))
    return out


def facts_of(config: KernelConfig) -> dict:
    """Predicted-like facts that vary with the config, some missing or of the wrong type."""
    bm = config.constexprs["BLOCK_M"]
    if bm == 16:
        return {}
    facts = {"shared_bytes": bm * 1000, "dot_k": config.constexprs.get("BLOCK_K", 0), "dot_operand_bits": 16,
             "dot_count": 1, "mma_path": "wgmma" if bm >= 64 else "mma_sync", "dot_m": bm, "dot_n": 64,
             "accumulator_registers_per_thread": bm, "register_demand_per_thread": bm * 2, "origin": "predicted"}
    if bm == 48:
        facts["shared_bytes"] = "many"
    return facts


@pytest.mark.parametrize("arch_name", ["ada", "hopper", "gfx942"])
def test_judge_many_on_a_large_batch_agrees_with_judge(arch_name, tmp_path):
    path = tmp_path / "TST200.yaml"
    path.write_text(textwrap.dedent(ODD_RULE))
    engine = Engine(RuleSet([*builtin_rules(), load_rule_file(path)]))
    arch = load_arch(arch_name)
    configs = batch()
    assert len(configs) >= BIND_BATCH  # the bound conditions are used
    kernel = {"name": "k", "dtypes": ["fp16"]}
    many = engine.judge_many(configs, arch, kernel=kernel, facts_fn=facts_of)
    one = [engine.judge(c, arch, kernel=kernel, facts=facts_of(c)) for c in configs]
    assert [v.to_json() for v in many] == [v.to_json() for v in one]
    fired = {d.code for v in many for d in v.diagnostics}
    assert {"CFG001", "CFG002", "TST200"} <= fired  # the batch exercises firing rules and the odd rule's errors
    assert any(d.code == "TST200" and "could not judge" in d.message for v in many for d in v.diagnostics)
    assert any(v.deferred for v in many)
