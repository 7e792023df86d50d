"""The kernel suite (benchmarks/suite/): it stays runnable, and its report stays derived from its results.

* every family's smoke (one config, tiny sizes, under ``TRITON_INTERPRET=1``) passes
  the correctness gate, and a broken kernel fails it;
* ``kernelrules lint --stage config`` and ``kernelrules prune`` run on every suite kernel
  without a traceback;
* ``docs/suite.md`` is exactly what ``benchmarks/suite_report.py`` derives from
  ``benchmarks/results/suite/``, and the report's arithmetic is checked on made-up
  records where the answer is known;
* ``suite_merge.py`` folds a device run into the results without losing or doubling a config.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "benchmarks" / "suite"
sys.path.insert(0, str(REPO / "benchmarks"))

import suite_merge  # noqa: E402
import suite_report  # noqa: E402

FAMILIES = sorted(p.parent.name for p in SUITE.glob("*/smoke.yaml"))


def test_the_suite_has_twelve_families_with_three_shapes_each():
    assert len(FAMILIES) >= 12
    for family in FAMILIES:
        shapes = {p.name[: -len(".tune.yaml")] for p in (SUITE / family).glob("*.tune.yaml")}
        assert {"skinny", "small"} <= shapes and any(s.startswith("large") for s in shapes), family


def _smoke(*families: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, TRITON_INTERPRET="1", **(env_extra or {}))
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "suite_smoke.py"), *families],
                          capture_output=True, text=True, env=env, timeout=900)


def test_every_family_passes_its_smoke_under_the_interpreter():
    result = _smoke()
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    assert sorted(lines) == FAMILIES, result.stdout + result.stderr
    assert all(v == "ok" for v in lines.values()), result.stdout + result.stderr
    assert result.returncode == 0


def test_a_wrong_kernel_fails_the_smoke(tmp_path):
    """The smoke compares with the float64 reference: a softmax that forgets to normalise fails."""
    family = tmp_path / "suite" / "softmax"
    family.mkdir(parents=True)
    for path in (SUITE / "softmax").iterdir():
        text = path.read_text()
        if path.name == "softmax.py":
            text = _break_softmax(text)
        (family / path.name).write_text(text)
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r}); import suite_smoke; "
            f"from pathlib import Path; suite_smoke.SUITE = Path({str(tmp_path / 'suite')!r}); "
            "sys.exit(suite_smoke.main(['softmax']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, TRITON_INTERPRET="1"), timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "softmax: FAIL" in result.stdout


def _break_softmax(text: str) -> str:
    """Drop the normalisation from the suite's softmax."""
    line = "y = tl.exp(x - m) * inv_s"
    assert line in text, "softmax.py no longer normalises as expected; update this test"
    return text.replace(line, "y = tl.exp(x - m)")


