"""The study is the experiment log: a killed run resumes with no trial lost, and concurrent
workers on one SQLite study never time the same config twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("torch")

from conftest import kernelrules_command  # noqa: E402

from kernelrules.tune.records import final_records  # noqa: E402
from kernelrules.tune.study import load_records, open_storage  # noqa: E402

SMALL = Path(__file__).parent / "fixtures" / "tune" / "matmul_small.yaml"
TIMED = ("better", "slower")


def _command(tmp_path: Path, *extra: str) -> list[str]:
    return [*kernelrules_command(), "tune", str(SMALL), "--arch", "ampere", "--interpret", "--json", "--stage",
            "config", "--storage", str(tmp_path / "study.db"), "--study-name", "s", "--cache-dir",
            str(tmp_path / "cache"), "--top-k", "1", "--rounds", "1", *extra]


def _env() -> dict:
    return dict(os.environ, NO_COLOR="1", COLUMNS="200", TERM="dumb", PYTHONUNBUFFERED="1")


def _study(tmp_path: Path):
    return optuna.load_study(study_name="s", storage=open_storage(f"sqlite:///{tmp_path / 'study.db'}"))


def test_a_killed_run_resumes_with_no_trial_lost(tmp_path):
    proc = subprocess.Popen(_command(tmp_path, "--trials", "20", "--sampler", "grid"), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=_env(), cwd=tmp_path)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(json.loads(line))
            if sum(r.get("status") in TIMED for r in seen) >= 4:
                break
        proc.send_signal(signal.SIGKILL)  # no clean-up at all: what is written is all there is
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    before = {t.number: t for t in _study(tmp_path).get_trials()}
    running = [n for n, t in before.items() if t.state.name == "RUNNING"]
    assert running, "the kill left no trial in flight"
    told = {r["trial"] for r in seen}
    assert told <= {n for n, t in before.items() if t.state.name == "COMPLETE"}  # every told trial is stored

    resumed = subprocess.run(_command(tmp_path, "--trials", "20", "--sampler", "grid"), capture_output=True,
                             text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout.splitlines()[-1])
    assert any("resumed" in note for note in summary["notes"])
    trials = _study(tmp_path).get_trials()
    assert not [t for t in trials if t.state.name in ("RUNNING", "WAITING")]
    records = load_records(_study(tmp_path))
    by_number = {r["trial"]: r for r in records}
    for number in running:  # every trial in flight at the kill: failed, and its config queued and judged again
        assert by_number[number]["status"] == "interrupted"
        retries = [t for t in trials if t.user_attrs.get("kr_retry_of") == number]
        assert len(retries) == 1 and retries[0].state.name == "COMPLETE"
        assert retries[0].params == before[number].params
    for number, trial in before.items():  # everything stored before the kill is still there, unchanged
        if trial.state.name == "COMPLETE":
            assert by_number[number]["status"] == trial.user_attrs["kr_record"]["status"]
    decided = final_records(records)
    assert len(decided) == 20 and summary["funnel"]["sampled"] == 20
    timed_keys = Counter(r["key"] for r in records if r["status"] in TIMED)
    assert timed_keys and max(timed_keys.values()) == 1  # nothing timed twice
    f = summary["funnel"]
    assert f["space"] == f["rejected"] + f["learned"] + f["failed"] + f["timed"] + f["not_sampled"]


def test_two_concurrent_workers_never_time_the_same_config_twice(tmp_path):
    # the same sampler seed: both processes propose the same configs in the same order
    command = _command(tmp_path, "--trials", "16", "--sampler", "random", "--seed", "7")
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                              cwd=tmp_path) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
    records = load_records(_study(tmp_path))
    timed = [r for r in records if r["status"] in TIMED]
    keys = Counter(r["key"] for r in timed)
    assert keys and max(keys.values()) == 1
    assert len({r["worker"] for r in timed}) == 2  # both processes timed configs
    duplicates = [r for r in records if r["status"] == "duplicate"]
    assert duplicates  # the same proposals met, and the claims settled them
    owners = {r["trial"]: r for r in records}
    for dup in duplicates:
        assert owners[dup["duplicate_of"]]["key"] == dup["key"]
    assert len(final_records(records)) == 16
    per_process = [[json.loads(line) for line in out.splitlines()] for out, _err in outputs]
    assert sum(len(lines) - 1 for lines in per_process) == len(records) - len(duplicates)
