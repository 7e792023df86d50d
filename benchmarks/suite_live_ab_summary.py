"""Summarize the runs of ``suite_live_ab.sh``: configs timed, the first and last timing, the steady rate
between them, how busy the benchmark worker was, and how soon the search came within 2% of the sweep's
best config timed in the same run (``--table``: also when the first config was timed, the start-up, and the
first timing counted from the workers' start, which compares runs whose clocks start at different points).

    python benchmarks/suite_live_ab_summary.py benchmarks/results/suite/ab-edd724f-fbf3ed0
    python benchmarks/suite_live_ab_summary.py --table benchmarks/results/suite/ab-bb2a72f-0616d00

One line per run file (``ab-<variant>-<family>__<shape>.json``, in the folder or folders under it, one
per device call; or a live series' ``live-<family>__<shape>.json``, variant ``live``); ``phases`` holds, per phase of a timed record's ``phase_seconds``, the median and the
total seconds (runs of code older than 8be5274 have none). ``busy`` is the worker's total phase seconds
over the span from the first to the last timing. ``to_2pct_s`` is the run's elapsed seconds when its
best-so-far came within 2% of ``timed_config`` (the sweep's best config, timed by the same run outside
its budget), a reference measured on the same machine. ``--table`` prints a Markdown table instead;
``--slow-checks SECONDS`` lists, per run, the check launches slower than that (runs whose JSON keeps the checks'
``launch_s``: h200_tune.py since 2026-12-04; for an older run, the trials whose whole check took longer);
``--startup`` prints, per run, every start-up mark of the driver (``summary.startup``) and of the first
benchmark worker (``summary.worker_startup``, runs of d0c6250 on) in time order, then the first timed trial.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from kernelrules.tune.feedback import TIMED

sys.path.insert(0, str(Path(__file__).resolve().parent))
from h200_tune import time_to_within  # noqa: E402


def reference_ms(run: dict) -> float | None:
    """The time a run's best-so-far is measured against: the sweep's best config timed before the run
    (``h200_tune.py --stop-within``: the median of its final rounds, the time the run stopped near), else after it
    (``timed_config``: its one timing)."""
    before = run.get("reference_before") or {}
    if before.get("final_ms"):
        return before["final_ms"]
    return (run.get("timed_config") or {}).get("ms")


def summarize(run: dict) -> dict:
    timed = [r for r in run["records"] if r.get("status") in TIMED and r.get("ms") is not None
             and r.get("elapsed_s") is not None]
    elapsed = sorted(r["elapsed_s"] for r in timed)
    phases: dict[str, list[float]] = {}
    for record in timed:
        for phase, seconds in (record.get("phase_seconds") or {}).items():
            if seconds is not None:
                phases.setdefault(phase, []).append(seconds)
    span = elapsed[-1] - elapsed[0] if len(elapsed) > 1 else None
    reference = reference_ms(run)
    return {
        "timed": len(elapsed),
        "first_s": elapsed[0] if elapsed else None,
        "last_s": elapsed[-1] if elapsed else None,
        "rate": round((len(elapsed) - 1) / span, 2) if span else None,
        "busy": round(sum(sum(v) for v in phases.values()) / span, 2) if span and phases else None,
        "to_2pct_s": time_to_within(timed, reference)[0] if reference else None,
        "ready_s": (run["summary"].get("startup") or {}).get("workers_ready_s"),
        "after_workers_s": after_workers(run, elapsed[0] if elapsed else None),
        "startup": start_up(run),
        "phases": {p: (round(statistics.median(v), 3), round(sum(v), 1)) for p, v in phases.items()},
    }


#: The start-up marks the table shows, in order (a run's ``summary.startup``; older runs lack some).
START_UP = ("workers_started_s", "study_opened_s", "space_judged_s", "seeded_s")


def start_up(run: dict) -> str:
    """The run's start-up marks as "workers / study / judged / seeded" seconds ("-" for a mark the run did not
    record)."""
    marks = run.get("summary", {}).get("startup") or {}
    return " / ".join(f"{marks[k]:.1f}" if marks.get(k) is not None else "-" for k in START_UP)


def after_workers(run: dict, first_s: float | None) -> float | None:
    """Seconds from the benchmark workers' start to the first timing: the start-up a run's clock start does not
    move (the clock began after the architecture was found before 4fd2224, before the space loaded since)."""
    started = (run.get("summary", {}).get("startup") or {}).get("workers_started_s")
    return None if first_s is None or started is None else round(first_s - started, 2)


def runs(folder: Path) -> list[tuple[str, str, str, dict]]:
    """(call folder, variant, problem, run) for every run file, sorted by problem, then call and variant."""
    found = []
    for path in [*folder.rglob("ab-*.json"), *folder.rglob("live-*.json")]:
        run = json.loads(path.read_text())
        if path.stem.startswith("live-"):  # a live series (suite_live_device.sh): one variant, the series' code
            variant, problem = "live", path.stem.removeprefix("live-")
        else:
            variant = run.get("variant") or path.stem.removeprefix("ab-").rsplit("-", 1)[0]
            problem = path.stem.removeprefix(f"ab-{variant}-")
        call = str(path.parent.relative_to(folder)) if path.parent != folder else ""
        found.append((call, variant, problem, run))
    return sorted(found, key=lambda item: (item[2], item[0], item[1]))


def table(items: list[tuple[str, str, str, dict]]) -> str:
    lines = ["| problem | call | variant | commit | workers / study / judged / seeded | first timed | first timed "
             "after the workers' start | timed | configs/s | worker busy | s to 2% |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for call, variant, problem, run in items:
        s = summarize(run)
        cells = [problem, call or "-", variant, run.get("kernelrules_commit", "?"), s["startup"],
                 f"{s['first_s']:.1f} s" if s["first_s"] is not None else "-",
                 f"{s['after_workers_s']:.1f} s" if s["after_workers_s"] is not None else "-", str(s["timed"]),
                 f"{s['rate']:.2f}" if s["rate"] else "-", f"{s['busy']:.0%}" if s["busy"] is not None else "-",
                 f"{s['to_2pct_s']:.1f}" if s["to_2pct_s"] is not None else "never"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def slow_checks(run: dict, seconds: float = 0.2) -> list[str]:
    """A run's check launches slower than ``seconds`` (records kept with their checks carry ``launch_s`` per case): which
    trial, after how long, and at which sizes, the usual sign of a compile or a binary's load inside the check."""
    lines = []
    for record in run["records"]:
        cases = {}
        for check in record.get("checks") or []:
            if check.get("launch_s") is not None and check["launch_s"] > seconds:
                cases[json.dumps(check.get("sizes"), sort_keys=True)] = check["launch_s"]
        for sizes, launch_s in cases.items():
            lines.append(f"trial {record['trial']} at {record['elapsed_s']:.1f} s: {launch_s:.2f} s at {sizes}")
    return lines


