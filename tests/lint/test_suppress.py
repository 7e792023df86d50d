"""Suppression comments: parsing with tokenize, matching by code and prefix, the three anchor lines."""

from __future__ import annotations

from kernelrules.lint.findings import Finding
from kernelrules.lint.suppress import KernelAnchors, apply_suppressions, parse_entries, parse_suppressions

SOURCE = '''\
import triton

CONFIGS = [
    triton.Config({"BLOCK": 128}, num_stages=5),  # kernelrules: ignore[MEM001]
    triton.Config({"BLOCK": 64}, num_stages=2),
]

@triton.autotune(configs=CONFIGS, key=["n"])  # kernelrules: ignore[REG]
@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):  # kernelrules: ignore[OCC001, DOT002]
    msg = "# kernelrules: ignore[PIP001]"
    tl.store(x_ptr, 1)  # KernelRules: Ignore[ pip001 ,, ]
    tl.load(x_ptr)  # kernelrules: ignore[ALL]
    tl.load(x_ptr)  # kernelrules: ignore
'''

BIG = {"BLOCK": 128, "num_stages": 5}
SMALL = {"BLOCK": 64, "num_stages": 2}


def finding(code: str, line: int, config: dict | None = None, kernel: str | None = "kernel") -> Finding:
    return Finding(path="k.py", line=line, column=1, code=code, name="x", severity="error", message="m",
                   kernel=kernel, arch="sm_89", config=config)


def anchors() -> dict:
    kernel = KernelAnchors(def_lines=(8, 9, 10))
    kernel.add_config(BIG, 4)
    kernel.add_config(SMALL, 5)
    return {("k.py", "kernel"): kernel}


def test_parse_finds_comments_only():
    found = parse_suppressions(SOURCE, "k.py")
    assert {line: s.entries for line, s in found.items()} == {
        4: ("MEM001",), 8: ("REG",), 10: ("OCC001", "DOT002"), 12: ("PIP001",), 13: ("ALL",),
    }
    assert 11 not in found  # the comment-like text in a string is not a suppression
    assert 14 not in found  # a bare ignore names no codes


def test_parse_entries_normalises():
    assert parse_entries(" mem001, ,REG,mem001 ") == ("MEM001", "REG")


def test_parse_survives_a_file_that_does_not_tokenize():
    broken = "x = 1  # kernelrules: ignore[MEM001]\ny = (\n"
    assert list(parse_suppressions(broken)) == [1]


def test_suppressed_on_its_own_line_by_code_and_case_insensitively():
    marked, _ = apply_suppressions([finding("PIP001", 12), finding("PIP002", 12)], {"k.py": SOURCE})
    assert [f.suppressed for f in marked] == [True, False]


def test_suppressed_by_all():
    marked, unused = apply_suppressions([finding("ANY999", 13)], {"k.py": SOURCE})
    assert marked[0].suppressed
    assert ("k.py", 13, "ALL") not in unused


def test_suppressed_by_prefix_on_a_decorator_line():
    findings = [finding("REG002", 30), finding("MEM002", 30)]
    marked, _ = apply_suppressions(findings, {"k.py": SOURCE}, anchors())
    assert [f.suppressed for f in marked] == [True, False]


def test_suppressed_on_the_def_line():
    marked, _ = apply_suppressions([finding("OCC001", 40)], {"k.py": SOURCE}, anchors())
    assert marked[0].suppressed


def test_suppressed_on_the_config_line_only_for_that_config():
    findings = [finding("MEM001", 40, BIG), finding("MEM001", 40, SMALL), finding("MEM001", 40, None)]
    marked, _ = apply_suppressions(findings, {"k.py": SOURCE}, anchors())
    assert [f.suppressed for f in marked] == [True, False, False]


def test_anchor_lines_need_the_kernel():
    other = finding("OCC001", 40, kernel="other")
    marked, _ = apply_suppressions([other], {"k.py": SOURCE}, anchors())
    assert not marked[0].suppressed


def test_unused_suppressions_are_reported_per_entry():
    findings = [finding("MEM001", 40, BIG), finding("OCC001", 40)]
    marked, unused = apply_suppressions(findings, {"k.py": SOURCE}, anchors())
    assert all(f.suppressed for f in marked)
    assert unused == [("k.py", 8, "REG"), ("k.py", 10, "DOT002"), ("k.py", 12, "PIP001"), ("k.py", 13, "ALL")]


def test_findings_in_files_without_source_are_kept_and_originals_untouched():
    original = finding("MEM001", 4)
    elsewhere = Finding("other.py", 4, 1, "MEM001", "x", "error", "m")
    marked, _ = apply_suppressions([original, elsewhere], {"k.py": SOURCE})
    assert marked[0].suppressed and not original.suppressed
    assert not marked[1].suppressed


def test_unused_suppression_findings_cannot_be_suppressed():
    marked, _ = apply_suppressions([finding("LNT003", 13)], {"k.py": SOURCE})
    assert not marked[0].suppressed
