"""kernelrules.testing: the strategies, limits as expressions, the built-in limits, the pytest plugin.

The properties of our own predicting rules are in test_testing_rules.py, the
deliberately broken rule in test_testing_broken.py.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from kernelrules.arch import list_archs, load_arch
from kernelrules.compile.compilejob import CompileJob, prepare
from kernelrules.config import KernelConfig
from kernelrules.judge.ruleset import builtin_rules
from kernelrules.space import load_space
from kernelrules.testing import (BUILTIN_LIMITS, Condition, RuleProperty, archs, configs, predicting_rules,
                                 signatures, sizes)

REPO = Path(__file__).resolve().parents[2]
MATMUL_SPACE = REPO / "examples" / "matmul.space.yaml"
MATMUL_VALUES = load_space(MATMUL_SPACE).space


# -- configs --------------------------------------------------------------------------


@settings(max_examples=30)
@given(config=configs(MATMUL_SPACE))
def test_configs_from_a_space_file_keep_its_fixed_values(config):
    values = config.to_dict()
    assert values["GROUP_SIZE_M"] == 8
    assert all(values[key] in choices for key, choices in MATMUL_VALUES.items())


@settings(max_examples=30)
@given(config=configs({"BLOCK": [16, 32, 64], "num_warps": [2, 4]}, fixed={"num_stages": 3},
                      constraints=["config.BLOCK * config.num_warps <= 128"]))
def test_configs_from_a_mapping_with_fixed_values_and_constraints(config):
    assert config.num_stages == 3 and config.num_warps in (2, 4)
    assert config.constexprs["BLOCK"] * config.num_warps <= 128


def test_configs_shrink_to_the_first_value_of_each_list():
    found = find(configs(load_space(MATMUL_SPACE)), lambda c: True)
    assert found.to_dict() == {"GROUP_SIZE_M": 8, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32,
                               "num_stages": 1, "num_warps": 2}


@pytest.mark.parametrize("space,options,message", [
    ({"BLOCK": [16], "num_warps": [4]}, {"fixed": {"BLOCK": 32}}, "both fixed and drawn"),
    ({"BLOCK": []}, {}, "no values to draw for BLOCK"),
    ({"BLOCK": [16]}, {"constraints": ["config.BLOCK < nosuch(2)"]}, "nosuch"),
])
def test_configs_reject_bad_spaces(space, options, message):
    with pytest.raises(ValueError, match=message):
        configs(space, **options)


# -- architectures ----------------------------------------------------------------------


def test_archs_default_to_every_builtin_profile():
    every = {a.name for a in list_archs()}
    for name in every:
        assert find(archs(), lambda a, name=name: a.name == name).name == name


@settings(max_examples=20)
@given(arch=archs("ada, hopper"))
def test_archs_by_name(arch):
    assert arch.name in ("sm_89", "sm_90")


def test_archs_need_a_name():
    with pytest.raises(ValueError, match="no architecture"):
        archs([])


# -- signatures ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [lambda v: v == 1, lambda v: v % 16 == 0, lambda v: v % 16 != 0 and v > 1])
def test_sizes_reach_one_multiples_of_16_and_others(kind):
    assert kind(find(sizes(), kind))


@settings(max_examples=25)
@given(signature=signatures(load_space(MATMUL_SPACE), dtypes=["fp16", "bf16", "fp32"], keep=["stride_ak"]))
def test_signatures_vary_float_pointers_together_and_sizes(signature):
    pointers = {signature[name] for name in ("a_ptr", "b_ptr", "c_ptr")}
    assert len(pointers) == 1 and pointers <= {"*fp16", "*bf16", "*fp32"}
    assert signature["stride_ak"] == 1
    assert all(isinstance(signature[name], int) and signature[name] >= 1 for name in ("M", "N", "K", "stride_am"))


def test_signatures_reach_both_specialisations_of_an_argument():
    strategy = signatures({"x_ptr": "*fp16", "idx_ptr": "*i32", "n": 4096, "eps": "fp32"}, same_dtype=False)
    assert find(strategy, lambda s: s["n"] == 1)["n"] == 1
    assert find(strategy, lambda s: s["n"] % 16 != 0)["n"] % 16
    drawn = find(strategy, lambda s: s["x_ptr"] == "*bf16")
    assert drawn["idx_ptr"] == "*i32" and drawn["eps"] == "fp32"  # integer pointers and scalar types stay


@settings(max_examples=8, deadline=None)
@given(signature=signatures(f"{REPO / 'examples' / 'matmul.py'}:matmul_kernel"))
def test_signatures_inferred_for_a_kernel_specialise(signature):
    assert set(signature) == {"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                              "stride_bn", "stride_cm", "stride_cn"}
    job = CompileJob(path=str(REPO / "examples" / "matmul.py"), kernel="matmul_kernel", signature=signature,
                     constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_SIZE_M": 8},
                     options={"num_warps": 4}, target=("cuda", 89, 32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepare(job)  # Triton's specialiser accepts every drawn signature


def test_signatures_reject_unknown_names():
    with pytest.raises(ValueError, match="nope"):
        signatures({"n": 16}, keep=["nope"])
    with pytest.raises(ValueError, match="no @triton.jit kernel"):
        signatures(f"{REPO / 'examples' / 'matmul.py'}:nope")


# -- limits -------------------------------------------------------------------------------


def test_a_limit_is_parsed_by_the_expression_language_never_evaluated_by_python():
    arch = load_arch("ada")
    limit = Condition("facts.shared_bytes > arch.shared_memory_per_block_optin")
    env = {"config": {}, "arch": arch.namespace(), "kernel": {}, "problem": {}}
    assert limit.holds({**env, "facts": {"shared_bytes": 101377}}, arch) is True
    assert limit.holds({**env, "facts": {"shared_bytes": 101376}}, arch) is False
    assert limit.holds({**env, "facts": {"compile_status": "timeout"}}, arch) is None  # undecided
    assert limit.fact_names == {"shared_bytes"}
    for bad, message in [("facts.shard_bytes > 1", "shard_bytes"), ("__import__('os')", "limit"),
                         ("arch.nosuch > 1", "nosuch")]:
        with pytest.raises(ValueError, match=message):
            Condition(bad)


def test_a_limit_may_be_a_callable_over_facts_and_arch():
    arch = load_arch("hopper")
    limit = Condition(lambda facts, arch: facts["shared_bytes"] > arch.limits["shared_memory_per_block_optin"])
    assert limit.holds({"facts": {"shared_bytes": 232449}}, arch) is True
    assert limit.holds({"facts": {}}, arch) is None


def test_builtin_limits_parse_and_name_builtin_rules():
    rules = builtin_rules()
    for code, spec in BUILTIN_LIMITS.items():
        assert rules.get(code) is not None, code
        Condition(spec.limit)
        if spec.may_break:
            Condition(spec.may_break)
        assert spec.exact == (spec.may_break is None), code


#: Every built-in architecture: a new profile is covered without editing this list.
EVERY_ARCH = [a.name for a in list_archs()]


def test_the_coverage_test_sees_the_new_targets():
    assert {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "gfx942"} <= set(EVERY_ARCH)


@pytest.mark.kernelrules(archs=EVERY_ARCH)
def test_builtin_limits_cover_exactly_the_predicting_rules(kernelrules_session, kernelrules_arch):
    space = load_space(MATMUL_SPACE)
    model = kernelrules_session.model(space, kernelrules_arch, builtin_rules())
    predicted = model.predict(KernelConfig.from_dict({"GROUP_SIZE_M": 8, "BLOCK_M": 64, "BLOCK_N": 64,
                                                      "BLOCK_K": 32, "num_warps": 4, "num_stages": 3}))
    found = {r.code for r in predicting_rules(builtin_rules(), predicted, kernelrules_arch)}
    expected = {code for code in BUILTIN_LIMITS if builtin_rules().get(code).applies(kernelrules_arch)}
    assert found == expected  # a new predicting rule needs its limit in BUILTIN_LIMITS (and docs/testing.md)


def test_a_property_refuses_rules_it_cannot_judge():
    with pytest.raises(ValueError, match="does not apply to sm_89"):
        RuleProperty("MMA002", MATMUL_SPACE, "ada", limit="facts.mma_path == 'mma_sync'")
    with pytest.raises(ValueError, match="no rule 'NOPE001'"):
        RuleProperty("NOPE001", MATMUL_SPACE, "ada", limit="facts.shared_bytes > 0")


@pytest.mark.kernelrules(archs=["ada"])
def test_undecided_configs_never_count_as_passes(kernelrules_property):
    from hypothesis.errors import Unsatisfiable

    prop = kernelrules_property("MEM001", MATMUL_SPACE, limit=lambda facts, arch: facts["no_such_fact"],
                                configs={"BLOCK_M": [64], "BLOCK_N": [64], "BLOCK_K": [32], "num_stages": [3],
                                         "num_warps": [4]}, max_examples=2, seed=1)
    with pytest.raises(Unsatisfiable):
        prop.check()
    assert prop.observations and {obs.broken for obs in prop.observations} == {None}
    with pytest.raises(ValueError, match="undecided"):
        prop.verify(prop.observations[0].config)


# -- the pytest plugin ----------------------------------------------------------------------

pytest_plugins = ["pytester"]

PLUGIN_TEST = '''
import pytest


@pytest.mark.kernelrules(archs=["ada"], max_examples=2)
def test_marker_archs_and_settings(kernelrules_property, kernelrules_arch):
    assert kernelrules_arch.name == "sm_89"
    prop = kernelrules_property("MEM001", {space!r}, limit="facts.shared_bytes > 0", seed=7)
    assert (prop.max_examples, prop.seed, prop.arch.name) == (2, 7, "sm_89")


def test_default_archs(kernelrules_arch):
    pass
'''


def documented_example() -> str:
    """The example test file of docs/testing.md, with its space path made absolute."""
    text = (REPO / "docs" / "testing.md").read_text()
    section = text[text.index("## An example test file"):]
    code = section[section.index("```python\n") + len("```python\n"):section.index("```\n", 10)]
    assert '"examples/matmul.space.yaml"' in code
    return code.replace('"examples/matmul.space.yaml"', repr(str(MATMUL_SPACE)))


def test_plugin_collects_one_test_per_architecture(pytester):
    pytester.makepyfile(PLUGIN_TEST.format(space=str(MATMUL_SPACE)))
    collected = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert [line.split("::")[-1] for line in collected.outlines if "::" in line] == [
        "test_marker_archs_and_settings[ada]", *[f"test_default_archs[{a}]" for a in ("sm_80", "sm_86", "sm_89", "sm_90")]]
    overridden = pytester.runpytest("--collect-only", "-q", "--kernelrules-arch", "hopper", "-p", "no:cacheprovider")
    assert sum("[hopper]" in line for line in overridden.outlines) == 2
    pytester.runpytest("-k", "marker", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_documented_example_test_file_passes(pytester, kernelrules_cache):
    pytester.makepyfile(test_documented=documented_example())
    result = pytester.runpytest("-v", "-p", "no:cacheprovider", "--kernelrules-cache-dir",
                                str(kernelrules_cache.directory))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_shared_memory_rule_predicts?ada? PASSED*",
                                 "*test_shared_memory_rule_predicts?hopper? PASSED*"])
