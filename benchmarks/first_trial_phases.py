"""Where each run of a live series spent the seconds to its first timing: one line per run.

    python benchmarks/first_trial_phases.py FOLDER [--json]

Reads the ``live-*.json`` and ``tpe-raw-*.json`` records of a series folder (``benchmarks/suite_live_pairs.sh``'s
output, e.g. ``benchmarks/results/suite/pairs-a639a79-warm``) and prints, per run, on the run's own clock: when the
perf model's first guess went to a worker (``first_guess_sent_s``, warm workers only), when the space was judged,
and for the first config timed: when it was sent and its result filed, its worker phases (inputs, compile, check,
time) and its first check launch (``launch_s``: a JIT compile, a binary's load or Triton's launcher build shows
there). What a series after a start-up change is read for: the first guess's result filed before the judging ended,
a compile phase of a few milliseconds (the gate compiled it), a first check launch of a few milliseconds (the
launcher built by the compile workers).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

TIMED = ("better", "slower")


def first_timed(records: list[dict]) -> dict | None:
    """The first record whose config was timed, by the time its result was filed."""
    timed = [r for r in records if r.get("status") in TIMED and r.get("elapsed_s") is not None]
    return min(timed, key=lambda r: r["elapsed_s"]) if timed else None


def phases(path: Path) -> dict:
    """One run's start-up marks and its first timed trial's phases."""
    run = json.loads(path.read_text())
    startup = run.get("summary", {}).get("startup", {})
    first = first_timed(run.get("records") or []) or {}
    checks = first.get("checks") or []
    return {"run": path.stem, "first_guess_sent_s": startup.get("first_guess_sent_s"),
            "space_judged_s": startup.get("space_judged_s"), "sent_s": first.get("sent_s"),
            "filed_s": first.get("elapsed_s"), "phase_seconds": first.get("phase_seconds"),
            "first_launch_s": checks[0].get("launch_s") if checks else None}


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def line(row: dict) -> str:
    """A run's row of the table."""
    shown = " ".join(f"{k} {v:.3f}" for k, v in (row["phase_seconds"] or {}).items())
    return (f"{row['run']:<40} guess sent {fmt(row['first_guess_sent_s']):>6}  judged {fmt(row['space_judged_s']):>6}"
            f"  first timed: sent {fmt(row['sent_s']):>6} filed {fmt(row['filed_s']):>6}  [{shown}]"
            f"  first launch {fmt(row['first_launch_s'])}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--json", action="store_true", help="one JSON object per run instead of the table")
    args = parser.parse_args()
    paths = sorted(args.folder.glob("live-*.json")) + sorted(args.folder.glob("tpe-raw-*.json"))
    if not paths:
        print(f"{args.folder}: no live-*.json or tpe-raw-*.json records")
        return 1
    for path in paths:
        row = phases(path)
        print(json.dumps(row) if args.json else line(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
