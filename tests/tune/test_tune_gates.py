"""Correctness gates: a fast wrong kernel is never the winner; a user's harness runs the kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("optuna")
pytest.importorskip("torch")

from kernelrules.tune import tune  # noqa: E402

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tune"


def test_wrong_configs_are_rejected_by_the_correctness_gates(tmp_path):
    result = tune(FIXTURES / "wrong_matmul.yaml", arch="ampere", interpret=True, storage=str(tmp_path / "w.db"),
                  stage="config", sampler="grid", cache_dir=str(tmp_path / "cache"), top_k=2, rounds=1)
    by_tile = {(r["config"]["BLOCK_M"], r["config"]["BLOCK_N"]): r for r in result.records}
    assert set(by_tile) == {(16, 16), (16, 32), (32, 16), (32, 32)}
    for tile in ((16, 32), (32, 32)):  # half the K loop: wrong on every shape
        record = by_tile[tile]
        assert record["status"] == "wrong_result" and record["ms"] is None
        assert "outside tolerance" in record["error"] and "expected" in record["error"]
    edge = by_tile[(16, 16)]  # the partial last row tile is never stored: only the poisoned edge shape shows it
    assert edge["status"] == "wrong_result"
    assert "256 of 1280 elements are NaN/Inf" in edge["error"] and "poisoned" in edge["error"]
    assert edge["checks"][-1]["sizes"] == {"M": 40, "N": 32, "K": 32}
    assert [c["ok"] for c in edge["checks"]] == [True, True, False]  # both seeds passed; the edge shape did not
    assert by_tile[(32, 16)]["status"] == "better"
    assert result.summary["winner"]["config"]["BLOCK_M"] == 32 and result.summary["winner"]["config"]["BLOCK_N"] == 16
    assert result.summary["funnel"]["failed_by_class"] == {"wrong_result": 3}
    assert [t["config"] for t in result.summary["final"]["top"]] == [by_tile[(32, 16)]["config"]]


def test_a_users_harness_runs_the_kernel(tmp_path):
    result = tune(FIXTURES / "harness.yaml", arch="ampere", interpret=True, storage=str(tmp_path / "h.db"),
                  stage="config", sampler="grid", cache_dir=str(tmp_path / "cache"), top_k=2, rounds=1)
    assert sorted(r["status"] for r in result.records) == ["better", "slower"] or \
        sorted(r["status"] for r in result.records) == ["better", "better"]
    assert {r["config"]["BLOCK"] for r in result.records} == {16, 32}
    assert all(r["checks"][-1]["sizes"] == {"n": 50} for r in result.records)
    assert result.summary["final"]["baseline"] == "harness" and result.summary["final"]["baseline_ms"] > 0
