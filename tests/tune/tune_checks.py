"""Assertions shared by the tune storage tests (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections import Counter

from kernelrules.tune.records import final_records

#: Statuses of a trial that was timed.
TIMED = ("better", "slower")


def assert_two_workers_settled(records: list[dict], outputs: list[tuple[str, str]], trials: int) -> None:
    """Two ``kernelrules tune --json`` processes with the same sampler seed on one study: no config
    was timed twice, both timed some, hardly any duplicate and each points at the trial that owns its config,
    the study holds ``trials`` configs, and each process printed one line per trial it owned."""
    timed = [r for r in records if r["status"] in TIMED]
    keys = Counter(r["key"] for r in timed)
    assert keys and max(keys.values()) == 1
    assert len({r["worker"] for r in timed}) == 2  # both processes timed configs
    duplicates = [r for r in records if r["status"] == "duplicate"]
    # the sampler skips configs the study holds (DedupSampler), so a duplicate is only a race between the
    # processes (both drew a config before either's trial was written): the claims settle those
    assert len(duplicates) <= 4
    owners = {r["trial"]: r for r in records}
    for dup in duplicates:
        assert owners[dup["duplicate_of"]]["key"] == dup["key"]
    final = final_records(records)
    assert len(final) == trials, (Counter(r["status"] for r in records), [(r["trial"], r["status"], r.get("worker"), r.get("error")) for r in records])
    per_process = [[json.loads(line) for line in out.splitlines()] for out, _err in outputs]
    over = [r for r in records if r["status"] == "over_budget"]  # asked as the other process took the last slot
    assert sum(len(lines) - 1 for lines in per_process) == len(records) - len(duplicates) - len(over)
