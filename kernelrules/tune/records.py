"""Trial records and the study summary: the funnel, the best configs, the winner line, gaps.

A trial record (the ``kr_record`` user attribute of its Optuna trial, one JSON line of
``kernelrules tune --json``) is plain JSON::

    {"trial": 12, "status": "better", "config": {"BLOCK_M": 64, ...}, "config_text": "BLOCK_M=64, ...",
     "stage": "timed", "rule_codes": [], "error": null, "ms": 0.412, "tflops": 333.6, "spread": 0.011,
     "vs_best": 0.93, "vs_previous": 0.71, "bottleneck": ["tail effect: 1.94 waves ..."],
     "facts": {"shared_bytes": 65536, "registers": 168, ...}, "worker": "host:pid", "gpu": "0",
     "elapsed_s": 41.2}

``status`` is one of :mod:`kernelrules.tune.feedback`'s statuses; ``vs_best`` is the
time over the best time known before this trial (below 1: a new best), ``vs_previous``
over the previous timed trial's.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Mapping

from ..config import KernelConfig
from .feedback import FAILURES, TIMED, is_gap, gap_text

NOT_CONFIGS = ("duplicate", "over_budget", "outside_space", "interrupted", "running", "waiting")


def config_key(config: KernelConfig | Mapping[str, Any]) -> str:
    """A stable text key of a config (the claim and dedup key). Here, not in :mod:`~kernelrules.tune.study`: the
    driver keys the space's configs before it starts the benchmark workers, and the study imports Optuna."""
    values = config.to_dict() if isinstance(config, KernelConfig) else dict(config)
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def triton_config_line(config: Mapping[str, Any]) -> str:
    """A ready-to-paste ``triton.Config(...)`` line."""
    kc = KernelConfig.from_dict(config)
    kwargs = {**kc.constexprs, **kc.backend_options}
    inner = ", ".join(f"{k!r}: {v!r}" for k, v in kwargs.items()).replace("'", '"')
    options = "".join(f", {name}={getattr(kc, name)!r}" for name in ("num_warps", "num_stages", "num_ctas", "maxnreg")
                      if getattr(kc, name) is not None)
    return f"triton.Config({{{inner}}}{options})"


def final_records(records: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The record that decided each config (duplicates, interruptions and in-flight trials left out)."""
    out: dict[str, Mapping[str, Any]] = {}
    for record in records:
        if record.get("status") in NOT_CONFIGS or not record.get("key"):
            continue
        out.setdefault(record["key"], record)
    return out


def funnel(records: Iterable[Mapping[str, Any]], space_size: int) -> dict[str, Any]:
    """space = rejected + learned + failed + timed + same_binary + not_sampled, over distinct configs."""
    records = list(records)
    decided = final_records(records)
    statuses = Counter(r["status"] for r in decided.values())
    failed = {k: statuses[k] for k in FAILURES if statuses[k]}
    timed = sum(statuses[s] for s in TIMED)
    trial_statuses = Counter(r.get("status") for r in records)
    return {
        "space": space_size,
        "sampled": len(decided),
        "rejected": statuses["rejected"],
        "learned": statuses["learned"],
        "failed": sum(failed.values()),
        "failed_by_class": failed,
        "timed": timed,
        "same_binary": statuses["same_binary"],
        "not_sampled": space_size - len(decided),
        "trials": len(records),
        "duplicates": trial_statuses["duplicate"],
        "outside_space": trial_statuses["outside_space"],
        "interrupted": trial_statuses["interrupted"],
        "in_flight": trial_statuses["running"],
        "queued": trial_statuses["waiting"],  # enqueued (perf-model seeds, retries) and not asked yet
    }


def rejected_codes(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    codes: Counter = Counter()
    for record in final_records(records).values():
        if record.get("status") == "rejected":
            codes.update(record.get("rule_codes") or [])
    return dict(codes.most_common())


def best(records: Iterable[Mapping[str, Any]], count: int = 10) -> list[Mapping[str, Any]]:
    """The fastest timed, correct configs (one record per config)."""
    timed = [r for r in final_records(records).values() if r.get("status") in TIMED and r.get("ms")]
    return sorted(timed, key=lambda r: r["ms"])[:count]


def gaps(records: Iterable[Mapping[str, Any]]) -> list[str]:
    return [gap_text(r) for r in final_records(records).values() if is_gap(r)]


def best_so_far(records: Iterable[Mapping[str, Any]]) -> list[tuple[int, float]]:
    """(trial number, best ms up to it) at every timed trial, in trial order."""
    out, current = [], None
    for record in sorted(records, key=lambda r: r.get("trial", 0)):
        if record.get("status") in TIMED and record.get("ms"):
            current = record["ms"] if current is None else min(current, record["ms"])
            out.append((record["trial"], current))
    return out


def table(rows: list[Mapping[str, Any]], flops: float | None) -> list[str]:
    """A plain-text table of the best configs."""
    lines = []
    for i, r in enumerate(rows, 1):
        tf = f"{flops / (r['ms'] * 1e-3) / 1e12:8.1f} TFLOP/s" if flops else ""
        spread = f"±{100 * r.get('spread', 0):.1f}%" if r.get("spread") is not None else ""
        lines.append(f"{i:3d}. {r['ms']:10.4f} ms {spread:>7s} {tf}  trial {r['trial']:4d}  {r.get('config_text', '')}")
    return lines
