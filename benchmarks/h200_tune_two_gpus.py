"""``kernelrules tune`` on two GPUs, one study, against one GPU alone (issue 17).

Run on a machine with two GPUs from any folder (kernelrules installed, with optuna):

    python3 benchmarks/h200_tune_two_gpus.py --out DIR [--trials 48] [--arch h200] [--jobs 14]
        [--phases one,both,kill] [--kill-after N]

Every phase tunes the same space (``examples/matmul.tune.yaml``: fp16 matmul, 4096^3, 1875
configs) to the same number of trials, each in a fresh SQLite study with an empty Triton
cache:

* ``one``: one ``kernelrules tune --gpus 0`` process;
* ``both``: one ``kernelrules tune --gpus 0,1`` process: one driver, one benchmark worker per GPU;
* ``two``: two processes started together on the same study file, ``--gpus 0`` and
  ``--gpus 1``, with different sampler seeds (Optuna's distributed mode: each process asks
  the shared study for its next trial);
* ``kill``: ``both`` again on a fresh study, but its process is killed (SIGKILL) once the study holds
  ``--kill-after`` finished trials (a third of ``--trials`` by default) and started again on the same study: the
  study must still reach its trials, with nothing timed twice, and the killed run's trials in flight recorded
  ``interrupted`` and their configs queued again (the restarted process's note says so): judged by a later trial,
  or left queued for the study's next run when its trials were reached first (``statuses``: ``waiting``).

``--trials N`` counts the whole study's trials, so every phase judges N configs. The span
measured is the loop's: from the first trial's start to the last trial's end (Optuna's
timestamps), which leaves out each process's start-up and its final interleaved
re-measurement. Per phase: configs timed per minute of that span (issue 17's target: two GPUs at least 1.7x one),
and the seconds from the span's start to the first config timed within 2% of the best any phase timed; ``both``
and ``two`` against ``one``: the spans' ratio and the configs-per-minute ratio. The script also checks that no
config was timed twice in a study. One JSON file, ``DIR/two_gpus.json``, holds every phase; the CLI output of
each process is in ``DIR/<phase>-<gpus>.log`` (``both-0_1.log``). The exit status counts the failures: a process
that failed, a config timed twice, a kill phase that did not resume.

``--interpret`` runs the phases under ``TRITON_INTERPRET=1`` on a CPU (the small test
space; the spans mean nothing; a worker per ``--gpus`` entry, on the CPU) to check the script. ``--second-gpu 0`` on a one-GPU
machine runs the two-worker phases with both workers on GPU 0: the driver's two-worker paths and the kill and
resume checked on a real GPU, their rates meaning nothing.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _env() -> dict:
    """The kernelrules this script imports is the one the CLI runs."""
    import kernelrules

    env = dict(os.environ)
    root = str(Path(kernelrules.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _command(args, storage: Path, gpu: str, seed: int) -> list[str]:
    cmd = [sys.executable, "-m", "kernelrules", "tune", str(args.space), "--trials", str(args.trials),
           "--storage", str(storage), "--study-name", "two-gpus", "--seed", str(seed), "--json",
           "--rounds", "2", "--top-k", "3", "--cache-dir", str(storage.parent / "compile-cache")]
    if args.arch:
        cmd += ["--arch", args.arch]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    return cmd + ["--gpus", gpu] + (["--interpret"] if args.interpret else [])


#: Record statuses that do not count towards ``--trials`` (the study's distinct configs judged: rejected, failed
#: or timed).
UNJUDGED = ("interrupted", "running", "waiting", "over_budget", "duplicate")


def run_phase(args, name: str, gpus: list[str], kill_after: int | None = None) -> dict:
    """Run one process per entry of ``gpus`` (its ``--gpus``: ``"0"``, ``"0,1"``) on one fresh study; the loop's
    span and what the study holds. With ``kill_after``, the last process is killed once the study holds that many
    finished trials, and started again."""
    folder = Path(args.out) / name
    folder.mkdir(parents=True, exist_ok=True)
    storage = folder / "study.db"
    started = time.time()
    procs = [_start(args, name, storage, gpu, index) for index, gpu in enumerate(gpus)]
    killed = None
    if kill_after is not None:
        killed = _kill_when(storage, kill_after, procs[-1][0], started + args.phase_timeout)
        procs[-1][1].close()
        procs[-1] = _start(args, name, storage, gpus[-1], len(gpus) - 1, mode="a")  # the same command again
    codes = []
    for proc, log in procs:
        try:
            codes.append(proc.wait(timeout=max(1.0, started + args.phase_timeout - time.time())))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(None)
        log.close()
    wall = time.time() - started
    facts = dict(study_facts(storage), phase=name, gpus=gpus, exit_codes=codes, wall_s=round(wall, 1))
    if kill_after is not None:
        logs = " ".join(_log_path(args, name, gpu).read_text(errors="replace") for gpu in gpus)
        facts.update(killed_after_trials=killed, resumed_noted="queued again" in logs,
                     reached_trials=facts["judged_configs"] >= args.trials)
    return facts


def _start(args, name: str, storage: Path, gpu: str, seed: int, mode: str = "w"):
    """One ``kernelrules tune`` process on the phase's study, its output in ``<phase>-<gpu>.log``."""
    log = open(_log_path(args, name, gpu), mode)
    proc = subprocess.Popen(_command(args, storage, gpu, seed=seed), stdout=log, stderr=subprocess.STDOUT,
                            cwd=str(storage.parent), env=_env())
    return proc, log


