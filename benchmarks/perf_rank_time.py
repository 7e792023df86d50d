"""How long the perf model takes to rank a space's configs, against another commit, in fresh processes.

    python benchmarks/perf_rank_time.py [--before REV] [--arch h200] [--repeats 3] [SPACE ...]

``kernelrules tune`` ranks every config of a new study's space with the perf model
(:func:`kernelrules.tune.options.perf_model_seeds`, ``estimate_any`` per config) before its first guesses compile,
and again with the resource model once the space is judged: both on the way to the first timing. For each space
(default: every suite problem), a fresh process outside the repository ranks its configs without a resource model,
as the first guesses are ranked, ``--repeats`` times; ``--before REV`` does the same with the kernelrules of commit REV
in the same run (two processes a commit, in the order now, REV, REV, now). Prints, per space, the first and the median
of the later rankings' milliseconds for each commit and their ratio, whether the two commits' estimates are equal config by config, then the totals. CPU only.
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

CHILD = r"""
import json, sys, time
from kernelrules.arch import load_arch
from kernelrules.predict.perf_general import estimate_any
from kernelrules.space import load_space
from kernelrules.tune.options import perf_model_seeds

arch, repeats = load_arch(sys.argv[1]), int(sys.argv[2])
out = []
for path in sys.argv[3:]:
    space = load_space(path)
    configs, problem = list(space.configs()), dict(space.problem)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        perf_model_seeds(configs, arch, problem, 16)
        times.append(time.perf_counter() - started)
    estimates = {}
    for config in configs:
        try:
            estimates[json.dumps(config.to_dict(), sort_keys=True)] = estimate_any(config, arch, problem)
        except Exception as exc:  # noqa: BLE001
            estimates[json.dumps(config.to_dict(), sort_keys=True)] = type(exc).__name__
    out.append({"space": path, "configs": len(configs), "seconds": times, "estimates": estimates})
print(json.dumps(out))
"""


def rank(root: str | None, spaces: list[Path], arch: str, repeats: int, cwd: Path) -> list[dict]:
    """One fresh process for all spaces (outside the repository, so ``PYTHONPATH`` picks the kernelrules measured)."""
    env = dict(os.environ)
    if root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", CHILD, arch, str(repeats), *map(str, spaces)], env=env,
                          capture_output=True, text=True, timeout=1800, cwd=cwd)
    if proc.returncode:
        raise SystemExit(f"the child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def merge(first: list[dict], second: list[dict]) -> list[dict]:
    """Two processes' runs of the same spaces as one: each process's first ranking pays the imports, so the first
    process's first ranking leads and every later ranking of either counts as a later one."""
    merged = []
    for a, b in zip(first, second):
        if a["estimates"] != b["estimates"]:
            raise SystemExit(f"{a['space']}: the same commit estimated differently in two processes")
        merged.append({**a, "seconds": a["seconds"] + b["seconds"][1:]})
    return merged


def name(path: str) -> str:
    p = Path(path)
    return f"{p.parent.name}__{p.name.removesuffix('.tune.yaml')}"


def later_ms(run: dict) -> float:
    """The median of the rankings after the first (the first pays the imports), in milliseconds."""
    return statistics.median(run["seconds"][1:] or run["seconds"]) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spaces", nargs="*", type=Path)
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spaces = [p.resolve() for p in args.spaces] or sorted((REPO / "benchmarks" / "suite").glob("*/*.tune.yaml"))
    with tempfile.TemporaryDirectory() as temporary:
        tree = Path(temporary)
        if args.before:  # two processes each, in the order head, before, before, head: neither goes first only
            root = extract(args.before, tree)
            head_a = rank(None, spaces, args.arch, args.repeats, tree)
            before_a = rank(root, spaces, args.arch, args.repeats, tree)
            before = merge(before_a, rank(root, spaces, args.arch, args.repeats, tree))
            head = merge(rank(None, spaces, args.arch, args.repeats, tree), head_a)
        else:
            head, before = rank(None, spaces, args.arch, args.repeats, tree), None
    totals = {"head": 0.0, "before": 0.0}
    unequal = 0
    for i, run in enumerate(head):
        line = {"space": name(run["space"]), "configs": run["configs"], "first_ms": round(run["seconds"][0] * 1e3, 1),
                "later_ms": round(later_ms(run), 1)}
        totals["head"] += later_ms(run)
        if before is not None:
            old = before[i]
            totals["before"] += later_ms(old)
            same = old["estimates"] == run["estimates"]
            unequal += not same
            line.update(before_first_ms=round(old["seconds"][0] * 1e3, 1), before_later_ms=round(later_ms(old), 1),
                        ratio=round(later_ms(old) / later_ms(run), 2), same_estimates=same)
        print(json.dumps(line), flush=True)
    if before is not None:
        print(f"{len(head)} spaces: ranking {totals['before']:.0f} ms at {args.before}, {totals['head']:.0f} ms now "
              f"(sum of the later rankings' medians): {totals['before'] / totals['head']:.2f}x; estimates differ in "
              f"{unequal} spaces")
    else:
        print(f"{len(head)} spaces: ranking {totals['head']:.0f} ms (sum of the later rankings' medians)")


if __name__ == "__main__":
    main()
