"""The engine: verdicts, deferral, repair search and the Python API."""

from __future__ import annotations

import textwrap

import pytest
import triton
from hypothesis import given, settings
from hypothesis import strategies as st

import kernelrules
from kernelrules.arch import load_arch
from kernelrules.config import KernelConfig
from kernelrules.judge.engine import Engine
from kernelrules.judge.ruleset import RuleSet, builtin_rules, load_rule_file


def codes(verdict):
    return [d.code for d in verdict.diagnostics]


def test_waves_per_eu_on_hopper_is_rejected_and_repaired():
    verdict = kernelrules.check({"waves_per_eu": 2, "num_warps": 8}, "hopper")
    assert verdict.verdict == "reject"
    assert codes(verdict) == ["CFG004"]
    assert "waves_per_eu" in verdict.diagnostics[0].message
    assert verdict.repair.to_dict() == {"num_warps": 8}


def test_non_power_of_two_warps_rejected_and_sane_config_passes():
    assert codes(kernelrules.check({"num_warps": 3}, "hopper")) == ["CFG002"]
    sane = kernelrules.check(triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3), "hopper")
    assert sane.verdict == "pass" and sane.diagnostics == [] and sane.repair is None


def test_repair_combines_edits_from_several_rules():
    arch = load_arch("ada")
    config = KernelConfig.from_dict({"BLOCK_M": 96, "num_warps": 6, "num_ctas": 2, "kpack": 2})
    verdict = Engine().check(config, arch)
    assert set(codes(verdict)) == {"CFG001", "CFG002", "CFG004", "CFG005"}
    assert verdict.repair.to_dict() == {"BLOCK_M": 64, "num_warps": 4, "num_ctas": 1}
    assert len(verdict.repair_steps) == 4
    assert Engine().judge(verdict.repair, arch).verdict == "pass"


FACT_RULE = """\
code: TST100
name: shared-over-limit-test
summary: test
severity: error
stage: compiled
applies_to: [all]
condition: facts.shared_bytes > arch.shared_memory_per_block_optin
message: "{facts.shared_bytes} bytes"
repairs:
  - description: fewer stages
    when: config.num_stages > 1
    set: {num_stages: "value - 1"}
rationale: r
references: [r]
examples:
  bad: [{arch: ada, config: {}, facts: {shared_bytes: 200000}}]
  good: [{arch: ada, config: {}, facts: {shared_bytes: 1}}]
"""


@pytest.fixture
def fact_engine(tmp_path):
    path = tmp_path / "TST100.yaml"
    path.write_text(textwrap.dedent(FACT_RULE))
    return Engine(RuleSet([load_rule_file(path)]))


def test_missing_fact_defers_instead_of_crashing(fact_engine):
    arch = load_arch("ada")
    verdict = fact_engine.judge(KernelConfig.from_dict({"num_warps": 4}), arch)
    assert verdict.verdict == "pass" and "TST100" in verdict.deferred
    fired = fact_engine.judge(KernelConfig.from_dict({}), arch, facts={"shared_bytes": 101377})
    assert codes(fired) == ["TST100"] and fired.diagnostics[0].message == "101377 bytes"
    assert fact_engine.judge(KernelConfig.from_dict({}), arch, facts={"shared_bytes": 101376}).verdict == "pass"


def test_missing_config_key_means_rule_does_not_apply(tmp_path):
    path = tmp_path / "TST101.yaml"
    path.write_text(textwrap.dedent(FACT_RULE).replace("TST100", "TST101").replace(
        "facts.shared_bytes > arch.shared_memory_per_block_optin", "config.BLOCK_K < 16"))
    engine = Engine(RuleSet([load_rule_file(path)]))
    arch = load_arch("hopper")
    assert engine.judge(KernelConfig.from_dict({"BLOCK_M": 64}), arch).diagnostics == []
    assert engine.judge(KernelConfig.from_dict({"BLOCK_M": 64}), arch).deferred == []
    assert codes(engine.judge(KernelConfig.from_dict({"BLOCK_K": 8}), arch)) == ["TST101"]


def test_evaluation_error_is_a_warning_not_a_crash(tmp_path):
    path = tmp_path / "TST102.yaml"
    path.write_text(textwrap.dedent(FACT_RULE).replace("TST100", "TST102").replace(
        "facts.shared_bytes > arch.shared_memory_per_block_optin", "config.BLOCK_K < 16"))
    engine = Engine(RuleSet([load_rule_file(path)]))
    verdict = engine.judge(KernelConfig.from_dict({"BLOCK_K": "sixteen"}), load_arch("hopper"))
    assert [d.severity for d in verdict.diagnostics] == ["warning"]
    assert "could not judge" in verdict.diagnostics[0].message


def test_repair_search_uses_ordered_repairs(fact_engine):
    # The fact does not change with the config here, so no repair can help: none is reported.
    arch = load_arch("ada")
    verdict = fact_engine.check(KernelConfig.from_dict({"num_stages": 4}), arch, facts={"shared_bytes": 10**6})
    assert verdict.rejected and verdict.repair is None


CONFIG_VALUES = st.fixed_dictionaries(
    {
        "BLOCK_M": st.integers(0, 300),
        "BLOCK_N": st.sampled_from([16, 32, 48, 64, 128, 256]),
        "num_warps": st.integers(0, 70),
        "num_ctas": st.integers(1, 4),
    },
    optional={"waves_per_eu": st.integers(0, 4), "kpack": st.just(2)},
)


@settings(max_examples=150, deadline=None)
@given(CONFIG_VALUES, st.sampled_from(["sm_80", "sm_86", "ada", "hopper"]))
def test_repair_always_passes_and_judge_many_agrees(values, arch_name):
    arch = load_arch(arch_name)
    engine = Engine()
    config = KernelConfig.from_dict(values)
    verdict = engine.check(config, arch)
    assert [v.verdict for v in engine.judge_many([config], arch)] == [verdict.verdict]
    if verdict.rejected:
        assert verdict.repair is not None, values
        assert engine.judge(verdict.repair, arch).verdict == "pass"
    else:
        assert verdict.repair is None


def test_kernel_dtypes_reach_the_fp8_rules():
    assert codes(kernelrules.check({"BLOCK_M": 64}, "sm_80", kernel={"dtypes": ["fp8e4nv"]})) == ["DTY001"]
    assert codes(kernelrules.check({"BLOCK_M": 64}, "ada", kernel={"dtypes": ["fp8e4nv"]})) == []
