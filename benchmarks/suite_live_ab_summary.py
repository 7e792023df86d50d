"""Summarize the runs of ``suite_live_ab.sh``: configs timed, the first and last timing, the steady rate
between them, when the workers were ready, and where the benchmark worker's time went.

    python benchmarks/suite_live_ab_summary.py benchmarks/results/suite/ab-edd724f-fbf3ed0

One line per run file (``ab-<variant>-<family>__<shape>.json``); ``phases`` holds, per phase of a timed
record's ``phase_seconds``, the median and the total seconds (runs of code older than 8be5274 have none).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from kernelrules.tune.feedback import TIMED


def summarize(run: dict) -> dict:
    timed = [r for r in run["records"] if r.get("status") in TIMED and r.get("ms") is not None]
    elapsed = sorted(r["elapsed_s"] for r in timed if r.get("elapsed_s") is not None)
    phases: dict[str, list[float]] = {}
    for record in timed:
        for phase, seconds in (record.get("phase_seconds") or {}).items():
            if seconds is not None:
                phases.setdefault(phase, []).append(seconds)
    return {
        "timed": len(elapsed),
        "first_s": elapsed[0] if elapsed else None,
        "last_s": elapsed[-1] if elapsed else None,
        "rate": round((len(elapsed) - 1) / (elapsed[-1] - elapsed[0]), 2) if len(elapsed) > 1 else None,
        "ready_s": (run["summary"].get("startup") or {}).get("workers_ready_s"),
        "phases": {p: (round(statistics.median(v), 3), round(sum(v), 1)) for p, v in phases.items()},
    }


def main() -> None:
    for path in sorted(Path(sys.argv[1]).glob("ab-*.json")):
        name = path.stem.removeprefix("ab-")
        print(name, " ".join(f"{k} {v}" for k, v in summarize(json.loads(path.read_text())).items()))


if __name__ == "__main__":
    main()
