"""The arguments of ``suite_live_device.sh``: every suite problem with its sweep's best time.

    python benchmarks/suite_live_targets.py [--after NAME] [--count N] [--only NAME ...] [--missing-from DIR ...]
    python benchmarks/suite_live_targets.py --best-config family__shape

Prints ``family/shape=best_ms`` items in the problems' alphabetical order, from the committed
sweep results (``benchmarks/results/suite/``). A series of live runs that spans device calls
(or sessions) resumes with ``--after`` the last problem it ran; ``--only`` picks problems;
``--missing-from`` leaves out the problems that like-for-like series folders (``suite_live_pairs.sh``) already hold
with both their runs (a series continued on another day or another GPU kind: name that kind's folders only).
``--best-config`` prints one problem's best config as JSON (``suite_live_tune.sh`` times it
in each run, outside the budget).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_live_vs_tpe import load_pairs  # noqa: E402
from suite_report import all_metrics, load  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", default="", help="start after this problem (family__shape)")
    parser.add_argument("--count", type=int, default=None)
    parser.add_argument("--only", nargs="+", default=None, help="only these problems (family__shape)")
    parser.add_argument("--missing-from", nargs="+", type=Path, default=[], metavar="DIR",
                        help="leave out the problems these like-for-like series folders hold with both runs")
    parser.add_argument("--best-config", default=None, metavar="NAME", help="print this problem's best config as JSON")
    args = parser.parse_args()
    metrics = all_metrics(load())
    if args.best_config:
        best = next((m["best_config"] for m in metrics if m["problem"] == args.best_config), None)
        if best is None:
            print(f"no timed config for {args.best_config}", file=sys.stderr)
            return 1
        print(json.dumps(best))
        return 0
    done = set(load_pairs(args.missing_from)[0]) if args.missing_from else set()
    items = [(m["problem"], m["best_ms"]) for m in metrics if m["best_ms"] and m["problem"] not in done]
    items = sorted(item for item in items if item[0] > args.after and (args.only is None or item[0] in args.only))
    items = items[:args.count]
    print(" ".join(f"{name.replace('__', '/')}={best:.6g}" for name, best in items))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
