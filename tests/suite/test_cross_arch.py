"""benchmarks/suite_cross_arch.py's arithmetic: false rejects, misses and caught doomed configs per
architecture, and the committed results give the table docs/validation.md quotes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import suite_cross_arch  # noqa: E402


def _row(arch: str, config_stage: str, doomed: bool, compile: str = "ok", codes: tuple = ("MEM001",),
         spill: int = 0) -> dict:
    return {"arch": arch, "family": "gemm", "config_stage": config_stage, "doomed": doomed, "compile": compile,
            "config_codes": list(codes) if config_stage == "reject" else [], "compiled_spill_bytes": spill}


def test_summary_counts_false_rejects_misses_confirmed_spills_and_timeouts():
    rows = [_row("sm_89", "reject", True), _row("sm_89", "reject", False), _row("sm_89", "pass", True),
            _row("sm_89", "pass", False), _row("sm_89", "reject", True, compile="timeout"),
            _row("sm_89", "reject", False, codes=("REG005",), spill=400),  # a predicted heavy spill, confirmed
            _row("sm_89", "reject", False, codes=("REG005",), spill=100),  # spills less than claimed: false
            _row("sm_80", "pass", True, compile="timeout")]
    got = suite_cross_arch.summary(rows)
    assert got["sm_89"] == {"rejected": 5, "kept": 2, "false_rejects": 2, "spill_confirmed": 1, "misses": 1,
                            "doomed": 3, "doomed_caught": 2, "timeouts": 1, "timeouts_caught": 1}
    assert got["sm_80"] == {"kept": 1, "misses": 1, "doomed": 1, "doomed_caught": 0, "timeouts": 1,
                            "timeouts_caught": 0}


def test_the_table_reads_the_summary():
    out = {"rows": [_row("sm_89", "reject", True), _row("sm_89", "reject", False), _row("sm_89", "pass", True)],
           "shape": "large", "kernelrules_commit": "abc1234", "triton": "3.6.0", "machine": "x86_64, no GPU",
           "date": "2026-12-02", "seconds": 5}
    lines = suite_cross_arch.table(out)
    assert lines[2] == "| sm_89 | 2 | 1 | 0 | 1 | 1 | 1 | 0 (0) |"
    assert "3 configs of 1 families" in lines[-1]


def test_the_committed_results_cover_every_family_and_architecture():
    results = suite_cross_arch.RESULTS
    out = json.loads(results.read_text())
    assert {r["family"] for r in out["rows"]} == set(suite_cross_arch.families())
    assert {r["arch"] for r in out["rows"]} == set(suite_cross_arch.ARCHS)
    for r in out["rows"]:  # doomed is what the compiled verdict and the compile say, nothing else
        assert r["doomed"] == (r["compiled"] == "reject" or r["compile"] == "timeout")
