"""Failure isolation: a config that hangs or crashes its worker is recorded with its class; the loop goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("optuna")
pytest.importorskip("torch")

from kernelrules.tune import tune  # noqa: E402

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tune"


def test_hang_and_crash_kill_only_their_worker(tmp_path):
    result = tune(FIXTURES / "faulty.yaml", arch="ampere", interpret=True, storage=str(tmp_path / "f.db"),
                  stage="config", sampler="grid", cache_dir=str(tmp_path / "cache"), bench_timeout=4, top_k=1,
                  rounds=1)
    by_fault = {r["config"]["FAULT"]: r for r in result.records}
    assert set(by_fault) == {0, 1, 2}
    hang, crash, good = by_fault[1], by_fault[2], by_fault[0]
    assert hang["status"] == "timeout" and hang["stage"] == "launch"
    assert "no answer within 4 s in the check phase; worker killed" in hang["error"]
    assert crash["status"] == "illegal_address"  # SIGSEGV under the interpreter; an illegal address on a GPU
    assert "SIGSEGV" in crash["error"]
    assert good["status"] == "better" and good["ms"] > 0
    assert result.summary["winner"]["config"] == {"BLOCK": 16, "FAULT": 0}
    f = result.summary["funnel"]
    assert f["failed_by_class"] == {"illegal_address": 1, "timeout": 1} and f["timed"] == 1
    assert result.summary["gaps"] == []  # neither is a class a rule could catch before launch
