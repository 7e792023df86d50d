"""Compare two replays of the suite (``suite_replay.py --out``): kernelrules' time to within 2%, problem by problem.

    python benchmarks/suite_replay_compare.py A.json B.json [--strategy kernelrules]

Prints a Markdown table of the problems whose median time differs, then for each file: the geometric mean of the
strategy's times, its slowest problem, how many problems took over 5 s and 15 s, and its geometric-mean ratio
against TPE (the file's own TPE replay: both files replay TPE with the same seeds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def describe(label: str, problems: dict, strategy: str) -> str:
    times = {n: p[strategy] for n, p in problems.items() if p.get(strategy)}
    slowest = max(times, key=times.get)
    missing = len(problems) - len(times)
    ratios = [p["tpe"] / p[strategy] for p in problems.values() if p.get("tpe") and p.get(strategy)]
    return (f"{label}: geometric mean {statistics.geometric_mean(times.values()):.2f} s over {len(times)} problems"
            f"{f' ({missing} not reached)' if missing else ''}; slowest {slowest} {times[slowest]:.1f} s; "
            f"over 5 s: {sum(t > 5 for t in times.values())}, over 15 s: {sum(t > 15 for t in times.values())}; "
            f"{statistics.geometric_mean(ratios):.1f}x sooner than TPE (geometric mean over {len(ratios)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--strategy", default="kernelrules")
    args = parser.parse_args()
    a, b = (json.loads(p.read_text()) for p in (args.a, args.b))
    labels = [f"{p.stem} ({d.get('model_seeds', '?')} seeds)" for p, d in ((args.a, a), (args.b, b))]
    print(f"| problem | {labels[0]} | {labels[1]} | TPE |")
    print("|---|---:|---:|---:|")
    for name in sorted(set(a["problems"]) & set(b["problems"])):
        x, y = a["problems"][name].get(args.strategy), b["problems"][name].get(args.strategy)
        if x != y:
            show = [f"{v:.1f} s" if v else "not reached" for v in (x, y, b["problems"][name].get("tpe"))]
            print(f"| {name} | {' | '.join(show)} |")
    print()
    for label, data in zip(labels, (a, b)):
        print("- " + describe(label, data["problems"], args.strategy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
