"""benchmarks/h200_tune_two_gpus.py's arithmetic and checks (the script itself runs on a two-GPU machine, or with
``--interpret`` on a CPU): what issue 17 measures, configs timed per minute, time to 2% of the best and a study
resumed after a kill, judged here on made-up phases."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


@pytest.fixture(scope="module")
def two():
    import h200_tune_two_gpus

    return h200_tune_two_gpus


def _phase(name, span, timed_at, **extra):
    return {"phase": name, "loop_span_s": span, "timed_at": timed_at, "exit_codes": [0], "timed_twice": [],
            "timed_per_minute": round(len(timed_at) / span * 60.0, 1), **extra}


def test_each_phase_is_timed_to_two_percent_of_the_best_any_phase_timed(two):
    one = _phase("one", 60.0, [(5.0, 1.30), (20.0, 1.05), (50.0, 1.00)])
    both = _phase("both", 30.0, [(2.0, 1.20), (9.0, 1.019), (25.0, 1.01)])
    pair = _phase("two", 40.0, [(2.0, 1.20), (10.0, 1.03), (12.0, 1.04), (30.0, 1.015)])
    out = two.compare_phases([one, both, pair])
    assert out["best_ms"] == 1.00
    assert one["within_2pct_s"] == 50.0 and both["within_2pct_s"] == 9.0  # 1.019 <= 1.02 x 1.00; 1.05 is not
    assert pair["within_2pct_s"] == 30.0
    assert out["speed_up_both"] == 2.0 and out["rate_ratio_both"] == 2.0  # 3 timings in 60 s against 3 in 30 s
    assert out["speed_up_two"] == 1.5 and out["rate_ratio_two"] == 2.0  # 4 in 40 s: 6 a minute against 3


def test_a_phase_that_timed_nothing_has_no_time_to_two_percent_and_no_ratio(two):
    one = _phase("one", 60.0, [(5.0, 1.0)])
    nothing = {"phase": "both", "loop_span_s": None, "timed_at": [], "timed_per_minute": None, "exit_codes": [1],
               "timed_twice": []}
    out = two.compare_phases([one, nothing])
    assert nothing["within_2pct_s"] is None and set(out) == {"best_ms"}


@pytest.mark.parametrize("kill, expected", [
    ({"killed_after_trials": 20, "resumed_noted": True, "reached_trials": True}, 0),
    ({"killed_after_trials": None, "resumed_noted": False, "reached_trials": True}, 1),  # nothing was killed
    ({"killed_after_trials": 20, "resumed_noted": False, "reached_trials": True}, 1),  # nobody queued them again
    ({"killed_after_trials": 20, "resumed_noted": True, "reached_trials": False}, 1),  # the study fell short
])
def test_the_exit_status_counts_a_kill_phase_that_did_not_resume(two, kill, expected):
    assert two.problems([_phase("kill", 30.0, [(1.0, 1.0)], **kill)]) == expected


def test_the_exit_status_counts_failed_processes_and_configs_timed_twice(two):
    phase = _phase("two", 30.0, [(1.0, 1.0)], exit_codes=[0, 3], timed_twice=[{"BLOCK_M": 64}])
    assert two.problems([phase]) == 2


def test_finished_trials_are_read_from_the_study_file_while_processes_write_it(two, tmp_path):
    optuna = pytest.importorskip("optuna")
    storage = tmp_path / "study.db"
    assert two._finished_trials(storage) == 0  # no file yet
    study = optuna.create_study(study_name="two-gpus", storage=f"sqlite:///{storage}")
    for value in (1.0, 2.0):
        trial = study.ask()
        study.tell(trial, value)
    study.ask()  # in flight: not finished
    assert two._finished_trials(storage) == 2
