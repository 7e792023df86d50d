"""How long ``kernelrules tune`` takes to time its first config: start-up, before and after a change.

    python benchmarks/bench_tune_startup.py [--repeat 5] [--before REV] [--space FILE] [--arch hopper]
        [--trials 1] [--lookahead N]

Each run is a fresh process with empty Triton and kernelrules caches that tunes one
trial (``--trials``) of the space under ``TRITON_INTERPRET=1`` (the rules gate at the compiled stage,
cross-compiling for ``--arch``) and reports the first record's ``elapsed_s`` (and the first timed record's, ``first_timed_s``, and how long the
first config sent to the worker waited there after it was asked for, ``first_sent_wait_s``): the study,
the judging of the whole space (probe compiles included), the benchmark worker's start
and the first candidate's compile and check. ``--before REV`` adds the same measurement
with the kernelrules of commit REV, interleaved, so the two are compared in one run.
``--trials`` and ``--lookahead`` run more trials with a larger lookahead than this machine's compile workers give
(the loop's first send waited for the whole lookahead's asks before 2026-12-04's change). CPU figures: on a GPU
machine the worker's start (a CUDA build of torch, the GPU's set-up)
takes longer, so overlapping it saves more there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_autotune_overhead import extract  # noqa: E402

CHILD = """
import json, sys
from kernelrules.tune import tune
extra = json.loads(sys.argv[5])
result = tune(sys.argv[1], arch=sys.argv[2], interpret=True, storage=sys.argv[3], stage="compiled",
              cache_dir=sys.argv[4], top_k=1, rounds=1, **extra)
first = min(r["elapsed_s"] for r in result.records if r.get("elapsed_s") is not None)
timed = sorted((r for r in result.records if r["status"] in ("better", "slower")), key=lambda r: r["elapsed_s"])
sent = [r for r in result.records if r.get("sent_s") is not None and r.get("asked_s") is not None]
first_sent = min(sent, key=lambda r: r["sent_s"]) if sent else None
print(json.dumps({"first_record_s": first, "status": result.records[0]["status"],
                  "first_timed_s": timed[0]["elapsed_s"] if timed else None,
                  "first_sent_wait_s": round(first_sent["sent_s"] - first_sent["asked_s"], 3) if first_sent else None,
                  "startup": result.summary.get("startup"), "worker_startup": result.summary.get("worker_startup")}))
"""


def measure(root: str | None, args) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, TRITON_CACHE_DIR=f"{folder}/triton", KERNELRULES_CACHE_DIR=f"{folder}/kr",
                   PYTHONUNBUFFERED="1")
        if root:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        extra = {"trials": args.trials, "model_seeds": 1 if args.trials == 1 else min(8, args.trials)}
        if args.lookahead is not None:
            extra["lookahead"] = args.lookahead
        proc = subprocess.run([sys.executable, "-c", CHILD, str(args.space), args.arch, f"{folder}/study.db",
                               f"{folder}/cache", json.dumps(extra)], env=env, capture_output=True, text=True, cwd=folder, timeout=600)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise SystemExit(f"the run failed:\n{proc.stderr[-3000:]}")
        return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--space", type=Path, default=REPO / "tests" / "fixtures" / "tune" / "matmul_small.yaml")
    parser.add_argument("--arch", default="hopper")
    parser.add_argument("--trials", type=int, default=1, help="trials per run (more than the lookahead to see it)")
    parser.add_argument("--lookahead", type=int, default=None,
                        help="candidates kept ahead of the GPU (default: one per compile worker; the H200 machine has 15)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tree:
        modes = {"head": None}
        if args.before:
            modes["before"] = extract(args.before, Path(tree))
        times: dict[str, list[float]] = {m: [] for m in modes}
        timed: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(args.repeat):
            for mode, root in modes.items():
                record = measure(root, args)
                times[mode].append(record["first_record_s"])
                if record.get("first_timed_s") is not None:
                    timed[mode].append(record["first_timed_s"])
                print(json.dumps({"mode": mode, **record}), flush=True)
    summary = {m: round(statistics.median(t), 2) for m, t in times.items()}
    line = {"summary": True, "repeat": args.repeat, "cpu_count": os.cpu_count(), "median_first_record_s": summary,
            "median_first_timed_s": {m: round(statistics.median(t), 2) for m, t in timed.items() if t}}
    if "before" in summary:
        line["before_commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.before],
                                               capture_output=True, text=True).stdout.strip()
        line["saved_s"] = round(summary["before"] - summary["head"], 2)
    print(json.dumps(line))


if __name__ == "__main__":
    main()
