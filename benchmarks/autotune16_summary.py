"""The 16-config autotune comparison of docs/performance.md, from its committed raw runs.

    python benchmarks/autotune16_summary.py [compile-first]

Reads ``benchmarks/results/autotune16/*_run*.jsonl`` (written by ``h200_autotune.py``; the
runs of kernelrules 8992cbc), or those of a subdirectory (``compile-first/``: the runs after
short lists were compiled first), and prints, per mode, the tuning time of each run, the median, the ratio to ``triton.autotune``
(exhaustive) measured in the same run, and the chosen config.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "autotune16"
MODES = {"exhaustive": "`triton.autotune`", "pruned": "`kernelrules.autotune`",
         "top_k": "`kernelrules.autotune(perf_model=True, top_k=3)`"}


def main() -> None:
    runs = []
    folder = RESULTS / sys.argv[1] if len(sys.argv) > 1 else RESULTS
    for path in sorted(folder.glob("*_run*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        runs.append({r["mode"]: r for r in rows if "mode" in r})
    print(f"| mode | configs timed | tuning time per run | median | vs `triton.autotune` (same run, median) | same winner |")
    print("|---|---|---|---|---|---|")
    for mode, label in MODES.items():
        times = [run[mode]["tuning_seconds"] for run in runs]
        ratios = [run["exhaustive"]["tuning_seconds"] / run[mode]["tuning_seconds"] for run in runs]
        same = all(run[mode]["best_config"] == run["exhaustive"]["best_config"] for run in runs)
        timed = sorted({run[mode]["configs_compiled_and_timed"] for run in runs})
        print(f"| {label} | {', '.join(map(str, timed))} | {', '.join(f'{t:.1f} s' for t in times)} | "
              f"{statistics.median(times):.1f} s | {statistics.median(ratios):.2f}× | {'yes' if same else 'no'} |")


if __name__ == "__main__":
    main()
