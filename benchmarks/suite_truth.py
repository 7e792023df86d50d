"""The suite's truth, one config record per line: the sweep's, timed by the held timer where it was re-timed.

``benchmarks/results/suite/<problem>.jsonl`` (``suite_sweep.py``) holds every config's compile,
launch, correctness and ``do_bench`` time. For the microsecond problems, whose do_bench times
hold part of the CPU's launch cost (``benchmarks/h200_timer_check.py``), ``held/<run>/<problem>.jsonl``
(``suite_retime.py``, one folder per run) holds the same configs timed again with a GPU-side hold.
Every script that scores against the truth reads :func:`config_records`: a re-timed problem's records
carry the held time as their ``timing`` (``ms`` the mean over the runs of each run's mean of its
passes' medians, ``ms_p20``/``ms_p80`` the widest of all passes', ``sweep_ms`` the do_bench median it
replaces); a config the re-timing did not time
loses its ``timing`` (``untimed: "not re-timed"``), so it is never compared on the other timer.
``SWEEP_ONLY`` (set by the scripts' ``--sweep-truth``) reads the sweep's times alone.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "suite"
#: Read the sweep's do_bench times only (the truth before the held re-timing).
SWEEP_ONLY = False


def key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def held_runs(name: str, results: Path = RESULTS) -> list[list[dict]]:
    """The records of each held re-timing of a problem (``held/<run>/<problem>.jsonl``), in run order."""
    if SWEEP_ONLY:
        return []
    return [read_jsonl(path) for path in sorted((results / "held").glob(f"*/{name}.jsonl"))]


def held_timings(name: str, results: Path = RESULTS) -> dict[str, dict] | None:
    """Config key -> the held timing of a re-timed problem, over every run that timed the config (``ms`` the
    mean of the runs' values); None when it was not re-timed."""
    runs = held_runs(name, results)
    if not runs:
        return None
    found: dict[str, list[dict]] = {}
    for records in runs:
        for record in records:
            if record.get("kind") == "config" and record.get("passes"):
                found.setdefault(key(record["config"]), []).append(record)
    out = {}
    for config, records in found.items():
        passes = [p for r in records for p in r["passes"]]
        out[config] = {"ms": sum(float(r["ms"]) for r in records) / len(records),
                       "ms_p20": min(p["ms_p20"] for p in passes), "ms_p80": max(p["ms_p80"] for p in passes),
                       "runs": len(records), "passes": len(passes), "timer": "held"}
    return out


def config_records(name: str, results: Path = RESULTS) -> list[dict]:
    """The problem's ``config`` lines, each with the truth's timing (see the module's docstring)."""
    records = [r for r in read_jsonl(results / f"{name}.jsonl") if r.get("kind") == "config"]
    held = held_timings(name, results)
    if held is None:
        return records
    out = []
    for record in records:
        record = dict(record)
        sweep = record.pop("timing", None)
        found = held.get(key(record["config"]))
        if found is not None and sweep is not None:
            record["timing"] = {**found, "sweep_ms": sweep.get("ms")}
        elif sweep is not None:
            record["untimed"] = "not re-timed"
        out.append(record)
    return out


def timer_of(name: str, results: Path = RESULTS) -> str:
    """``held`` for a re-timed problem, else ``do_bench``."""
    return "do_bench" if held_timings(name, results) is None else "held"


def compare(results: Path = RESULTS) -> list[dict]:
    """Per re-timed problem: how the held truth differs from the sweep's (printed by ``python suite_truth.py``)."""
    from suite_report import spearman  # (suite_report reads this module at import: imported here)

    rows = []
    for path in sorted({p.name: p for p in (results / "held").glob("*/*__*.jsonl")}.values(), key=lambda p: p.name):
        runs = held_runs(path.stem, results)
        timed = [r for r in config_records(path.stem, results) if r.get("timing")]
        held = [r["timing"]["ms"] for r in timed]
        sweep = [r["timing"]["sweep_ms"] for r in timed]
        best_held, best_sweep = min(range(len(held)), key=held.__getitem__), min(range(len(sweep)), key=sweep.__getitem__)
        rows.append({"problem": path.stem, "configs": len(timed), "spearman": spearman(sweep, held),
                     "runs": len(runs), "between_runs": _between_runs(runs, spearman),
                     "best_us": {"held": held[best_held] * 1e3, "sweep": sweep[best_sweep] * 1e3},
                     "same_best": best_held == best_sweep,
                     "sweep_best_held_over_best": held[best_sweep] / held[best_held],
                     "within_2pct": {"held": sum(t <= held[best_held] * 1.02 for t in held),
                                     "sweep": sum(t <= sweep[best_sweep] * 1.02 for t in sweep)}})
    return rows


def _between_runs(held: list[list[dict]], spearman) -> float | None:
    """Rank correlation of the first two held runs' times (the configs both timed); None with one run,
    NaN with fewer than three configs in common."""
    runs = [{key(r["config"]): r["ms"] for r in records if r.get("kind") == "config" and r.get("ms")}
            for records in held]
    if len(runs) < 2:
        return None
    common = [k for k in runs[0] if k in runs[1]]
    value = spearman([runs[0][k] for k in common], [runs[1][k] for k in common])
    return float("nan") if value is None else value


if __name__ == "__main__":
    print("| problem | configs | Spearman, held run 1 vs run 2 | Spearman, sweep vs held | best (us), sweep / held | "
          "same best | sweep's best, held | within 2%, sweep / held |")
    print("|---|---|---|---|---|---|---|---|")
    for row in compare():
        between = "–" if row["between_runs"] is None else f"{row['between_runs']:.3f}"
        against = "–" if row["spearman"] is None else f"{row['spearman']:.3f}"
        print(f"| {row['problem']} | {row['configs']} | {between} | {against} | {row['best_us']['sweep']:.2f} / "
              f"{row['best_us']['held']:.2f} | {'yes' if row['same_best'] else 'no'} | "
              f"{row['sweep_best_held_over_best']:.3f} | {row['within_2pct']['sweep']} / {row['within_2pct']['held']} |")
