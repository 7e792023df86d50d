"""Several problems in one ``kernelrules tune`` process (``tune_many``): how soon each problem's worker and first timing come.

    python benchmarks/bench_tune_many.py [--arch hopper] [--trials 3] [--interpret] SPACE [SPACE ...]

One fresh process with empty Triton and kernelrules caches tunes the spaces in turn (``tune_many``: the benchmark
workers and the compile pool of the first problem serve the next) and prints, per problem, on that problem's own
clock: when its benchmark worker was ready (``worker_startup.ready_s``), when the driver had the workers ready
(``startup.workers_ready_s``), when its first config was sent to a worker (and whether it was the first guess, sent
before the space was judged: ``first_guess_sent_s``) and when it was timed. Under ``--interpret`` (the CPU) the timings of
the kernels mean nothing, only the start-up marks do. Prints one JSON line per problem.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, sys
from kernelrules.tune import tune_many
spaces, options = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for space, result in zip(spaces, tune_many(spaces, **options)):
    timed = sorted(r["elapsed_s"] for r in result.records if r["status"] in ("better", "slower"))
    sent = sorted(r["sent_s"] for r in result.records if r.get("sent_s") is not None)
    print(json.dumps({"space": space, "worker_ready_s": result.summary["worker_startup"].get("ready_s"),
                      "workers_ready_s": result.summary["startup"].get("workers_ready_s"),
                      "space_judged_s": result.summary["startup"].get("space_judged_s"),
                      "first_guess_sent_s": result.summary["startup"].get("first_guess_sent_s"),
                      "first_sent_s": sent[0] if sent else None,
                      "first_timed_s": timed[0] if timed else None}), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spaces", nargs="+", type=Path)
    parser.add_argument("--arch", default="hopper")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--interpret", action="store_true")
    parser.add_argument("--jobs", type=int, help="compile workers (the first guess is timed early with 4 or more)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, TRITON_CACHE_DIR=f"{folder}/triton", KERNELRULES_CACHE_DIR=f"{folder}/kr",
                   PYTHONUNBUFFERED="1")
        spaces = [str(p.resolve()) for p in args.spaces]
        options = {"arch": args.arch, "interpret": args.interpret, "trials": args.trials, "top_k": 1, "rounds": 1,
                   "study_dir": folder, "cache_dir": f"{folder}/cache", **({"jobs": args.jobs} if args.jobs else {})}
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spaces), json.dumps(options)], env=env,
                              capture_output=True, text=True, cwd=folder, timeout=3600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or len(lines) != len(spaces):
        raise SystemExit(f"the run failed:\n{proc.stderr[-3000:]}")
    root = str(Path(__file__).resolve().parent.parent) + os.sep
    for line in lines:  # paths relative to the repository: no machine's path in the output
        print(line.replace(root, ""))


if __name__ == "__main__":
    main()
