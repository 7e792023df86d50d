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
from tune_checks import TIMED, assert_two_workers_settled  # noqa: E402

from kernelrules.tune.records import final_records  # noqa: E402
from kernelrules.tune.study import load_records, open_storage  # noqa: E402

SMALL = Path(__file__).parent.parent / "fixtures" / "tune" / "matmul_small.yaml"


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
    trials = _study(tmp_path).get_trials()
    assert not [t.number for t in trials if t.state.name == "RUNNING"]
    # a trial still queued is one of the perf model's seeds that neither process reached: one process sampled
    # before the other had queued them, and the 16 claims were made before the last seeds were asked
    waiting = [t for t in trials if t.state.name == "WAITING"]
    assert all(t.user_attrs.get("kr_seeded") == "perf_model" for t in waiting), [t.user_attrs for t in waiting]
    for trial in trials:  # each trial had one owner, and that process told it (nothing failed as stale)
        if trial.state.name == "WAITING":
            continue
        owner, record = trial.user_attrs["kr_owner"], trial.user_attrs["kr_record"]
        assert record.get("worker", owner["worker"]) == owner["worker"], trial.number
    records = load_records(_study(tmp_path))
    assert not [r for r in records if r["status"] == "interrupted"]
    assert_two_workers_settled(records, outputs, trials=16)
    per_process = [[json.loads(line) for line in out.splitlines()] for out, _err in outputs]
    assert not [n for lines in per_process for n in lines[-1]["notes"] if "stale" in n]


# --------------------------------------------------------------------------- the races, one at a time


def _interleave(monkeypatch, action):
    """Run ``action()`` once, right after the next trial row is read: another process's write landing
    between a read and the write that follows it (SQLite takes no row lock for the read)."""
    from optuna.storages._rdb import models

    read = models.TrialModel.find_or_raise_by_id.__func__
    pending = [action]

    def find(cls, trial_id, session, for_update=False):
        trial = read(cls, trial_id, session, for_update)
        if pending:
            pending.pop()()
        return trial

    monkeypatch.setattr(models.TrialModel, "find_or_raise_by_id", classmethod(find))


def test_a_queued_trial_is_taken_by_one_process_and_finished_by_one(tmp_path, monkeypatch):
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    url = f"sqlite:///{tmp_path / 'q.db'}"
    mine, theirs = open_storage(url), open_storage(url)  # two engines: two processes' connections
    study = optuna.create_study(storage=mine, study_name="q")
    study.enqueue_trial({"x": 1})
    queued = study.get_trials()[0]._trial_id
    # the other process pops the queued trial after this one read it WAITING: one owner only
    _interleave(monkeypatch, lambda: theirs.set_trial_state_values(queued, TrialState.RUNNING))
    assert mine.set_trial_state_values(queued, TrialState.RUNNING) is False
    # its owner tells it after this process (a recovery) read it RUNNING: finished once, its value kept
    _interleave(monkeypatch, lambda: theirs.set_trial_state_values(queued, TrialState.COMPLETE, [1.5]))
    with pytest.raises(UpdateFinishedTrialError):
        mine.set_trial_state_values(queued, TrialState.FAIL)
    with pytest.raises(UpdateFinishedTrialError):
        mine.set_trial_state_values(queued, TrialState.COMPLETE, [9.0])
    trial = open_storage(url).get_trial(queued)
    assert trial.state == TrialState.COMPLETE and trial.values == [1.5]
    assert mine.set_trial_state_values(study.ask()._trial_id, TrialState.RUNNING) is False  # RUNNING already


def test_concurrent_drivers_opening_a_new_study_database(tmp_path):
    import threading

    from kernelrules.tune.study import Claims

    url, barrier, errors = f"sqlite:///{tmp_path / 'new.db'}", threading.Barrier(6), []

    def open_one():
        try:
            barrier.wait()
            Claims(open_storage(url), "s").claim("k", 0)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