@pytest.mark.parametrize("family", FAMILIES)
def test_lint_and_prune_run_on_every_suite_kernel(family, run_cli):
    kernels = [p for p in (SUITE / family).glob("*.py") if not p.name.endswith("_harness.py")]
    spaces = sorted((SUITE / family).glob("*.tune.yaml"))
    for kernel in kernels:
        result = run_cli("lint", str(kernel), "--arch", "hopper", "--stage", "config")
        assert result.returncode in (0, 1), result.stderr
        assert "Traceback" not in result.stderr + result.stdout
        assert "analyzed" in result.stdout
    result = run_cli("prune", str(spaces[0]), "--arch", "hopper", "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    records = json.loads(result.stdout)["results"]
    assert records and all(r["verdict"] in ("pass", "reject") for r in records)


# ------------------------------------------------------------------ the report


def test_docs_suite_is_what_the_results_give():
    assert suite_report.main(["--check"]) == 0, "run python benchmarks/suite_report.py"


def test_the_report_covers_every_problem_of_the_results():
    loaded = suite_report.load()
    assert len(loaded["problems"]) >= 36
    text = (REPO / "docs" / "suite.md").read_text()
    for name in loaded["problems"]:
        assert f"| {name} |" in text


def _record(config: dict, *, ms: float | None, launch: str = "ok", verdict: str = "pass", spill: int = 0) -> dict:
    record = {"kind": "config", "config": config,
              "compile": {"status": "ok", "seconds": 1.0, "verdict": verdict,
                          "facts": {"shared_bytes": 1024, "registers": 40, "spill_bytes": spill}},
              "launch": {"status": launch}}
    if launch == "ok":
        record["launch"].update(shared=1024, n_regs=40, n_spills=spill // 4, triton_cache_hit=True)
        record["correct"] = True
        record["timing"] = {"ms": ms}
    return record


def test_metrics_on_known_records():
    configs = [
        _record({"B": 1}, ms=1.00),                                   # the best
        _record({"B": 2}, ms=1.01),                                   # within 2%, rejected at the config stage
        _record({"B": 3}, ms=1.50, spill=64),                         # slow and spilling
        _record({"B": 4}, ms=None, launch="out_of_resources"),        # doomed, caught at the config stage
        _record({"B": 5}, ms=None, launch="out_of_resources", verdict="reject"),  # doomed, caught when compiled
    ]
    judge = {"kernelrules_commit": "x", "records": [
        {"config": {"B": 1}, "verdict": "pass", "perf_model_s": 2.0},
        {"config": {"B": 2}, "verdict": "reject", "perf_model_s": 1.0},
        {"config": {"B": 3}, "verdict": "pass", "perf_model_s": 3.0},
        {"config": {"B": 4}, "verdict": "reject", "perf_model_s": None},
        {"config": {"B": 5}, "verdict": "pass", "perf_model_s": None},
    ]}
    data = {"configs": configs, "problem": {"bytes": 4e9, "baseline_ms": {"ms": 2.0}}, "judge": judge}
    m = suite_report.metrics("fam__large", data, copy_tb_s=8.0)
    assert m["best_ms"] == 1.0 and m["timed"] == 3
    assert (m["doomed"], m["doomed_caught_config"], m["doomed_caught_compiled"]) == (2, 1, 2)
    assert (m["within_2"], m["lost_2_config"], m["lost_2_compiled"]) == (2, 1, 1)
    assert m["regret_config"] == 0.0
    assert (m["spilling"], m["spilling_rejected_config"]) == (1, 0)
    assert m["spilling_median_slowdown"] == pytest.approx(1.5)
    # the perf model's first pick among configs the config stage keeps is B=1 (B=2 is rejected)
    assert m["perf_top1_within_2"] is True and m["perf_model_ranked"] == 3
    assert m["spearman"] == pytest.approx(0.5)
    assert m["speedup_vs_baseline"] == 2.0
    assert m["tb_per_s"] == pytest.approx(4.0) and m["copy_fraction"] == pytest.approx(0.5)
    assert (m["facts_compared"], m["shared_equal"], m["spills_equal"]) == (3, 3, 3)


def test_the_sweep_best_reference_is_its_fastest_timing_in_the_run():
    best = {"BLOCK": 64, "num_warps": 4}
    run = {"records": [{"config": best, "ms": 0.009}, {"config": {"BLOCK": 32, "num_warps": 4}, "ms": 0.004}],
           "timed_config": {"config": best, "final_ms": 0.006, "rounds_ms": [0.005, 0.006, 0.027]}}
    timings = suite_report.sweep_best_timings(run, suite_report.key(best))
    assert sorted(timings) == [0.005, 0.006, 0.009, 0.027]  # the other config's 0.004 is not the sweep's best
    run["timed_config"].pop("rounds_ms")
    assert min(suite_report.sweep_best_timings(run, suite_report.key(best))) == 0.006
    assert suite_report.sweep_best_timings(run, None) == []


def test_spearman_of_reversed_orders_is_minus_one():
    assert suite_report.spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    assert suite_report.spearman([1, 2], [1, 2]) is None


# ------------------------------------------------------------------ merging a device run


def test_merge_appends_new_configs_once_and_drops_finished_pending(tmp_path, monkeypatch):
    results = tmp_path / "results"
    monkeypatch.setattr(suite_merge, "RESULTS", results)
    results.mkdir()
    (results / "p__large.jsonl").write_text(json.dumps({"kind": "config", "config": {"B": 1}}) + "\n")
    work = tmp_path / ".suite-work"
    work.mkdir()
    lines = [{"kind": "config", "config": {"B": 1}}, {"kind": "pending", "config": {"B": 2}},
             {"kind": "config", "config": {"B": 2}}, {"kind": "pending", "config": {"B": 3}}]
    (work / "p__large.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"torn')
    archive = tmp_path / "suite-work.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(work / "p__large.jsonl", arcname=".suite-work/p__large.jsonl")
    assert suite_merge.main([str(archive)]) == 0
    merged = [json.loads(line) for line in (results / "p__large.jsonl").read_text().splitlines()]
    configs = [r["config"]["B"] for r in merged if r["kind"] == "config"]
    assert configs == [1, 2]
    assert [r["config"]["B"] for r in merged if r["kind"] == "pending"] == [3]


def test_live_paired_judges_the_pick_by_its_interleaved_median():
    """A run counts as within 2% by the pick's median beside the reference's, from when it first timed the pick;
    the older criterion (single timings against the reference's fastest round) is reported beside it."""
    import suite_live_paired

    pick, reference = {"X": 2}, {"X": 1}
    records = [{"status": "better", "ms": 1.10, "elapsed_s": 3.0, "config": reference},
               {"status": "better", "ms": 1.00, "elapsed_s": 5.0, "config": pick}]
    run = {"records": records, "timed_config": {"config": reference, "rounds_ms": [0.99, 1.2]},
           "paired": {"pick": pick, "reference": reference, "pick_ms": 1.01, "reference_ms": 1.0, "ratio": 1.01}}
    row = suite_live_paired.paired_row("p__small", run)
    assert row["within"] and row["seconds"] == 5.0 and row["single_timings_seconds"] == 5.0
    run["paired"]["ratio"] = 1.03
    assert suite_live_paired.paired_row("p__small", run)["seconds"] is None
    assert suite_live_paired.paired_row("p__small", {"records": records}) is None
    rows = suite_live_paired.rows_of(REPO / "benchmarks" / "results" / "suite" / "live-edd724f")
    assert len(rows) == 43 and sum(r["within"] for r in rows) == 40
    rows = suite_live_paired.rows_of(REPO / "benchmarks" / "results" / "suite" / "live-e1c7981")
    assert len(rows) == 43 and [r["problem"] for r in rows if not r["within"]] == ["moe_gemm__small"]
    assert not any("imports took" in line for line in suite_live_paired.summary(rows))  # older runs: not recorded
    timed = [dict(suite_live_paired.paired_row("p__small", {**run, "before_clock_s": s}), problem=f"p{s}")
             for s in (1.5, 0.5, 2.5)]
    assert "the script's imports took 1.5 s (median of 3 runs" in " ".join(suite_live_paired.summary(timed))


@pytest.mark.parametrize("problem", ["cross_entropy/skinny", "cross_entropy/small", "fp8_gemm/small", "moe_gemm/small",
                                     "splitk_gemm/small"])
def test_the_suite_harnesses_give_their_edge_signatures(problem):
    """Each suite harness problem with edge shapes is recorded at its own sizes exactly as its space file's
    signature says, so tune's gate compiles its edge shapes (kernelrules.tune.harness_edges; on the CPU, with
    CPU tensors: nothing is launched). persistent_tma/small passes the GPU's SM count, which a CPU lacks."""
    pytest.importorskip("torch")
    from kernelrules.space import load_space
    from kernelrules.tune.harness_edges import harness_edge_signatures
    from kernelrules.tune.launch import HarnessRunner
    from kernelrules.tune.problem import load_problem

    space = load_space(SUITE / f"{problem}.tune.yaml")
    spec = load_problem(space)
    runner = HarnessRunner(spec, "cpu")
    configs = [c.to_dict() for c in space.configs()]
    edges = harness_edge_signatures(runner, spec, [configs[0], configs[-1]], dict(space.signature),
                                    lambda sizes: runner.make(sizes, 0))
    assert len(edges) == len(spec.edge_sizes) >= 1
    assert all(set(e) == set(space.signature) and e != space.signature for e in edges)
