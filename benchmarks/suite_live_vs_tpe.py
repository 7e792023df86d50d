"""Live `kernelrules tune` against live TPE on the raw space: time to within 2% of the sweep's best, per problem.

    python benchmarks/suite_live_vs_tpe.py KERNELRULES_SERIES TPE_SERIES [--table] [--what-if-startup 1,3,7]
    python benchmarks/suite_live_vs_tpe.py --pairs PAIRS_SERIES [PAIRS_SERIES ...] [--table] [--by-family]

``KERNELRULES_SERIES`` holds ``live-<family>__<shape>.json`` (``suite_live_device.sh``), ``TPE_SERIES``
``tpe-raw-<family>__<shape>.json`` (the same script with ``METHOD=tpe-raw``): each run's time to 2% is
when its best-so-far came within 2% of the sweep's best config timed by the same run, before it (a series run
with ``--stop-within``) or after it (:func:`suite_live_ab_summary.reference_ms`). A TPE run that never got there counts its wall time, so its
ratio is a lower bound (printed with ``>=``); a kernelrules run that never got there has no ratio. The
issue's target: kernelrules at least 5x sooner, geometric mean over the problems. ``--what-if-startup`` projects
the ratio with both sides' start-up (everything before the first timing) set to other values, each run keeping its
own search: how much of the ratio the start-up costs (a projection from the runs, not a measurement).
``--pairs`` reads like-for-like series (``suite_live_pairs.sh``: both sides of each problem in one folder) and takes
each problem from the last folder that has both its runs: one figure over problems run in several series (say, on
one GPU at two commits), each folder's problems, commits and GPUs printed first (mix no GPUs in one figure).
``--by-family`` prints each kernel family's geometric mean too: where the suite's figure holds and where it does not.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_live_ab_summary import reference_ms, summarize  # noqa: E402
from suite_report import time_to_within  # noqa: E402


def load(folder: Path, prefix: str) -> dict[str, dict]:
    """The runs of one series by problem name."""
    return {p.stem.removeprefix(prefix): json.loads(p.read_text()) for p in sorted(folder.glob(f"{prefix}*.json"))}


def compare(ours: dict[str, dict], tpe: dict[str, dict]) -> list[dict]:
    """One row per problem in both series: each side's seconds to 2%, the ratio and whether it is a lower bound;
    also each side's first timing and configs timed until 2% (what the fixed start-up and the search each cost)."""
    rows = []
    for name in sorted(set(ours) & set(tpe)):
        mine, theirs = summarize(ours[name]), summarize(tpe[name])
        mine_s, theirs_s = mine["to_2pct_s"], theirs["to_2pct_s"]
        censored = theirs_s is None
        if censored:
            theirs_s = float(tpe[name].get("wall_s") or 0.0) or None
        ratio = theirs_s / mine_s if mine_s and theirs_s else None
        rows.append({"problem": name, "kernelrules_s": mine_s, "tpe_s": theirs_s, "tpe_reached": not censored,
                     "ratio": ratio, "kernelrules_first_s": mine["first_s"], "tpe_first_s": theirs["first_s"],
                     "kernelrules_timed": timed_until_2pct(ours[name]), "tpe_timed": timed_until_2pct(tpe[name]),
                     "tpe_judging_s": judging_seconds(tpe[name])})
    return rows


def timed_until_2pct(run: dict) -> int | None:
    """Configs the run timed until its best-so-far came within 2% of its timing of the sweep's best (None: never)."""
    reference = reference_ms(run)
    seconds, timed = time_to_within(run["records"], reference) if reference else (None, 0)
    return timed if seconds is not None else None


def judging_seconds(run: dict) -> float | None:
    """Seconds the run spent judging the space at the config stage (start-up, before any trial)."""
    startup = run.get("summary", {}).get("startup") or {}
    if startup.get("space_judged_s") is None or startup.get("study_opened_s") is None:
        return None
    return startup["space_judged_s"] - startup["study_opened_s"]


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summary(rows: list[dict]) -> dict:
    """The comparison's figures: the ratios' geometric mean (a lower bound where a TPE run never got there), how many
    problems are at least 5x, and kernelrules' own seconds to 2% (issue 13: geometric mean <= 15 s, each <= 45 s)
    with its slowest problem."""
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    reached = [r for r in rows if r["kernelrules_s"] is not None]
    slowest = max(reached, key=lambda r: r["kernelrules_s"], default=None)
    return {"problems": len(rows), "with_ratio": len(ratios), "geomean_ratio": geomean(ratios),
            "lower_bound": any(not r["tpe_reached"] for r in rows if r["ratio"]),
            "at_least_5x": sum(r >= 5 for r in ratios), "kernelrules_never": len(rows) - len(reached),
            "kernelrules_geomean_s": geomean([r["kernelrules_s"] for r in reached]),
            "kernelrules_slowest": (slowest["problem"], slowest["kernelrules_s"]) if slowest else None}


def by_family(rows: list[dict]) -> dict[str, dict]:
    """:func:`summary` of each kernel family's problems (``family__shape``), by family name: a suite figure holds
    or not per family."""
    families: dict[str, list[dict]] = {}
    for r in rows:
        families.setdefault(r["problem"].split("__")[0], []).append(r)
    return {name: summary(family) for name, family in sorted(families.items())}


def family_lines(rows: list[dict]) -> list[str]:
    """One line per family: its problems' geometric-mean ratio (``>=`` a lower bound) and how many are 5x."""
    lines = []
    for name, s in by_family(rows).items():
        ratio = f"{'>= ' if s['lower_bound'] else ''}{s['geomean_ratio']:.1f}x" if s["geomean_ratio"] else "no ratio"
        count = f"{s['with_ratio']} problem{'' if s['with_ratio'] == 1 else 's'}"
        lines.append(f"{name}: {ratio} over {count}, at least 5x in {s['at_least_5x']}")
    return lines


