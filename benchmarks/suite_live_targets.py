"""The arguments of ``suite_live_device.sh``: every suite problem with its sweep's best time.

    python benchmarks/suite_live_targets.py [--after NAME] [--count N]

Prints ``family/shape=best_ms`` items in the problems' alphabetical order, from the committed
sweep results (``benchmarks/results/suite/``). A series of live runs that spans device calls
(or sessions) resumes with ``--after`` the last problem it ran.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_report import all_metrics, load  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", default="", help="start after this problem (family__shape)")
    parser.add_argument("--count", type=int, default=None)
    args = parser.parse_args()
    items = [(m["problem"], m["best_ms"]) for m in all_metrics(load()) if m["best_ms"]]
    items = sorted(item for item in items if item[0] > args.after)[:args.count]
    print(" ".join(f"{name.replace('__', '/')}={best:.6g}" for name, best in items))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