def test_a_study_file_commits_in_wal_mode_without_a_sync_per_commit(tmp_path):
    """WAL with synchronous=NORMAL: commits reach the file without a disk sync each, and a
    second connection (another thread, as the heartbeat's) reads them."""
    import threading

    storage = open_storage(f"sqlite:///{tmp_path / 'study.db'}")
    with storage.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar().lower() == "wal"
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL (FULL is 2)
    study = optuna.create_study(storage=storage, study_name="s")
    study.set_user_attr("x", 1)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(_study(tmp_path).user_attrs.get("x")))
    thread.start()
    thread.join()
    assert seen == [1]


def test_schema_races_are_retried_and_other_errors_are_not():
    import sqlalchemy as sa

    from kernelrules.tune.study import _retrying_init

    calls = []

    def racing():
        calls.append(1)
        if len(calls) < 3:
            raise sa.exc.OperationalError("CREATE TABLE studies", {}, Exception("table studies already exists"))
        return "made"

    assert _retrying_init(racing) == "made" and len(calls) == 3

    def refused():
        calls.append(1)
        raise sa.exc.OperationalError("connect", {}, Exception("connection refused"))

    calls.clear()
    with pytest.raises(sa.exc.OperationalError):
        _retrying_init(refused)
    assert len(calls) == 1


def test_liveness_of_an_owner_across_processes_and_machines(tmp_path):
    import socket

    from kernelrules.tune import recovery as st

    study = optuna.create_study(storage=open_storage(f"sqlite:///{tmp_path / 'l.db'}"), study_name="l")
    here = st.owner_info()

    def trial(**owner):
        t = study.ask()
        t.set_user_attr("kr_owner", {**here, **owner})
        return study._storage.get_trial(t._trial_id)

    parent = trial(pid=os.getppid(), start=st._start_ticks(os.getppid()), worker="x")
    assert not st.is_stale(parent)  # a live process on this machine
    assert st.is_stale(trial(pid=os.getppid(), start=(st._start_ticks(os.getppid()) or 0) + 1))  # a reused pid
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.time() + 30
        while st._read(f"/proc/{child.pid}/stat") and " Z " not in st._read(f"/proc/{child.pid}/stat") \
                and time.time() < deadline:
            time.sleep(0.05)
        assert st.is_stale(trial(pid=child.pid, start=None))  # exited, not yet reaped (a zombie)
    finally:
        child.wait()
    assert st.is_stale(trial(pid=child.pid, start=None))  # gone
    # the same host name on another machine or in another PID namespace: the pid means nothing here,
    # the heartbeat decides
    elsewhere = trial(pid=child.pid, machine="another-boot/pid:[1]", at=time.time())
    assert not st.is_stale(elsewhere) and st.is_stale(elsewhere, now=time.time() + 1000)
    remote = trial(host=socket.gethostname() + "-other", pid=os.getpid(), at=time.time() - 1000)
    assert st.is_stale(remote) and not st.is_stale(remote, grace=2000)
    this = trial()
    assert st.is_stale(this) and not st.is_stale(this, own=frozenset({this.number}))  # this very process


def _ledger_with_a_trial(tmp_path):
    """A new study, a TrialLedger over it that collects what it tells, and one asked trial as a candidate."""
    from kernelrules.config import KernelConfig
    from kernelrules.tune.ledger import TrialLedger
    from kernelrules.tune.options import Candidate
    from kernelrules.tune.recovery import Heartbeat
    from kernelrules.tune.study import Claims

    storage = open_storage(f"sqlite:///{tmp_path / 'ledger.db'}")
    study = optuna.create_study(storage=storage, study_name="d")
    told: list[dict] = []
    ledger = TrialLedger(study, Claims(storage, "d"), Heartbeat(study), told.append)
    trial = study.ask({"x": optuna.distributions.IntDistribution(0, 3)})
    return study, ledger, told, Candidate(trial, KernelConfig.from_dict({"x": trial.params["x"]}), "key")