def what_if_startup(rows: list[dict], seconds: float) -> float | None:
    """A projection, not a measurement: the geometric-mean ratio if both sides' first timing came ``seconds`` after
    the start instead of what each run measured, each keeping its own search after its first timing (its time to
    2% minus its first timing). A TPE run that never got there keeps its lower bound."""
    ratios = []
    for r in rows:
        parts = (r["kernelrules_s"], r["kernelrules_first_s"], r["tpe_s"], r["tpe_first_s"])
        if any(v is None for v in parts):
            continue
        ours, theirs = (seconds + r["kernelrules_s"] - r["kernelrules_first_s"],
                        seconds + r["tpe_s"] - r["tpe_first_s"])
        ratios.append(theirs / ours)
    return geomean(ratios)


def table(rows: list[dict]) -> str:
    lines = ["| problem | kernelrules s to 2% | TPE (raw) s to 2% | ratio | first timing (kernelrules / TPE) "
             "| configs timed to 2% (kernelrules / TPE) |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        bound = "" if r["tpe_reached"] else ">= "
        tpe = f"{bound}{r['tpe_s']:.1f}" if r["tpe_s"] else "–"
        mine = f"{r['kernelrules_s']:.1f}" if r["kernelrules_s"] is not None else "never"
        ratio = f"{bound}{r['ratio']:.1f}x" if r["ratio"] else "–"
        firsts = " / ".join(f"{v:.1f} s" if v is not None else "–" for v in (r["kernelrules_first_s"], r["tpe_first_s"]))
        timed = " / ".join(str(v) if v is not None else "never" for v in (r["kernelrules_timed"], r["tpe_timed"]))
        lines.append(f"| {r['problem']} | {mine} | {tpe} | {ratio} | {firsts} | {timed} |")
    return "\n".join(lines)


def load_pairs(folders: list[Path]) -> tuple[dict[str, dict], dict[str, dict], list[str]]:
    """The kernelrules and TPE runs of like-for-like series, each problem from the last folder with both its runs;
    and a line per folder: how many problems it gives, at which kernelrules commits, on which GPUs."""
    live: dict[str, dict] = {}
    tpe: dict[str, dict] = {}
    taken: dict[str, Path] = {}
    for folder in folders:
        ours, theirs = load(folder, "live-"), load(folder, "tpe-raw-")
        for problem in sorted(set(ours) & set(theirs)):
            live[problem], tpe[problem], taken[problem] = ours[problem], theirs[problem], folder
    lines = []
    for folder in folders:
        problems = [p for p, f in taken.items() if f == folder]
        commits = sorted({live[p].get("kernelrules_commit") or "unknown" for p in problems})
        devices = sorted({((live[p].get("summary") or {}).get("final") or {}).get("device") or "GPU not recorded"
                          for p in problems})
        lines.append(f"{folder}: {len(problems)} problems (kernelrules {', '.join(commits) or '-'}; "
                     f"{', '.join(devices) or '-'})")
    return live, tpe, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelrules", type=Path, nargs="?")
    parser.add_argument("tpe", type=Path, nargs="?")
    parser.add_argument("--pairs", type=Path, nargs="+", default=[], metavar="DIR",
                        help="like-for-like series folders; a problem from the last that has both its runs")
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--by-family", action="store_true", help="each kernel family's geometric mean too")
    parser.add_argument("--what-if-startup", type=lambda text: [float(v) for v in text.split(",")], default=[],
                        metavar="S[,S...]", help="project the ratio with both sides' first timing at S seconds")
    args = parser.parse_args()
    if args.pairs:
        live, tpe, lines = load_pairs(args.pairs)
        print("\n".join(lines))
    elif args.kernelrules and args.tpe:
        live, tpe = load(args.kernelrules, "live-"), load(args.tpe, "tpe-raw-")
    else:
        parser.error("give KERNELRULES_SERIES TPE_SERIES, or --pairs DIR [DIR ...]")
    rows = compare(live, tpe)
    if args.table:
        print(table(rows))
    if args.by_family:
        print("\n".join(family_lines(rows)))
    for seconds in args.what_if_startup:
        print(f"projection: both first timings at {seconds:g} s after the start -> geometric mean "
              f"{what_if_startup(rows, seconds):.2f}x (each run's own search after its first timing kept)")
    s = summary(rows)
    mean = s["geomean_ratio"]
    print(f"{s['with_ratio']} of {s['problems']} problems with a ratio; geometric mean "
          f"{'>= ' if s['lower_bound'] else ''}{mean:.2f}x" if mean else f"{s['problems']} problems, no ratio", end="")
    print(f"; kernelrules at least 5x sooner in {s['at_least_5x']}; kernelrules never within 2% in {s['kernelrules_never']}")
    if s["kernelrules_slowest"]:
        print(seconds_line(s))
    return 0


def seconds_line(s: dict) -> str:
    """kernelrules' seconds to 2% over the problems it reached (:func:`summary`), against issue 13's targets."""
    problem, slowest = s["kernelrules_slowest"]
    return (f"kernelrules' seconds to 2%: geometric mean {s['kernelrules_geomean_s']:.1f} s over "
            f"{s['problems'] - s['kernelrules_never']} problems, the slowest {slowest:.1f} s ({problem}); "
            "issue 13's targets: a geometric mean of at most 15 s, every problem at most 45 s")


if __name__ == "__main__":
    raise SystemExit(main())
