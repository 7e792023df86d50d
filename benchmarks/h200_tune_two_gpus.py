"""Two ``kernelrules tune`` workers on one study, one per GPU, against one worker alone.

Run on a machine with two GPUs from any folder (kernelrules installed, with optuna):

    python3 benchmarks/h200_tune_two_gpus.py --out DIR [--trials 60] [--arch h200] [--jobs 14]

Both phases tune the same space (``examples/matmul.tune.yaml``: fp16 matmul, 4096^3, 1875
configs) to the same number of trials, each in a fresh SQLite study with an empty Triton
cache:

* ``one``: one ``kernelrules tune --gpus 0`` process;
* ``two``: two processes started together on the same study file, ``--gpus 0`` and
  ``--gpus 1``, with different sampler seeds (Optuna's distributed mode: each process asks
  the shared study for its next trial).

``--trials N`` counts the whole study's trials, so both phases judge N configs. The span
measured is the loop's: from the first trial's start to the last trial's end (Optuna's
timestamps), which leaves out each process's start-up and its final interleaved
re-measurement. The script also checks that no config was timed twice in the shared
study. One JSON file, ``DIR/two_gpus.json``, holds both phases; the CLI output of each
process is in ``DIR/<phase>-<gpu>.log``.

``--interpret`` runs both phases under ``TRITON_INTERPRET=1`` on a CPU (the small test
space; the spans mean nothing) to check the script.
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
    return cmd + (["--interpret"] if args.interpret else ["--gpus", gpu])


def run_phase(args, name: str, gpus: list[str]) -> dict:
    """Run one process per GPU on one fresh study; the loop's span and what the study holds."""
    folder = Path(args.out) / name
    folder.mkdir(parents=True, exist_ok=True)
    storage = folder / "study.db"
    started = time.time()
    procs = []
    for index, gpu in enumerate(gpus):
        log = open(Path(args.out) / f"{name}-{gpu}.log", "w")
        procs.append((subprocess.Popen(_command(args, storage, gpu, seed=index), stdout=log,
                                       stderr=subprocess.STDOUT, cwd=str(folder), env=_env()), log))
    codes = []
    for proc, log in procs:
        try:
            codes.append(proc.wait(timeout=args.phase_timeout))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(None)
        log.close()
    wall = time.time() - started
    return dict(study_facts(storage), phase=name, gpus=gpus, exit_codes=codes, wall_s=round(wall, 1))


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
    return {"loop_span_s": span, "trials": len(records),
            "statuses": dict(collections.Counter(r.get("status") for r in records)),
            "timed_configs": len(timed), "timed_twice": [json.loads(k) for k, n in timed.items() if n > 1],
            "best_ms": min((r["ms"] for r in records if r.get("status") in ("better", "slower") and r.get("ms")),
                           default=None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--space", default=None)
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--arch", default=None)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--phase-timeout", type=float, default=280.0)
    parser.add_argument("--phases", default="one,two")
    parser.add_argument("--interpret", action="store_true")
    args = parser.parse_args()
    if args.space is None:
        args.space = REPO / ("tests/fixtures/tune/matmul_small.yaml" if args.interpret else "examples/matmul.tune.yaml")
    args.space = Path(args.space).resolve()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    phases = {"one": ["0"], "two": ["0", "1"]}
    results = []
    for name in args.phases.split(","):
        print(f"== {name}: {len(phases[name])} process(es), {args.trials} trials", flush=True)
        results.append(run_phase(args, name, phases[name]))
        print("   " + json.dumps({k: results[-1][k] for k in ("loop_span_s", "wall_s", "statuses", "timed_twice",
                                                                  "exit_codes")}), flush=True)
    out = {"trials": args.trials, "space": args.space.name, "interpret": args.interpret, "phases": results}
    spans = {r["phase"]: r["loop_span_s"] for r in results}
    if spans.get("one") and spans.get("two"):
        out["speed_up"] = round(spans["one"] / spans["two"], 2)
        print(f"speed-up of two workers over one (loop span): {out['speed_up']}x"
              + ("  (--interpret: meaningless)" if args.interpret else ""))
    Path(args.out, "two_gpus.json").write_text(json.dumps(out, indent=1, default=str))
    sys.exit(sum(1 for r in results for c in r["exit_codes"] if c != 0) + sum(len(r["timed_twice"]) for r in results))


if __name__ == "__main__":
    main()
