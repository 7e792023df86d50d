"""What the study database's disk syncs cost a tune run: SQLite's default against WAL with synchronous=NORMAL.

    python benchmarks/bench_study_sync.py [--trials 50] [--repeats 3] [--dir DIR] [--out FILE]

A study commits about 30 times while Optuna creates its tables and several times per trial
(ask, claim, tell, user attributes, the heartbeat). With SQLite's default (``synchronous=FULL``)
each commit syncs the file; ``kernelrules.tune.study.open_storage`` opens study files with
``synchronous=NORMAL`` in WAL mode, which syncs at checkpoints only. This script measures, on the
disk holding ``--dir`` (default: a temporary folder; pass the folder a tune run writes its study
to), interleaved, ``--repeats`` times each:

- the latency of one ``fdatasync`` of a small file (the disk's own figure);
- ``open``: a new study database opened (Optuna's tables, kernelrules' claims table) and the study
  created, as ``tune`` does before it judges the space;
- ``trials``: ``--trials`` trials asked, claimed, given user attributes and told.

Both variants run the same kernelrules code; only the connections' ``synchronous`` setting differs
(the ``full`` variant is the storage as it was before). The process's first open also pays Optuna's
imports (a ``full`` one: it runs first), so use 3 repeats or more. Prints medians and the ratio full / normal;
``--out`` writes the raw timings as JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def sync_latency(folder: Path, count: int = 50) -> float:
    """Median seconds of one fdatasync after a small write, in ``folder``."""
    path = folder / "sync-probe.bin"
    times = []
    with open(path, "wb") as handle:
        for _ in range(count):
            handle.write(b"x" * 512)
            handle.flush()
            start = time.perf_counter()
            os.fdatasync(handle.fileno())
            times.append(time.perf_counter() - start)
    path.unlink()
    return statistics.median(times)


def open_study(path: Path, synchronous: str):
    """The storage, study and claims as ``tune`` opens them, with the given ``synchronous`` setting."""
    import optuna

    from kernelrules.tune import sqlite_file, study as study_module

    saved = sqlite_file.connector
    sqlite_file.connector = functools.partial(saved, synchronous=synchronous)
    try:
        storage = study_module.open_storage(f"sqlite:///{path}")
    finally:
        sqlite_file.connector = saved
    study = optuna.create_study(storage=storage, study_name="s", direction="minimize", load_if_exists=True,
                                sampler=optuna.samplers.RandomSampler(seed=0))  # the storage, not a sampler, timed
    study.set_user_attr("kr_identity", {"kernel": "k"})
    return storage, study, study_module.Claims(storage, "s")


def one_run(folder: Path, synchronous: str, trials: int) -> dict[str, float]:
    """Seconds to open a new study, then to run ``trials`` trials through it."""
    import optuna

    path = folder / f"study-{synchronous}-{time.monotonic_ns()}.db"
    start = time.perf_counter()
    _storage, study, claims = open_study(path, synchronous)
    opened = time.perf_counter()
    for number in range(trials):
        trial = study.ask({"x": optuna.distributions.IntDistribution(0, 10_000)})
        claims.claim(f"config-{number}", trial.number)
        trial.set_user_attr("kr_record", {"status": "slower", "ms": 1.0 + number})
        study.tell(trial, 1.0 + number)
    done = time.perf_counter()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return {"open": opened - start, "trials": done - opened}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=None, help="folder on the disk to measure (default: a temporary one)")
    parser.add_argument("--out", default=None, help="write the raw timings here (JSON)")
    args = parser.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        folder = Path(scratch)
        latency = sync_latency(folder)
        runs: dict[str, list[dict[str, float]]] = {"full": [], "normal": []}
        for _ in range(args.repeats):
            for variant in ("full", "normal"):  # interleaved: both see the same disk
                runs[variant].append(one_run(folder, variant, args.trials))
    med = {v: {k: statistics.median(r[k] for r in rs) for k in ("open", "trials")} for v, rs in runs.items()}
    print(f"fdatasync of a small write: {latency * 1e3:.3f} ms (median of 50)")
    print(f"{'':8} {'open a new study':>18} {f'{args.trials} trials':>14} {'per trial':>11}")
    for variant in ("full", "normal"):
        m = med[variant]
        print(f"{variant:8} {m['open']:17.3f}s {m['trials']:13.3f}s {m['trials'] / args.trials * 1e3:9.2f}ms")
    print(f"full / normal: open {med['full']['open'] / med['normal']['open']:.2f}x, "
          f"trials {med['full']['trials'] / med['normal']['trials']:.2f}x")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": platform.machine(),
            "python": platform.python_version(), "sqlite": sqlite3.sqlite_version, "trials": args.trials,
            "fdatasync_s": latency, "runs": runs, "medians": med}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
