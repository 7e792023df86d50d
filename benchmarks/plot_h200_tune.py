"""Plot the search comparison of ``h200_tune.py``: best TFLOP/s so far against seconds, one line per method.

    python benchmarks/plot_h200_tune.py RESULTS_DIR [-o docs/img/h200_tune_comparison.png]

``RESULTS_DIR`` holds the saved runs (``run-<method>-<r>.json``) and, if present, the
re-measurement (``remeasure.json``, ``h200_remeasure.py``): a dot marks when a run first
timed a config whose re-measured time is within 2 % of the best re-measured one. The
curves are the runs' own search timings, so the runs' levels differ by the few per cent
that separate measurements made minutes apart; the dots are what the comparison counts.
Runs on the CPU (matplotlib, no GPU).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

COLORS = {"kernelrules": "#1b7837", "tpe-raw": "#2166ac", "random-raw": "#999999", "inductor": "#d6604d"}
LABELS = {"kernelrules": "kernelrules tune", "tpe-raw": "TPE, raw space", "random-raw": "random, raw space",
          "inductor": "Inductor-style filter + exhaustive"}


def best_so_far(records: list[dict], flops: float) -> tuple[list[float], list[float]]:
    """(seconds, TFLOP/s) steps of the best timed config so far."""
    xs, ys, best = [], [], None
    for record in sorted((r for r in records if r.get("elapsed_s") is not None), key=lambda r: r["elapsed_s"]):
        if record["status"] in ("better", "slower") and record.get("ms"):
            tflops = flops / (record["ms"] * 1e-3) / 1e12
            if best is None or tflops > best:
                best = tflops
                xs.append(record["elapsed_s"])
                ys.append(best)
    return xs, ys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("-o", "--output", type=Path, default=Path("docs/img/h200_tune_comparison.png"))
    parser.add_argument("--flops", type=float, default=2 * 4096.0**3)
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    good: set[str] = set()
    remeasure = args.results / "remeasure.json"
    if remeasure.exists():
        data = json.loads(remeasure.read_text())
        good = {json.dumps(e["config"], sort_keys=True) for e in data["configs"]
                if e["ms"] and e["ms"] <= data["best_ms"] * 1.02}
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for path in sorted(args.results.glob("run-*.json")):
        run = json.loads(path.read_text())
        method = run["method"]
        xs, ys = best_so_far(run["records"], args.flops)
        if not xs:
            continue
        end = max(r["elapsed_s"] for r in run["records"] if r.get("elapsed_s") is not None)
        label = LABELS.get(method, method) + (f" (seed {run['repeat']})" if run["repeat"] else "")
        ax.step(xs + [end], ys + [ys[-1]], where="post", color=COLORS.get(method), label=label,
                linestyle="--" if run["repeat"] else "-")
        hit = next((r for r in sorted((r for r in run["records"] if r.get("elapsed_s") is not None),
                                      key=lambda r: r["elapsed_s"])
                    if r["status"] in ("better", "slower") and json.dumps(r["config"], sort_keys=True) in good), None)
        if hit is not None:
            ax.plot([hit["elapsed_s"]], [args.flops / (hit["ms"] * 1e-3) / 1e12], "o", color=COLORS.get(method),
                    markersize=8)
            ax.annotate(f"{hit['elapsed_s']:.0f} s", (hit["elapsed_s"], args.flops / (hit["ms"] * 1e-3) / 1e12),
                        textcoords="offset points", xytext=(6, -14), fontsize=9, color=COLORS.get(method))
    ax.set_xlabel("seconds since the run started (start-up included)")
    ax.set_ylabel("best TFLOP/s so far (search timing)")
    ax.set_title("fp16 matmul 4096³ on an H200, 1875-config space: dot = first config within 2% of the best")
    ax.title.set_fontsize(10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