def slow_check_phases(run: dict, seconds: float = 0.2) -> list[str]:
    """For a run that kept no launch times: the trials whose whole check (``phase_seconds``, every case's launch
    and comparison) took over ``seconds``. A check under the threshold bounds each of its launches; one over it
    says only that some launch or comparison in it was slow."""
    lines = []
    for record in sorted(run["records"], key=lambda r: r.get("elapsed_s") or 0.0):
        check = (record.get("phase_seconds") or {}).get("check")
        if check is not None and check > seconds:
            lines.append(f"trial {record['trial']} at {record['elapsed_s']:.1f} s: its whole check {check:.2f} s")
    return lines


def recorded_launches(run: dict) -> int:
    """How many check launches a run's records time (``launch_s``): runs whose JSON kept no checks (before
    2026-12-04's h200_tune.py) have none, and their ``slow_checks`` says nothing."""
    return sum(1 for record in run["records"] for check in record.get("checks") or []
               if check.get("launch_s") is not None)


def startup_line(run: dict) -> str:
    """Every start-up mark of the run, driver's and worker's (``w:`` marks), in time order, and the first timed
    trial with when it was asked for and sent to the worker (runs of a75f500 on) and its phase seconds: where the
    seconds before the first timing went."""
    summary = run.get("summary", {})
    marks = [(v, k.removesuffix("_s")) for k, v in (summary.get("startup") or {}).items() if v is not None]
    marks += [(v, "w:" + k.removesuffix("_s")) for k, v in (summary.get("worker_startup") or {}).items()
              if v is not None]
    timed = [r for r in run["records"] if r.get("status") in TIMED and r.get("elapsed_s") is not None]
    text = " ".join(f"{name} {value:.2f}" for value, name in sorted(marks))
    if timed:
        first = min(timed, key=lambda r: r["elapsed_s"])
        phases = ", ".join(f"{k} {v}" for k, v in (first.get("phase_seconds") or {}).items())
        sent = "".join(f"{k} {first[f'{k}_s']:.2f}, " for k in ("asked", "sent") if first.get(f"{k}_s") is not None)
        text += f" | first timed {first['elapsed_s']:.2f} (trial {first['trial']}: {sent}{phases})"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--table", action="store_true", help="a Markdown table")
    parser.add_argument("--slow-checks", type=float, default=None, metavar="SECONDS",
                        help="list every check launch slower than this, per run")
    parser.add_argument("--startup", action="store_true", help="every start-up mark, per run, in time order")
    args = parser.parse_args()
    items = runs(args.folder)
    if args.startup:
        for call, variant, problem, run in items:
            print("/".join(filter(None, [call, f"{variant}-{problem}"])), startup_line(run))
        return
    if args.slow_checks is not None:
        for call, variant, problem, run in items:
            found = slow_checks(run, args.slow_checks)
            name = "/".join(filter(None, [call, f"{variant}-{problem}"]))
            if not recorded_launches(run):  # nothing to list is not "none slow": the whole checks bound each launch
                found = slow_check_phases(run, args.slow_checks)
                print(name, f"records no check launch times; {len(found)} whole checks slower")
            else:
                print(name, f"{len(found)} slow check launches")
            for line in found:
                print("  " + line)
        return
    if args.table:
        print(table(items))
        return
    for call, variant, problem, run in items:
        name = "/".join(filter(None, [call, f"{variant}-{problem}"]))
        print(name, " ".join(f"{k} {v}" for k, v in summarize(run).items()))


if __name__ == "__main__":
    main()
