"""Assertions shared by the tune tests: the storage tests (SQLite and PostgreSQL), the worker processes left."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from kernelrules.tune.records import final_records

#: Statuses of a trial that was timed.
TIMED = ("better", "slower")


def assert_two_workers_settled(records: list[dict], outputs: list[tuple[str, str]], trials: int) -> None:
    """Two ``kernelrules tune --json`` processes with the same sampler seed on one study: no config
    was timed twice, both timed some, hardly any duplicate and each points at the trial that owns its config,
    the study holds ``trials`` configs, and each process printed one line per trial it owned (not a duplicate,
    nor one asked as the other process took the last slot, ``over_budget``)."""
    timed = [r for r in records if r["status"] in TIMED]
    keys = Counter(r["key"] for r in timed)
    assert keys and max(keys.values()) == 1
    assert len({r["worker"] for r in timed}) == 2  # both processes timed configs
    duplicates = [r for r in records if r["status"] == "duplicate"]
    # the sampler skips configs the study holds (DedupSampler), so a duplicate is only a race between the
    # processes (both drew a config before either's trial was written): the claims settle those
    assert len(duplicates) <= 4
    owners = {r["trial"]: r for r in records}
    for dup in duplicates:
        assert owners[dup["duplicate_of"]]["key"] == dup["key"]
    final = final_records(records)
    assert len(final) == trials, (Counter(r["status"] for r in records), [(r["trial"], r["status"], r.get("worker"), r.get("error")) for r in records])
    per_process = [[json.loads(line) for line in out.splitlines()] for out, _err in outputs]
    printed = sorted(line["trial"] for lines in per_process for line in lines if line.get("type") == "trial")
    # a seed still queued when the processes reached the total ("waiting") was asked by neither: it is the study's,
    # left for a later run (test_tune_loop.py::test_seeds_left_waiting_are_queued_not_in_flight). Left only when one
    # process sampled before the other had queued the seeds.
    expected = sorted(r["trial"] for r in records if r["status"] not in ("duplicate", "over_budget", "waiting"))
    assert printed == expected, ([r for r in records if r["trial"] in set(expected) ^ set(printed)],
                                 Counter(r["status"] for r in records))


def children_running(module: str) -> list[int]:
    """Live processes whose parent is this process and whose command line names ``module`` (Linux /proc): the
    compile pool's workers (``kernelrules.compile.pool``) or the benchmark workers (``kernelrules.tune.bench_process``)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
            cmdline = (status.parent / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if int(fields.get("PPid", "0")) == os.getpid() and module.encode() in cmdline \
                and not fields.get("State", "").startswith("Z"):
            found.append(int(status.parent.name))
    return found


def settings_given_to_workers(space: Path, tmp_path: Path, monkeypatch, arch: str) -> tuple:
    """The WorkerSettings a GPU run and an interpreted run of ``space`` give their benchmark worker (no process is
    spawned: ``BenchWorker.spawn`` and ``configure`` stubbed), and the interpreted run's tuner."""
    from kernelrules.tune import driver
    from kernelrules.tune.worker import BenchWorker

    started = []
    monkeypatch.setattr(BenchWorker, "spawn", lambda self: None)
    monkeypatch.setattr(BenchWorker, "configure", lambda self, settings=None: started.append(settings))
    for interpret in (False, True):
        tuner = driver.Tuner(space, driver.TuneOptions(arch=arch, interpret=interpret, trials=1,
                                                       storage=str(tmp_path / f"{interpret}" / "study.db"),
                                                       cache_dir=str(tmp_path / "cache")))
        tuner._start_workers()
    gpu, interpreted = started
    return gpu, interpreted, tuner
