"""A benchmark worker is spawned as the tuner starts, imports torch before it has its settings, and never outlives a
tuner that could not load its space or was never run."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from kernelrules.errors import KernelrulesError  # noqa: E402
from kernelrules.space import load_space  # noqa: E402
from kernelrules.tune.driver import Tuner  # noqa: E402
from kernelrules.tune.options import TuneOptions  # noqa: E402
from kernelrules.tune.problem import load_problem  # noqa: E402
from kernelrules.tune.worker import BenchWorker, WorkerSettings  # noqa: E402

SMALL = Path(__file__).parent.parent / "fixtures" / "tune" / "matmul_small.yaml"
PROC = Path("/proc")


def _maps(worker: BenchWorker) -> str:
    try:
        return (PROC / str(worker.process.proc.pid) / "maps").read_text()
    except OSError:
        return ""


def _gone(worker: BenchWorker, wait: float = 10.0) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if worker.process.proc.poll() is not None:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not PROC.exists(), reason="reads the worker's memory map from /proc")
def test_a_spawned_worker_imports_torch_while_it_waits_for_its_settings():
    worker = BenchWorker(0, None, compile_timeout=5, bench_timeout=60)
    worker.spawn()
    try:
        assert worker.label == "worker 0"
        deadline = time.monotonic() + 120
        while "libtorch" not in _maps(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "libtorch" in _maps(worker)  # loaded with no settings sent yet
        sent = time.monotonic()
        worker.configure(WorkerSettings(spec=load_problem(load_space(SMALL)), interpret=True))
        info = worker.wait_ready()
        assert info["torch"]
        steps = worker.steps
        order = ["spawned", "entered", "torch_loaded", "settings_received", "torch_imported", "ready"]
        assert all(steps[a] <= steps[b] for a, b in zip(order, order[1:]))
        assert steps["entered"] <= sent <= steps["settings_received"]  # torch's import began before the settings
    finally:
        worker.stop()


def test_a_tuner_that_cannot_load_its_space_kills_the_worker_it_spawned(tmp_path, monkeypatch):
    spawned = []
    original = BenchWorker.spawn

    def spawn(self):
        spawned.append(self)
        original(self)

    monkeypatch.setattr(BenchWorker, "spawn", spawn)
    bad = tmp_path / "bad.tune.yaml"
    bad.write_text("kernel: missing.py:nothing\nspace: {BLOCK: [16]}\n")
    with pytest.raises(KernelrulesError):
        Tuner(bad, TuneOptions(arch="ampere", interpret=True))
    assert len(spawned) == 1 and _gone(spawned[0])


def test_a_tuner_that_is_never_run_leaves_no_worker(monkeypatch):
    spawned = []
    original = BenchWorker.spawn
    monkeypatch.setattr(BenchWorker, "spawn", lambda self: spawned.append(self) or original(self))
    tuner = Tuner(SMALL, TuneOptions(arch="ampere", interpret=True, gpus=["0", "1"]))
    assert [w.settings for w in tuner.spawned] == [None, None] and len(spawned) == 2
    del tuner
    gc.collect()
    assert all(_gone(worker) for worker in spawned)
