"""Rule files: schema, expression checks, located errors, and every rule's bad/good examples."""

from __future__ import annotations

import textwrap

import pytest

from kernelrules.judge.engine import judge_examples
from kernelrules.errors import RuleFileError
from kernelrules.judge.ruleset import builtin_rules, load_rule_file, load_rules

RULES = list(builtin_rules())


def _example_cases():
    for rule in RULES:
        for kind in ("bad", "good"):
            for index in range(len(rule.examples[kind])):
                yield pytest.param(rule, kind, index, id=f"{rule.code}-{kind}-{index}")


@pytest.mark.parametrize("rule,kind,index", list(_example_cases()))
def test_rule_examples(rule, kind, index):
    """A rule fires on each of its bad examples and stays silent on each good one."""
    example, fired = judge_examples(rule, kind)[index]
    assert fired == (kind == "bad"), f"{rule.code} {kind} example {example}"


def test_builtin_rules_have_unique_codes_and_names():
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(codes) == len(set(codes)) and len(names) == len(set(names))
    assert len(RULES) >= 7
    for rule in RULES:
        assert rule.path.endswith(f"{rule.code}.yaml")


def test_rules_are_addressable_by_code_name_and_prefix():
    rules = builtin_rules()
    assert rules.get("cfg004").name == "amd-only-option-on-nvidia"
    assert rules.get("amd-only-option-on-nvidia").code == "CFG004"
    selected = rules.select(select=["CFG"], ignore=["CFG003"])
    assert {r.code for r in selected} == {r.code for r in RULES if r.code.startswith("CFG")} - {"CFG003"}
    assert len(rules.select(select=["ALL"])) == len(RULES)


GOOD_RULE = """\
code: TST001
name: test-rule
summary: A test rule.
severity: warning
stage: compiled
applies_to: [nvidia]
condition: facts.shared_bytes > arch.shared_memory_per_block_optin
message: "{facts.shared_bytes} > {arch.shared_memory_per_block_optin}"
repairs:
  - description: fewer stages
    when: config.num_stages > 1
    set: {num_stages: "value - 1"}
rationale: Because.
references: [somewhere]
examples:
  bad: [{arch: ada, config: {num_stages: 3}, facts: {shared_bytes: 200000}}]
  good: [{arch: ada, config: {num_stages: 3}, facts: {shared_bytes: 1000}}]
"""


def _write(tmp_path, text, name="TST001.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_user_rule_loads_and_judges(tmp_path):
    rule = load_rule_file(_write(tmp_path, GOOD_RULE))
    assert [fired for _, fired in judge_examples(rule, "bad")] == [True]
    assert [fired for _, fired in judge_examples(rule, "good")] == [False]
    assert len(load_rules([tmp_path])) == len(RULES) + 1


@pytest.mark.parametrize(
    "old,new,line,fragment",
    [
        ("severity: warning", "severity: fatal", 4, "severity"),
        ("rationale: Because.\n", "", None, "rationale"),
        ("stage: compiled", "stage: compiled\ncolour: red", None, "colour"),
        ("code: TST001", "code: TST002", 1, "does not match the file name"),
        ("condition: facts.shared_bytes >", "condition: facts.shard_bytes >", 7, "shard_bytes"),
        ("condition: facts.shared_bytes >", "condition: (facts.shared_bytes >", 7, ""),
        ("condition: facts.shared_bytes >", "condition: nosuch(1) + facts.shared_bytes >", 7, "nosuch"),
        ('message: "{facts.shared_bytes}', 'message: "{facts.shared_bytes', 8, "'{'"),
        ('set: {num_stages: "value - 1"}', 'set: {num_stages: "value - "}', 12, ""),
        ("examples:", "examples: [\n", None, "invalid YAML"),
    ],
)
def test_broken_rule_files_are_located_errors(tmp_path, old, new, line, fragment):
    assert old in GOOD_RULE
    path = _write(tmp_path, GOOD_RULE.replace(old, new, 1))
    with pytest.raises(RuleFileError) as info:
        load_rule_file(path)
    text = str(info.value)
    assert "TST001.yaml" in text
    assert "\n" not in text
    if line is not None:
        assert f"TST001.yaml:{line}:" in text, text
    assert fragment in text


def test_unknown_arch_field_is_rejected(tmp_path):
    path = _write(tmp_path, GOOD_RULE.replace("arch.shared_memory_per_block_optin", "arch.shared_memory_optin", 1))
    with pytest.raises(RuleFileError, match="shared_memory_optin"):
        load_rule_file(path)


def test_value_is_only_allowed_in_repairs(tmp_path):
    path = _write(tmp_path, GOOD_RULE.replace("condition: facts.shared_bytes >", "condition: value >", 1))
    with pytest.raises(RuleFileError, match="TST001.yaml:7"):
        load_rule_file(path)


def test_one_selector_for_rules_and_findings(tmp_path):
    from kernelrules.judge.ruleset import RuleSelection

    selection = RuleSelection(select=("MEM", "occupancy-low"), ignore=("MEM003",), extend_select=("cfg001",),
                              per_file_ignores={"tests/*.py": ("MEM",)}, root=tmp_path)
    assert selection.enabled("MEM001") and selection.enabled("CFG001")  # a prefix; extend-select, any case
    assert selection.enabled("OCC009", "occupancy-low") and not selection.enabled("OCC009", "other-name")
    assert not selection.enabled("MEM003") and not selection.enabled("REG001")
    assert not selection.enabled("MEM001", path=str(tmp_path / "tests" / "test_k.py"))  # relative to root
    assert not selection.enabled("MEM001", path="tests/test_k.py")  # as given
    assert selection.enabled("MEM001", path=str(tmp_path / "kernels" / "k.py"))
    assert RuleSelection().enabled("ANY001") and not RuleSelection(ignore=("ALL",)).enabled("ANY001")
    rules = builtin_rules()
    by_name = rules.select(select=[next(iter(rules)).name])
    assert [r.code for r in by_name] == [next(iter(rules)).code]
