"""How long a ``kernelrules tune`` benchmark worker takes to import its own code, before and after a change.

    python benchmarks/worker_import_time.py [--repeat 15] [--before REV] [--space FILE]

The benchmark worker (``python -m kernelrules.tune.bench_process FD``) imports its module and unpickles its
settings (a ``ProblemSpec`` among them) before it imports torch: on a GPU machine that is the first link of the
longest chain to a run's first timing (docs/performance.md). Each measurement is a fresh interpreter that does
exactly that (the settings pickled beforehand by the same kernelrules), timed from the parent around the whole
process, so the interpreter's own start is in both figures. ``--before REV`` adds the same with the kernelrules of
commit REV, interleaved. Prints one JSON line per process, then the medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_autotune_overhead import extract  # noqa: E402

PICKLE = """
import pickle, sys
from kernelrules.space import load_space
from kernelrules.tune.problem import load_problem
from kernelrules.tune.worker import WorkerSettings
sys.stdout.buffer.write(pickle.dumps(WorkerSettings(spec=load_problem(load_space(sys.argv[1])), interpret=True)))
"""

CHILD = """
import pickle, sys
import kernelrules.tune.bench_process
settings = pickle.loads(sys.stdin.buffer.read())
print(",".join(m for m in ("lark", "jsonschema", "yaml", "kernelrules.space") if m in sys.modules))
"""


def environment(root: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def measure(root: str | None, blob: bytes, cwd: str) -> dict:
    """One fresh worker-like process: wall seconds and the heavy modules it loaded (run outside the repository:
    ``python -c`` puts the working directory first on ``sys.path``, before ``PYTHONPATH``)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD], input=blob, env=environment(root), capture_output=True,
                          timeout=120, cwd=cwd)
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"the child failed:\n{proc.stderr.decode()[-3000:]}")
    return {"seconds": round(seconds, 4), "heavy": [m for m in proc.stdout.decode().strip().split(",") if m]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--space", type=Path, default=REPO / "benchmarks" / "suite" / "softmax" / "small.tune.yaml")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tree:
        modes: dict[str, str | None] = {"head": None}
        if args.before:
            modes["before"] = extract(args.before, Path(tree))
        blobs = {mode: subprocess.run([sys.executable, "-c", PICKLE, str(args.space.resolve())], env=environment(root),
                                      capture_output=True, check=True, cwd=tree).stdout for mode, root in modes.items()}
        times: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(args.repeat):
            for mode, root in modes.items():
                record = measure(root, blobs[mode], tree)
                times[mode].append(record["seconds"])
                print(json.dumps({"mode": mode, **record}), flush=True)
    line: dict = {"summary": True, "repeat": args.repeat, "cpu_count": os.cpu_count(),
                  "median_s": {m: round(statistics.median(t), 4) for m, t in times.items()}}
    if "before" in times:
        line["before_commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.before],
                                               capture_output=True, text=True).stdout.strip()
        line["saved_s"] = round(line["median_s"]["before"] - line["median_s"]["head"], 4)
        line["ratio_before_over_head"] = round(line["median_s"]["before"] / line["median_s"]["head"], 2)
    print(json.dumps(line))


if __name__ == "__main__":
    main()
