"""Live suite runs judged by an interleaved re-measurement of the run's pick beside the sweep's best.

    python benchmarks/suite_live_paired.py benchmarks/results/suite/live-edd724f [--markdown]

Each run of a series made with ``h200_tune.py --time-config`` at edd724f or later holds ``paired``:
the run's final pick and the sweep's best config timed together after the budget, in 7
interleaved rounds (``h200_tune.time_pair``). A run *holds a config within 2 %* when the pick's
median over those rounds is at most 1.02 times the reference's; its time to 2 % is when the
run first timed its pick. Beside it, the criterion docs/suite.md uses for the older series:
the best-so-far of the run's own single timings against the fastest time the run measured for
the sweep's best config (its best round of five, or its own trial), a comparison that a
microsecond kernel's 5-10 % noise between timings decides more than the search does.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from suite_report import key, sweep_best_timings, time_to_within  # noqa: E402

MARGIN = 0.02


def paired_row(name: str, run: dict) -> dict | None:
    """One run's figures, or None for a run without ``paired``."""
    pair = run.get("paired")
    if not pair or not pair.get("ratio"):
        return None
    pick = key(pair["pick"])
    first_pick = min((r["elapsed_s"] for r in run["records"] if r.get("ms") and key(r.get("config") or {}) == pick),
                     default=None)
    within = pair["ratio"] <= 1 + MARGIN
    reference = key((run.get("timed_config") or {}).get("config") or {})
    fastest = min(sweep_best_timings(run, reference), default=None)
    single, _ = time_to_within(run["records"], fastest) if fastest else (None, None)
    return {"problem": name, "pick_is_reference": pick == key(pair["reference"]), "ratio": pair["ratio"],
            "within": within, "seconds": first_pick if within else None, "single_timings_seconds": single,
            "first_timed_s": min((r["elapsed_s"] for r in run["records"] if r.get("ms")), default=None),
            "commit": run.get("kernelrules_commit"), "date": run.get("date"),
            "before_clock_s": run.get("before_clock_s")}


def rows_of(series: Path) -> list[dict]:
    """The rows of every run in ``series`` that has ``paired``, by problem."""
    rows = []
    for path in sorted(series.glob("live-*.json")):
        row = paired_row(path.stem[len("live-"):], json.loads(path.read_text()))
        if row is not None:
            rows.append(row)
    return rows


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(max(v, 1e-3)) for v in values) / len(values))


def summary(rows: list[dict]) -> list[str]:
    """The headline lines: how many runs hold a config within 2 % by each criterion, and how soon."""
    lines = []
    for field, label in (("seconds", "Pick within 2% of the sweep's best by the interleaved re-measurement"),
                         ("single_timings_seconds", "Best-so-far within 2% by single timings (the older criterion)")):
        reached = [r[field] for r in rows if r[field] is not None]
        line = f"{label}: {len(reached)} of {len(rows)} runs"
        if reached:
            line += f"; geometric mean {geometric_mean(reached):.1f} s, slowest {max(reached):.1f} s"
        lines.append(line + ".")
    before = [r["before_clock_s"] for r in rows if r.get("before_clock_s") is not None]
    if before:  # runs of h200_tune.py after 4fd2224: the seconds its imports took before the run's clock started
        lines.append(f"Before each run's clock started, the script's imports took {statistics.median(before):.1f} s "
                     f"(median of {len(before)} runs; not counted in the times above).")
    same = sum(r["pick_is_reference"] for r in rows)
    lines.append(f"The pick was the sweep's best config itself in {same} of {len(rows)} runs.")
    return lines


def markdown(rows: list[dict]) -> str:
    out = ["| problem | pick / sweep's best (medians of 7 interleaved rounds) | within 2% | pick first timed | "
           "within 2% by single timings |", "|---|---|---|---|---|"]
    for r in rows:
        ratio = "same config" if r["pick_is_reference"] else f"{r['ratio']:.3f}"
        seconds = "–" if r["seconds"] is None else f"{r['seconds']:.1f} s"
        single = "not reached" if r["single_timings_seconds"] is None else f"{r['single_timings_seconds']:.1f} s"
        out.append(f"| {r['problem']} | {ratio} | {'yes' if r['within'] else '**no**'} | {seconds} | {single} |")
    return "\n".join(out + [""] + [f"- {line}" for line in summary(rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("series", type=Path)
    args = parser.parse_args(argv)
    rows = rows_of(args.series)
    if not rows:
        print(f"no run with an interleaved pair in {args.series}", file=sys.stderr)
        return 1
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