def _log_path(args, name: str, gpu: str) -> Path:
    """A process's output: ``<phase>-<gpus>.log``, the GPUs joined by ``_`` (no comma in a file name)."""
    return Path(args.out) / f"{name}-{gpu.replace(',', '_')}.log"


def _kill_when(storage: Path, finished: int, proc: subprocess.Popen, deadline: float) -> int | None:
    """SIGKILL ``proc`` once the study holds ``finished`` finished trials (or its process ended, or the deadline
    passed: then nothing is killed); the count seen when it was killed."""
    while time.time() < deadline and proc.poll() is None:
        count = _finished_trials(storage)
        if count >= finished:
            proc.kill()
            proc.wait()
            return count
        time.sleep(0.2)
    return None


def _finished_trials(storage: Path) -> int:
    """Trials the study file holds as COMPLETE or PRUNED so far (0 before the study exists)."""
    import sqlite3

    if not storage.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{storage}?mode=ro", uri=True, timeout=1.0) as db:
            return db.execute("SELECT COUNT(*) FROM trials WHERE state IN ('COMPLETE', 'PRUNED')").fetchone()[0]
    except sqlite3.Error:  # the study's tables not made yet, or the file busy: look again
        return 0


def study_facts(storage: Path) -> dict:
    """The loop's span, the statuses, and any config timed more than once."""
    import optuna

    from kernelrules.tune.study import load_records

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name="two-gpus", storage=f"sqlite:///{storage}")
    trials = [t for t in study.get_trials(deepcopy=False) if t.datetime_start and t.datetime_complete]
    span = None
    if trials:
        first = min(t.datetime_start for t in trials)
        last = max(t.datetime_complete for t in trials)
        span = round((last - first).total_seconds(), 1)
    records = load_records(study)
    timed = collections.Counter(json.dumps(r["config"], sort_keys=True) for r in records
                                if r.get("status") in ("better", "slower"))
    ends = {t.number: (t.datetime_complete - first).total_seconds() for t in trials} if trials else {}
    timings = sorted((round(ends[r["trial"]], 2), r["ms"]) for r in records
                     if r.get("status") in ("better", "slower") and r.get("ms") and r["trial"] in ends)
    judged = {json.dumps(r["config"], sort_keys=True) for r in records if r.get("status") not in UNJUDGED}
    return {"loop_span_s": span, "trials": len(records), "judged_configs": len(judged), "timed_at": timings,
            "timed_per_minute": round(len(timings) / span * 60.0, 1) if span else None,
            "statuses": dict(collections.Counter(r.get("status") for r in records)),
            "timed_configs": len(timed), "timed_twice": [json.loads(k) for k, n in timed.items() if n > 1],
            "best_ms": min((r["ms"] for r in records if r.get("status") in ("better", "slower") and r.get("ms")),
                           default=None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--space", default=None)
    parser.add_argument("--trials", type=int, default=48)
    parser.add_argument("--arch", default=None)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--phase-timeout", type=float, default=280.0)
    parser.add_argument("--phases", default="one,both,kill", help="a comma list of one, both, two, kill")
    parser.add_argument("--kill-after", type=int, default=None,
                        help="kill phase: finished trials before the kill (default: a third of --trials)")
    parser.add_argument("--interpret", action="store_true")
    parser.add_argument("--second-gpu", default="1", metavar="ID",
                        help="the second GPU; 0 on a one-GPU machine checks the two-worker paths and the kill and "
                             "resume on a real GPU (both workers share it: the rates mean nothing)")
    args = parser.parse_args()
    if args.space is None:
        args.space = REPO / ("tests/fixtures/tune/matmul_small.yaml" if args.interpret else "examples/matmul.tune.yaml")
    args.space = Path(args.space).resolve()
    if args.kill_after is None:
        args.kill_after = max(1, args.trials // 3)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    second = args.second_gpu
    phases = {"one": ["0"], "both": [f"0,{second}"], "two": ["0", second], "kill": [f"0,{second}"]}
    results = []
    for name in args.phases.split(","):
        print(f"== {name}: {len(phases[name])} process(es), {args.trials} trials", flush=True)
        kill_after = args.kill_after if name == "kill" else None
        results.append(run_phase(args, name, phases[name], kill_after=kill_after))
        print("   " + json.dumps({k: results[-1].get(k) for k in ("loop_span_s", "wall_s", "timed_per_minute",
                                                                      "statuses", "timed_twice", "exit_codes",
                                                                      "killed_after_trials", "resumed_noted",
                                                                      "reached_trials")
                                  if k in results[-1]}), flush=True)
    out = {"trials": args.trials, "space": args.space.name, "interpret": args.interpret,
           "second_gpu": args.second_gpu, "phases": results}
    out.update(compare_phases(results))
    for key in sorted(k for k in out if k.startswith(("speed_up_", "rate_ratio_"))):
        label = "loop span" if key.startswith("speed_up_") else "configs timed per minute"
        shared = args.interpret or args.second_gpu == "0"
        print(f"{key.rsplit('_', 1)[1]} over one ({label}): {out[key]}x"
              + ("  (one GPU or --interpret: meaningless)" if shared else ""))
    for r in results:
        print(f"{r['phase']}: first config within 2% of the best at {r.get('within_2pct_s')} s of its loop")
    Path(args.out, "two_gpus.json").write_text(json.dumps(out, indent=1, default=str))
    sys.exit(problems(results))


def compare_phases(results: list[dict]) -> dict:
    """Each phase's seconds to its first config within 2% of the best any phase timed (set in place); and each
    two-GPU phase (``both``, ``two``) against ``one``: the loop spans' ratio (``speed_up_<phase>``) and the
    configs-per-minute ratio (``rate_ratio_<phase>``)."""
    best = min((ms for r in results for _, ms in r.get("timed_at") or []), default=None)
    for r in results:
        r["within_2pct_s"] = next((at for at, ms in r.get("timed_at") or [] if best and ms <= 1.02 * best), None)
    out: dict = {"best_ms": best}
    by = {r["phase"]: r for r in results}
    one = by.get("one") or {}
    for name in ("both", "two"):
        other = by.get(name) or {}
        if one.get("loop_span_s") and other.get("loop_span_s"):
            out[f"speed_up_{name}"] = round(one["loop_span_s"] / other["loop_span_s"], 2)
        if one.get("timed_per_minute") and other.get("timed_per_minute"):
            out[f"rate_ratio_{name}"] = round(other["timed_per_minute"] / one["timed_per_minute"], 2)
    return out


def problems(results: list[dict]) -> int:
    """The exit status: one per process that failed, per config timed twice, and per kill phase that killed
    nothing, whose interrupted trials no process queued again, or whose study fell short of its trials."""
    count = sum(1 for r in results for c in r["exit_codes"] if c != 0) + sum(len(r["timed_twice"]) for r in results)
    for r in results:
        if "killed_after_trials" in r and not (r["killed_after_trials"] is not None and r["resumed_noted"]
                                               and r["reached_trials"]):
            count += 1
    return count


if __name__ == "__main__":
    main()
