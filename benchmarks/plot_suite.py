"""Plot the suite's replayed tuning times: seconds to a config within 2% of the best, per problem and strategy.

    python benchmarks/plot_suite.py [-o docs/img/suite_replay.png]

Reads ``benchmarks/results/suite/replay.json`` (``suite_replay.py``); one row per
(kernel, shape), one marker per strategy, log scale; a strategy that did not reach the
band is drawn at the right edge as a hollow marker. Runs on the CPU (matplotlib).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STYLE = {"kernelrules": ("#1b7837", "o"), "tpe": ("#2166ac", "s"), "random": ("#999999", "^"),
         "autotune": ("#d6604d", "D")}
LABELS = {"kernelrules": "kernelrules tune", "tpe": "TPE, raw space", "random": "random, raw space",
          "autotune": "triton.autotune (whole space)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(REPO / "docs" / "img" / "suite_replay.png"))
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    replay = json.loads((REPO / "benchmarks" / "results" / "suite" / "replay.json").read_text())
    names = sorted(replay["problems"])
    values = [v for p in replay["problems"].values() for s in STYLE if (v := p.get(s))]
    edge = max(values) * 1.6
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(names) + 1.2))
    for strategy, (color, marker) in STYLE.items():
        xs = [replay["problems"][n].get(strategy) for n in names]
        reached = [(x, i) for i, x in enumerate(xs) if x]
        missed = [i for i, x in enumerate(xs) if not x]
        ax.scatter([x for x, _ in reached], [i for _, i in reached], color=color, marker=marker, s=22,
                   label=LABELS[strategy], zorder=3)
        ax.scatter([edge] * len(missed), missed, facecolors="none", edgecolors=color, marker=marker, s=22, zorder=3)
    ax.set_xscale("log")
    ax.set_yticks(range(len(names)), [n.replace("__", " ") for n in names], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds to a config within 2% of the best (replayed on H200 costs; hollow: not reached)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