def test_a_trial_another_process_failed_is_dropped_not_told(tmp_path):
    from optuna.trial import TrialState

    from kernelrules.tune.recovery import recover

    study, ledger, told, candidate = _ledger_with_a_trial(tmp_path)
    trial = candidate.trial
    trial.set_user_attr("kr_owner", {"host": "elsewhere", "pid": 1, "at": time.time() - 1000})
    ledger.inflight[trial.number] = candidate
    assert recover(study, ledger.claims) == [trial.number]  # another process judged this driver gone
    assert ledger.claims.claim("key", trial.number) == trial.number  # this driver claims after that release
    record = {"trial": trial.number, "status": "slower", "ms": 1.0, "key": "key"}
    ledger.tell(candidate, record, True)  # no UpdateFinishedTrialError: dropped
    assert ledger.lost == [trial.number] and not told and not ledger.inflight
    assert ledger.claims.count() == 0  # the late claim is released, and the config queued again
    ledger.tell(candidate, dict(record, status="duplicate"), False, state=TrialState.FAIL)
    assert ledger.lost == [trial.number] * 2 and not told
    records = load_records(study)
    assert [r["status"] for r in records] == ["interrupted", "waiting", "waiting"]
    assert all(t.user_attrs["kr_retry_of"] == trial.number for t in study.get_trials()[1:])


def test_a_told_trial_leaves_the_ledger_and_reaches_the_callback(tmp_path):
    study, ledger, told, candidate = _ledger_with_a_trial(tmp_path)
    trial = candidate.trial
    assert ledger.own(candidate, {"x": trial.params["x"]}) and trial.number in ledger.inflight
    record = {"trial": trial.number, "status": "slower", "ms": 2.5, "key": "key"}
    ledger.tell(candidate, record, True)
    assert told == [record] and not ledger.inflight and not ledger.lost
    assert study.trials[0].value == 2.5 and study.trials[0].user_attrs["kr_feasible"] is True


def test_storage_urls_are_shown_without_their_password():
    from kernelrules.tune.study import display_url

    shown = display_url("postgresql+psycopg://tuner:s3cret@db.example:5432/studies")
    assert "s3cret" not in shown and shown.startswith("postgresql+psycopg://tuner:***@db.example:5432/studies")
    assert display_url("sqlite:///runs/matmul.tune.db") == "sqlite:///runs/matmul.tune.db"


def test_the_default_study_file_is_named_after_the_space(tmp_path):
    """``matmul.tune.yaml`` keeps its study in ``matmul.tune.db`` beside it (as docs/tune.md's report line reads it),
    not ``matmul.tune.tune.db``; ``.space.yaml`` and plain ``.yaml`` spaces the same way; ``--study-dir`` moves it."""
    from kernelrules.tune.study import storage_url

    for space, expected in (("matmul.tune.yaml", "matmul.tune.db"), ("matmul.space.yaml", "matmul.tune.db"),
                            ("gemm.yaml", "gemm.tune.db"), ("my.tuned.yaml", "my.tuned.tune.db")):
        assert storage_url(None, tmp_path / space) == f"sqlite:///{(tmp_path / expected).resolve()}"
    runs = tmp_path / "runs"
    assert storage_url(None, tmp_path / "small.tune.yaml", runs) == f"sqlite:///{(runs / 'small.tune.db').resolve()}"
    assert runs.is_dir()
    assert storage_url("x.db", tmp_path / "small.tune.yaml") == f"sqlite:///{Path('x.db').resolve()}"


def test_an_unreachable_server_error_hides_the_password():
    from kernelrules.errors import KernelrulesError
    from kernelrules.tune.study import open_storage

    with pytest.raises(KernelrulesError) as info:
        open_storage("postgresql+psycopg://tuner:s3cret@127.0.0.1:1/none")
    assert "s3cret" not in str(info.value) and "kernelrules[postgres]" in (info.value.hint or "")
