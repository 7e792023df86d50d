"""The suite's truth, one config record per line: the sweep's, timed by the held timer where it was re-timed.

``benchmarks/results/suite/<problem>.jsonl`` (``suite_sweep.py``) holds every config's compile,
launch, correctness and ``do_bench`` time. For the microsecond problems, whose do_bench times
hold part of the CPU's launch cost (``benchmarks/h200_timer_check.py``), ``held/<problem>.jsonl``
(``suite_retime.py``) holds the same configs timed again with a GPU-side hold. Every script that
scores against the truth reads :func:`config_records`: a re-timed problem's records carry the held
time as their ``timing`` (``ms`` the mean of the passes' medians, ``ms_p20``/``ms_p80`` the widest
of the passes', ``sweep_ms`` the do_bench median it replaces); a config the re-timing did not time
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


def held_timings(name: str, results: Path = RESULTS) -> dict[str, dict] | None:
    """Config key -> the held timing of a re-timed problem; None when it was not re-timed."""
    path = results / "held" / f"{name}.jsonl"
    if SWEEP_ONLY or not path.exists():
        return None
    out = {}
    for record in read_jsonl(path):
        if record.get("kind") == "config" and record.get("passes"):
            passes = record["passes"]
            out[key(record["config"])] = {"ms": float(record["ms"]), "ms_p20": min(p["ms_p20"] for p in passes),
                                          "ms_p80": max(p["ms_p80"] for p in passes), "passes": len(passes),
                                          "timer": "held"}
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
