"""Correctness gates: a fast wrong kernel is never the winner; a user's harness runs the kernel."""

from __future__ import annotations

import shutil
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


STAGE_TWINS_SPACE = """\
kernel: faulty.py:faulty_kernel
signature: {x_ptr: "*fp32", y_ptr: "*fp32", n: 64}
fixed: {FAULT: 0}
space:
  BLOCK: [16, 32]
  num_stages: [1, 2, 3]
problem:
  n: 64
  dtype: fp32
  inputs: {x: [n]}
  outputs: {y: [n]}
  args: {x_ptr: x, y_ptr: y}
  grid: cdiv(n, BLOCK)
  reference: 2 * x
  seeds: [0]
"""


def test_num_stages_twins_of_a_loop_free_kernel_are_told_the_first_ones_time(tmp_path):
    """faulty.py with FAULT=0 has no loop: once a config of a num_stages group is timed, the group's configs judged
    after it are ``same_binary``, told its time. With one candidate waiting besides the one being timed
    (``lookahead=0``), a twin compiled while the first is still timed is timed too, so each group of three has
    at most two timed and at least one ``same_binary``."""
    shutil.copy(FIXTURES / "faulty.py", tmp_path / "faulty.py")
    (tmp_path / "twins.tune.yaml").write_text(STAGE_TWINS_SPACE)
    result = tune(tmp_path / "twins.tune.yaml", arch="ampere", interpret=True, storage=str(tmp_path / "t.db"),
                  sampler="grid", cache_dir=str(tmp_path / "cache"), lookahead=0, top_k=1, rounds=1)
    by_block = {}
    for record in sorted(result.records, key=lambda r: r["trial"]):
        by_block.setdefault(record["config"]["BLOCK"], []).append(record)
    for records in by_block.values():
        timed = {r["trial"]: r for r in records if r["status"] in ("better", "slower")}
        told = [r for r in records if r["status"] == "same_binary"]
        assert len(records) == 3 and 1 <= len(timed) <= 2 and len(told) == 3 - len(timed)
        assert all(r["facts"]["loop_count"] == 0 for r in timed.values())
        assert all(t["same_binary_as"] in timed and t["told_ms"] == timed[t["same_binary_as"]]["ms"] for t in told)
    f = result.summary["funnel"]
    assert f["timed"] + f["same_binary"] == 6 and f["same_binary"] >= 2 and f["not_sampled"] == 0
    assert f["space"] == f["rejected"] + f["learned"] + f["failed"] + f["timed"] + f["same_binary"] + f["not_sampled"]
