"""`tune` defers configs predicted to spill: they are compiled and timed after every other config."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("optuna")
pytest.importorskip("torch")

from kernelrules.tune import tune  # noqa: E402
from kernelrules.tune.driver import predicted_to_spill  # noqa: E402
from kernelrules.tune.gate import Judgement  # noqa: E402

SPACE = Path(__file__).parent.parent / "fixtures" / "tune" / "spill" / "rowvar.tune.yaml"


def test_predicted_spills_wait_for_everything_else(tmp_path):
    # random proposals, no perf-model seeds: the spilling config comes up early for this seed
    result = tune(SPACE, arch="hopper", interpret=True, storage=str(tmp_path / "s.db"), stage="config",
                  cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, sampler="random", seed=4, model_seeds=0)
    timed = [r for r in result.records if r["status"] in ("better", "slower")]
    spilling = [r for r in timed if (r.get("facts") or {}).get("spill_bytes_predicted")]
    others = [r for r in timed if r not in spilling]
    assert spilling and others and len(timed) == 8
    assert min(r["elapsed_s"] for r in spilling) >= max(r["elapsed_s"] for r in others)
    assert min(r["trial"] for r in spilling) < max(r["trial"] for r in others)  # asked early, timed last
    assert any("predicted to spill registers were compiled and timed after the others" in n
               for n in result.notes)


def test_what_counts_as_a_predicted_spill():
    assert predicted_to_spill(Judgement(passed=True, stage="config", facts={"spill_bytes_predicted": 20}))
    assert predicted_to_spill(Judgement(passed=True, stage="config", warnings=["REG001 accumulator-spills-certain"]))
    assert not predicted_to_spill(Judgement(passed=True, stage="config", facts={"spill_bytes_predicted": 0}))
    assert not predicted_to_spill(None)
