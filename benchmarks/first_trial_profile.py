"""Where a benchmark worker's first trial spends its seconds: profile the worker's steps on a GPU machine.

    python benchmarks/first_trial_profile.py SPACE [--host-modules warm|cold] [--top 25] [--json OUT]

On the H200 the first timed trial of a live run spends 0.5-0.8 s in its check, every later trial 0.12 s or
less (benchmarks/results/suite/ab-3f72e1d-6462d7d): a one-time cost of the worker's process. This script finds
it. A first process tunes one trial of SPACE (``kernelrules.tune.tune``, ``trials=1``), as a live run starts:
the gate compiles the first seed into the study's shared Triton cache and the worker builds Triton's host
modules (its CUDA helper, the kernel's launchers). Then this process does what a benchmark worker does, step
by step, in the same Triton cache: import torch, check the reference, warm up (``_Session.warm``), then
evaluate the first run's trial 0 config under cProfile, and a second time (a later trial's cost, with
everything loaded). ``--host-modules cold`` empties the host-module store and removes the host modules from
the Triton cache first (a machine's first run of a kernel signature); ``warm`` keeps them (a later run).

Prints one JSON line: the steps' seconds, the first and second evaluate's ``phase_seconds``, and the
functions with the most cumulative time in the warm-up and in the first evaluate.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys
from kernelrules.tune import tune
extra = json.loads(sys.argv[4])
result = tune(sys.argv[1], storage=sys.argv[2], cache_dir=sys.argv[3], trials=1, top_k=1, rounds=1, **extra)
first = min((r for r in result.records if r.get("ms")), key=lambda r: r["elapsed_s"])
print(json.dumps({"config": first["config"], "phase_seconds": first.get("phase_seconds")}))
"""


class _Conn:
    """The worker's pipe to its driver: here nobody listens."""

    def send(self, message: object) -> None:
        pass


def first_run(space: Path, folder: Path, interpret: bool) -> dict:
    """Tune one trial in a fresh process; its trial 0 config and phases."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    extra = {"interpret": True, "arch": "hopper"} if interpret else {}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(space), str(folder / "study.db"), str(folder / "kr"),
                           json.dumps(extra)],
                          env=env, capture_output=True, text=True, timeout=300,
                          cwd=folder)  # not the checkout: its kernelrules/ would shadow the installed package
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"the first run failed:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def forget_host_modules(folder: Path) -> int:
    """Remove every host module from the run's Triton cache and empty the store; how many were removed."""
    from kernelrules.tune.host_modules import host_module_files, store_for

    cache = folder / "triton-cache"
    removed = 0
    for key, name in list(host_module_files(cache)):
        (cache / key / name).unlink(missing_ok=True)
        removed += 1
    shutil.rmtree(store_for(folder / "kr"), ignore_errors=True)
    return removed


def top(profile: cProfile.Profile, count: int) -> list[str]:
    """The ``count`` functions with the most cumulative time, one line each."""
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(count)
    lines = [line.strip() for line in out.getvalue().splitlines() if line.strip() and line.strip()[0].isdigit()]
    return [re.sub(r"\S*/(site-packages|lib/python3\.\d+)/", "", line).replace(f"{REPO}/", "") for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("space", type=Path)
    parser.add_argument("--host-modules", choices=("warm", "cold"), default="warm")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON line here")
    parser.add_argument("--interpret", action="store_true", help="TRITON_INTERPRET=1 (a CPU check of the script; "
                        "its seconds mean nothing)")
    args = parser.parse_args()
    space = args.space.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        first = first_run(space, folder, args.interpret)
        removed = forget_host_modules(folder) if args.host_modules == "cold" else 0
        os.environ["TRITON_CACHE_DIR"] = str(folder / "triton-cache")  # before torch or Triton is imported
        from kernelrules.space import load_space
        from kernelrules.tune.bench_process import _Session
        from kernelrules.tune.host_modules import share_host_modules, store_for
        from kernelrules.tune.problem import load_problem
        from kernelrules.tune.worker import WorkerSettings

        if args.interpret:
            os.environ["TRITON_INTERPRET"] = "1"
        settings = WorkerSettings(spec=load_problem(load_space(space)), gpu=None if args.interpret else "0",
                                  interpret=args.interpret, triton_cache_dir=str(folder / "triton-cache"),
                                  host_module_store=str(store_for(folder / "kr")))
        share_host_modules(settings, into_study=True)
        steps: dict[str, float] = {}
        began = time.perf_counter()
        session = _Session(settings, _Conn())
        steps["torch_imported"] = time.perf_counter() - began
        session.check_reference()
        steps["reference_checked"] = time.perf_counter() - began
        session.harness_edges()
        steps["ready"] = time.perf_counter() - began
        warm = cProfile.Profile()
        warm.runcall(session.warm)
        steps["warmed"] = time.perf_counter() - began
        evaluate = cProfile.Profile()
        result = evaluate.runcall(session.evaluate, first["config"])
        steps["first_evaluated"] = time.perf_counter() - began
        again = session.evaluate(first["config"])
        steps["second_evaluated"] = time.perf_counter() - began
    line = {"space": args.space.as_posix(), "host_modules": args.host_modules, "host_modules_removed": removed,
            "first_run_phase_seconds": first["phase_seconds"], "config": first["config"],
            "steps_s": {k: round(v, 3) for k, v in steps.items()}, "status": result.get("status"),
            "first_phase_seconds": result.get("phase_seconds"), "second_phase_seconds": again.get("phase_seconds"),
            "warm_top": top(warm, args.top), "first_evaluate_top": top(evaluate, args.top)}
    text = json.dumps(line)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
