"""GPU families and MMA paths come from the architecture profiles, not from code.

A rule may select any profile's family (``applies_to: [blackwell-rtx]``), a new family
is one profile file, and the MMA path choices read the profile's ``wgmma`` and
``tcgen05`` features.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kernelrules import arch as arch_module
from kernelrules.arch import list_archs, list_skus, load_arch
from kernelrules.config import KernelConfig
from kernelrules.errors import RuleFileError
from kernelrules.predict.resource_model import learn, read_probe
from kernelrules.judge.ruleset import architecture_families, rule_from_document
from kernelrules.yamlio import load_text

IR = Path(__file__).resolve().parents[1] / "fixtures" / "ir"

RULE = """\
code: TST001
name: test-rule
summary: A test rule.
severity: warning
stage: config
applies_to: [{selector}]
condition: config.num_warps > 4
message: "too many warps"
rationale: Because.
references: [somewhere]
examples:
  bad: [{{arch: ada, config: {{num_warps: 8}}}}]
  good: [{{arch: ada, config: {{num_warps: 4}}}}]
"""


def rule_for(selector: str):
    return rule_from_document(load_text(RULE.format(selector=selector), "TST001.yaml", RuleFileError))


def test_every_profile_family_is_a_selector():
    archs = [*list_archs(), *list_skus()]
    assert "blackwell-rtx" in architecture_families()
    for family in architecture_families():
        rule = rule_for(family)
        assert {a.name for a in archs if rule.applies(a)} == {a.name for a in archs if a.family == family}


def test_a_new_family_is_one_profile_file(monkeypatch):
    """A profile of a new family (here a copy of sm_120 as family ``testfam``) is selectable by a rule."""
    builtin = arch_module._builtin_sources()
    rtx = next(s for s in builtin if s.origin.endswith("blackwell_rtx.yaml"))
    text = rtx.text.split("    skus:", 1)[0]
    text = (text.replace("family: blackwell-rtx", "family: testfam").replace("  sm_120:", "  sm_121:")
            .replace('compute_capability: "12.0"', 'compute_capability: "12.1"')
            .replace("aliases: [rtx-blackwell, gb202, blackwell-geforce]", "aliases: []"))
    extra = dataclasses.replace(rtx, origin=rtx.origin.replace("blackwell_rtx", "testfam"), text=text)
    monkeypatch.setattr(arch_module, "_builtin_sources", lambda: (*builtin, extra))
    arch_module._registry.cache_clear()
    try:
        new = load_arch("sm_121")
        assert new.family == "testfam" and "testfam" in architecture_families()
        rule = rule_for("testfam")
        assert rule.applies(new) and not rule.applies(load_arch("sm_120"))
    finally:
        monkeypatch.undo()
        arch_module._registry.cache_clear()
    with pytest.raises(RuleFileError):
        rule_for("testfam")


def test_an_unknown_family_is_a_located_error():
    with pytest.raises(RuleFileError) as info:
        rule_for("pascal")
    error = info.value
    assert error.line == 6 and "applies_to.0" in error.message and "'pascal'" in error.message
    assert "blackwell-rtx" in error.hint


@pytest.mark.parametrize("selector", ["sm_90", "sm_80+", "all", "nvidia", "amd"])
def test_other_selectors_still_load(selector):
    assert rule_for(selector).applies_to == (selector,)


@pytest.mark.parametrize("target", [*list_archs(), *list_skus()], ids=lambda a: a.label)
def test_the_wgmma_feature_is_the_capability_range_it_replaces(target):
    """The old code chose wgmma by ``90 <= sm < 100``: every shipped profile gives the same answer."""
    old = target.vendor == "nvidia" and 90 <= target.sm < 100
    assert bool(target.features.get("wgmma")) is old


@pytest.mark.parametrize("target", list_archs(), ids=lambda a: a.name)
def test_resource_model_mma_path_follows_the_profile_features(target):
    small = KernelConfig.from_dict({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3})
    model = learn([read_probe(small, (IR / "matmul_m16_sm90.ttgir").read_text())], target)
    large = KernelConfig.from_dict({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3})
    features = target.features
    expected = ("mfma" if target.vendor == "amd" else "tcgen05" if features.get("tcgen05")
                else "wgmma" if features.get("wgmma") else "mma_sync")
    assert model.mma_path(large.constexprs, 4) == expected
    assert model.mma_path(small.constexprs, 4) == ("mfma" if target.vendor == "amd" else "mma_sync")
