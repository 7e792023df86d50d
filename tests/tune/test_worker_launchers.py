"""A benchmark worker builds the kernel's launchers as it starts a problem (kernelrules.tune.jit_warmup), and its
first request waits for them rather than build them again."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("triton")

SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "tune" / "matmul_small.yaml"


def test_a_gpu_run_gives_its_workers_the_jobs_of_its_signature_and_of_each_edge_shape(tmp_path, monkeypatch):
    from tune_checks import settings_given_to_workers

    from kernelrules.tune import driver
    from kernelrules.tune.gate import Gate

    gpu, interpreted, tuner = settings_given_to_workers(SMALL, tmp_path, monkeypatch, "hopper")
    assert interpreted.launcher_jobs == []  # the interpreter launches no binary
    first = tuner.configs[0]
    gate = Gate(tuner.space, tuner.arch, triton_cache_dir=str(tmp_path / "triton"),
                edge_signatures=driver.edge_signatures(tuner.spec, tuner.space.signature))
    try:
        wanted = [gate.job(first), *gate.edge_jobs(first)]
    finally:
        gate.close()
    assert len(wanted) == 2  # the problem's own signature and its one edge shape's (M, N, K = 31, 30, 29)
    assert [(j.signature, j.constexprs, j.target) for j in gpu.launcher_jobs] == \
        [(j.signature, j.constexprs, j.target) for j in wanted]


def test_the_first_request_waits_for_the_launchers_being_built(monkeypatch):
    from kernelrules.space import load_space
    from kernelrules.tune.bench_process import _Session
    from kernelrules.tune.problem import load_problem
    from kernelrules.tune.worker import WorkerSettings

    order = []
    session = _Session(WorkerSettings(spec=load_problem(load_space(SMALL)), interpret=True), conn=None)
    session.phase = lambda name: None

    def build() -> None:
        time.sleep(0.3)
        order.append("launcher built")

    def case(sizes, seed):
        order.append("first launch's inputs")
        raise RuntimeError("stop here")

    session.case = case
    session.launchers = [threading.Thread(target=build)]
    session.launchers[0].start()
    answer = session.evaluate({"BLOCK_M": 16})
    assert answer["status"] != "ok" and order == ["launcher built", "first launch's inputs"]
    assert session.launchers == []  # waited for once
    session.launchers = [threading.Thread(target=build)]
    session.launchers[0].start()
    session.time_config({"BLOCK_M": 16})
    assert order[2] == "launcher built"


def test_a_worker_starts_its_launchers_with_the_problem_and_none_under_the_interpreter(monkeypatch):
    import dataclasses

    from kernelrules.space import load_space
    from kernelrules.tune import bench_process
    from kernelrules.tune.problem import load_problem
    from kernelrules.tune.worker import WorkerSettings

    asked, sent = [], []

    class Connection:
        def send(self, message):
            sent.append(message[0])

        def poll(self, timeout=0):
            return False

    monkeypatch.setattr(bench_process, "start_launcher_builds", lambda fn, jobs: asked.append(list(jobs)) or [])
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # _start_session sets the problem's environment: restored after
    settings = WorkerSettings(spec=load_problem(load_space(SMALL)), interpret=True, launcher_jobs=["job"])
    session, _early = bench_process._start_session(Connection(), settings, {})
    assert session is not None and session.launchers == [] and asked == []  # interpreted: nothing is launched
    bench_process._start_session(Connection(), dataclasses.replace(settings, interpret=False), {})
    assert asked == [["job"]]  # before the reference's check (which fails here: no GPU)
    assert sent == ["ready", "warmed", "fatal"]
