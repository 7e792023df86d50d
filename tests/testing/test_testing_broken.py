"""A deliberately broken copy of the shared-memory rule is caught by the property helper.

MEM001's condition is copied into a rule of our own whose shared-memory estimate is off
by one pipeline stage, loaded with kernelrules.load_rules from a temporary directory as
a user's rule would be, and checked with the same property as MEM001 on sm_89 (one
seed, a six-config corner of the example space: deterministic and a few compiles).
Counting one stage too many rejects configs that fit (a false rejection); one too few
lets configs through that do not (a miss). The unbroken rule passes the same check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kernelrules.judge.ruleset import load_rules
from kernelrules.testing import BUILTIN_LIMITS, PropertyFailure

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "examples" / "matmul.space.yaml"
CORNER = {"BLOCK_M": [64, 128], "BLOCK_N": [128], "BLOCK_K": [64], "num_stages": [3, 4, 5], "num_warps": [4]}
SPEC = BUILTIN_LIMITS["MEM001"]

#: sm_8x allocates num_stages - 1 buffers; these count one more or one fewer.
ONE_STAGE_TOO_MANY = ("facts.shared_bytes * config.num_stages // max(1, config.num_stages - 1)"
                      " > arch.shared_memory_per_block_optin")
ONE_STAGE_TOO_FEW = ("facts.shared_bytes * max(1, config.num_stages - 2) // max(1, config.num_stages - 1)"
                     " > arch.shared_memory_per_block_optin")


def broken_copy(directory: Path, condition: str):
    """MEM001 as a user's rule MEM901 with another condition, loaded like any user's rule."""
    data = yaml.safe_load((REPO / "rules" / "MEM001.yaml").read_text())
    data.update(code="MEM901", name="shared-memory-over-limit-broken", condition=condition)
    data.pop("aliases", None)
    (directory / "MEM901.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    rules = load_rules([directory])
    return rules.get("MEM901"), rules


def check(kernelrules_property, rule, rules) -> None:
    kernelrules_property(rule, MATMUL, rules=rules, limit=SPEC.limit, exact=SPEC.exact, may_break=SPEC.may_break,
                         configs=CORNER, max_examples=10, seed=5).check()


@pytest.mark.kernelrules(archs=["sm_89"])
def test_one_stage_too_many_is_a_false_rejection(kernelrules_property, tmp_path):
    rule, rules = broken_copy(tmp_path, ONE_STAGE_TOO_MANY)
    with pytest.raises(PropertyFailure) as info:
        check(kernelrules_property, rule, rules)
    obs = info.value.observation
    assert obs.fired and obs.broken is False
    assert obs.compiled["shared_bytes"] <= 101376 < obs.compiled["shared_bytes"] * obs.config.num_stages // (
        obs.config.num_stages - 1)
    text = str(info.value)
    assert "MEM901 fired at the config stage, but the compiled facts do not break the limit" in text
    assert "BLOCK_N=128" in text and "predicted: {" in text and "compiled:  {" in text and "'shared_bytes'" in text


@pytest.mark.kernelrules(archs=["sm_89"])
def test_one_stage_too_few_is_a_miss(kernelrules_property, tmp_path):
    rule, rules = broken_copy(tmp_path, ONE_STAGE_TOO_FEW)
    with pytest.raises(PropertyFailure, match="break the limit .* but MEM901 does not fire on them") as info:
        check(kernelrules_property, rule, rules)
    obs = info.value.observation
    assert obs.broken and not obs.fired and not obs.fired_compiled and obs.may_break


@pytest.mark.kernelrules(archs=["sm_89"])
def test_the_unbroken_copy_passes_the_same_check(kernelrules_property, tmp_path):
    rule, rules = broken_copy(tmp_path, "facts.shared_bytes > arch.shared_memory_per_block_optin")
    check(kernelrules_property, rule, rules)
