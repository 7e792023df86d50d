"""``kernelrules lint --pinned``: a table checked against its kernel (LNT007 stale, LNT008 never matches,
LNT009 config rejected), findings at the entry's line of the table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelrules.lint.findings import LINT_CODES
from kernelrules.pinned import source_sha256

REPO = Path(__file__).resolve().parents[2]


def entry(key, config=None, sha=None, dtypes=None):
    return {"arch": "ampere", "key": key, "dtypes": dtypes or {"a_ptr": "float16", "b_ptr": "float16", "c_ptr": "float16"},
            "config": config or {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_SIZE_M": 8, "num_warps": 4,
                                 "num_stages": 2},
            "source_sha256": sha}


def test_codes_are_registered():
    assert [(LINT_CODES[c].name, LINT_CODES[c].severity) for c in ("LNT007", "LNT008", "LNT009")] == [
        ("pinned-stale", "warning"), ("pinned-never-matches", "error"), ("pinned-config-rejected", "error")]


def test_lint_pinned_reports_stale_unmatchable_and_rejected_entries(run_cli, tmp_path):
    shutil.copy(REPO / "examples" / "matmul.py", tmp_path / "mm.py")
    current = source_sha256(tmp_path / "mm.py", "matmul_kernel")
    good = entry({"M": 32, "N": 32, "K": 32}, sha=current)
    stale = entry({"M": 64, "N": 64, "K": 64}, sha="0" * 64)
    unmatchable = entry({"M": 32, "N": 32}, sha=current, dtypes={"a_ptr": "float16", "x": "float16"})
    rejected = entry({"M": 128, "N": 128, "K": 128}, sha=current,
                     config={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_SIZE_M": 8, "num_warps": 6})
    unknown = entry({"M": 256, "N": 256, "K": 256}, sha=current, config={"BLOCK_Q": 8, "num_warps": 4})
    entries = [good, stale, unmatchable, rejected, unknown]
    for e in entries:
        if e["source_sha256"] is None:
            del e["source_sha256"]
    (tmp_path / "mm.pinned.json").write_text(json.dumps(
        {"format": "kernelrules-pinned", "version": 1, "kernel": {"name": "matmul_kernel", "key": ["M", "N", "K"]},
         "entries": entries}, indent=2))
    done = run_cli("lint", "mm.py", "--arch", "ampere", "--stage", "config", "--pinned", "mm.pinned.json",
                   "--select", "LNT", "--format", "json", "--cache-dir", "cache")
    assert done.returncode == 1, done.stderr
    findings = [f for f in json.loads(done.stdout)["findings"] if f["path"] == "mm.pinned.json"]
    lines = (tmp_path / "mm.pinned.json").read_text().splitlines()
    got = [(f["code"], f["message"].split(":")[0]) for f in findings]
    assert got == [("LNT007", "sm_80 M=64, N=64, K=64 (a_ptr=float16, b_ptr=float16, c_ptr=float16)"),
                   ("LNT008", "sm_80 M=32, N=32 (a_ptr=float16, x=float16)"),
                   ("LNT009", "sm_80 M=128, N=128, K=128 (a_ptr=float16, b_ptr=float16, c_ptr=float16)"),
                   ("LNT009", "sm_80 M=256, N=256, K=256 (a_ptr=float16, b_ptr=float16, c_ptr=float16)")]
    assert all(lines[f["line"] - 1].strip() == "{" for f in findings)  # each at its entry's line
    assert "CFG002" in findings[2]["message"] and "num_warps=4" in findings[2]["fix"]
    assert "sets BLOCK_Q, not a constexpr parameter" in findings[3]["message"]
    assert "key names ['M', 'N'] are not the key arguments ['K', 'M', 'N']" in findings[1]["message"]


def test_lint_pinned_table_of_another_kernel_is_a_usage_error(run_cli, tmp_path):
    shutil.copy(REPO / "examples" / "matmul.py", tmp_path / "mm.py")
    (tmp_path / "t.json").write_text(json.dumps({"format": "kernelrules-pinned", "version": 1,
                                                 "kernel": {"name": "nope"}, "entries": []}))
    done = run_cli("lint", "mm.py", "--arch", "ampere", "--stage", "config", "--pinned", "t.json", "--cache-dir", "c")
    assert done.returncode == 2 and "t.json: the table pins kernel 'nope', which is not among the linted kernels" \
        in done.stderr and "Traceback" not in done.stderr
