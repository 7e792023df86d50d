"""benchmarks/suite_truth.py: a re-timed problem's records carry the held times, and nothing else mixes timers."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import suite_truth  # noqa: E402


def config(block: int) -> dict:
    return {"BLOCK": block, "num_warps": 4}


def sweep_line(block: int, ms: float) -> dict:
    return {"kind": "config", "config": config(block), "launch": {"status": "ok"}, "correct": True,
            "timing": {"ms": ms, "ms_p20": ms * 0.9, "ms_p80": ms * 1.1}}


def write(path: Path, lines: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_held_times_replace_the_sweeps_and_a_config_not_retimed_is_not_compared(tmp_path, monkeypatch):
    write(tmp_path / "fam__small.jsonl", [{"kind": "problem"}, sweep_line(16, 0.010), sweep_line(32, 0.004),
                                          sweep_line(64, 0.005), {"kind": "config", "config": config(128),
                                                                  "launch": {"status": "out_of_resources"}}])
    write(tmp_path / "held" / "run1" / "fam__small.jsonl", [
        {"kind": "problem", "date": "2026-12-03T00:00:00Z"},
        {"kind": "config", "config": config(16), "passes": [{"ms": 0.006, "ms_p20": 0.0058, "ms_p80": 0.0062}],
         "ms": 0.006},
        {"kind": "config", "config": config(32), "passes": [{"ms": 0.005, "ms_p20": 0.0049, "ms_p80": 0.0051},
                                                            {"ms": 0.007, "ms_p20": 0.0068, "ms_p80": 0.0072}],
         "ms": 0.006}])
    write(tmp_path / "fam__large.jsonl", [sweep_line(16, 1.0)])
    records = suite_truth.config_records("fam__small", tmp_path)
    assert [r["config"]["BLOCK"] for r in records] == [16, 32, 64, 128]
    assert records[0]["timing"] == {"ms": 0.006, "ms_p20": 0.0058, "ms_p80": 0.0062, "runs": 1, "passes": 1,
                                    "timer": "held", "sweep_ms": 0.010}
    assert records[1]["timing"]["ms"] == 0.006 and records[1]["timing"]["ms_p20"] == 0.0049
    assert records[1]["timing"]["ms_p80"] == 0.0072 and records[1]["timing"]["passes"] == 2
    assert "timing" not in records[2] and records[2]["untimed"] == "not re-timed"
    assert "timing" not in records[3] and "untimed" not in records[3]  # never timed: unchanged
    assert suite_truth.timer_of("fam__small", tmp_path) == "held"
    assert suite_truth.config_records("fam__large", tmp_path)[0]["timing"]["ms"] == 1.0
    assert suite_truth.timer_of("fam__large", tmp_path) == "do_bench"
    monkeypatch.setattr(suite_truth, "SWEEP_ONLY", True)
    assert [r["timing"]["ms"] for r in suite_truth.config_records("fam__small", tmp_path)[:3]] == [0.010, 0.004, 0.005]
    monkeypatch.setattr(suite_truth, "SWEEP_ONLY", False)
    (row,) = suite_truth.compare(tmp_path)
    assert row["configs"] == 2 and not row["same_best"] and row["sweep_best_held_over_best"] == 1.0
    assert row["runs"] == 1 and row["between_runs"] is None
    # a second run: each config's time is the mean of the runs', its spread the widest of every pass
    write(tmp_path / "held" / "run2" / "fam__small.jsonl", [
        {"kind": "config", "config": config(16), "passes": [{"ms": 0.008, "ms_p20": 0.0079, "ms_p80": 0.0090}],
         "ms": 0.008},
        {"kind": "config", "config": config(32), "passes": [{"ms": 0.004, "ms_p20": 0.0039, "ms_p80": 0.0041}],
         "ms": 0.004}])
    first, second = suite_truth.config_records("fam__small", tmp_path)[:2]
    assert first["timing"]["ms"] == 0.007 and first["timing"]["ms_p80"] == 0.0090 and first["timing"]["runs"] == 2
    assert second["timing"]["ms"] == 0.005 and second["timing"]["ms_p20"] == 0.0039 and second["timing"]["passes"] == 3
    (row,) = suite_truth.compare(tmp_path)
    assert row["runs"] == 2 and math.isnan(row["between_runs"]) and row["same_best"]  # 2 configs: no correlation


def test_the_replay_scores_on_the_truth_and_never_on_the_other_timer(tmp_path):
    """suite_replay's costs: the best and each run time are the held ones; a config not re-timed never counts."""
    import suite_replay

    write(tmp_path / "fam__small.jsonl", [sweep_line(16, 0.010), sweep_line(32, 0.004), sweep_line(64, 0.001)])
    write(tmp_path / "held" / "run1" / "fam__small.jsonl", [
        {"kind": "config", "config": config(b), "passes": [{"ms": ms, "ms_p20": ms, "ms_p80": ms}], "ms": ms}
        for b, ms in ((16, 0.003), (32, 0.005))])
    records = [{**r, "compile": {"seconds": 1.0}} for r in suite_truth.config_records("fam__small", tmp_path)]
    costs = suite_replay.Costs({"configs": records, "judge": None}, {})
    keys = [suite_truth.key(config(b)) for b in (16, 32, 64)]
    assert costs.best == 0.003  # the held best, not the sweep's 0.001 of a config the re-timing did not time
    assert costs.run(keys[0]) == (1.0 + suite_replay.BENCH_FIXED_S + suite_replay.BENCH_RUNS * 0.003 / 1000, 0.003)
    assert costs.run(keys[2]) == (1.0 + suite_replay.BENCH_FIXED_S, None) and not costs.near(None)
    assert suite_replay.untimed_configs({"problems": {"fam__small": {"configs": records}}}) == 1
