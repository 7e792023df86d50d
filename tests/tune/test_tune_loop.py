"""The whole tune loop under --interpret on a 32x32x32 matmul: accounting, records, report, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("optuna")
pytest.importorskip("torch")

from kernelrules.tune import tune  # noqa: E402
from kernelrules.tune.options import TuneOptions  # noqa: E402

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tune"
SMALL = FIXTURES / "matmul_small.yaml"
STATUSES = {"better", "slower", "rejected", "learned", "compile_error", "compile_timeout", "out_of_resources",
            "wrong_result", "illegal_address", "timeout", "crash", "launch_error", "duplicate", "outside_space"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One compiled-stage run of 14 configs (the rules gate compiles each candidate for sm_80)."""
    folder = tmp_path_factory.mktemp("tune-loop")
    result = tune(SMALL, arch="ampere", interpret=True, trials=14, storage=str(folder / "study.db"),
                  stage="compiled", cache_dir=str(folder / "cache"), top_k=3, rounds=2, jobs=2, seed=3)
    return folder, result


def test_every_config_of_the_space_is_accounted_for(run):
    _folder, result = run
    f = result.summary["funnel"]
    assert f["space"] == 48
    assert f["space"] == f["rejected"] + f["learned"] + f["failed"] + f["timed"] + f["not_sampled"]
    assert f["sampled"] == 14 and f["not_sampled"] == 34  # the budget counts distinct configs
    assert f["in_flight"] == 0 and f["interrupted"] == 0
    assert result.summary["config_stage"] == {"space": 48, "rejected": 16, "codes": {"CFG002": 16}}
    rejected = [r for r in result.records if r["status"] == "rejected"]
    assert all(r["config"]["num_warps"] == 6 and r["rule_codes"] == ["CFG002"] and r["ms"] is None for r in rejected)
    assert f["rejected"] == len({r["key"] for r in rejected})
    timed = [r for r in result.records if r["status"] in ("better", "slower")]
    assert len(timed) == f["timed"] >= 5 and len({r["key"] for r in timed}) == len(timed)
    assert all(r["config"]["num_warps"] != 6 for r in timed)


def test_the_summary_says_when_each_startup_step_ended_and_a_trial_where_its_time_went(run):
    _folder, result = run
    steps = ["workers_started_s", "probes_sent_s", "storage_opened_s", "study_opened_s", "space_judged_s", "seeded_s",
             "workers_ready_s"]
    startup = result.summary["startup"]
    assert list(startup) == steps
    assert all(0 <= startup[a] <= startup[b] for a, b in zip(steps, steps[1:]))
    first = min((r for r in result.records if r["status"] in ("better", "slower")), key=lambda r: r["elapsed_s"])
    assert startup["workers_ready_s"] <= first["elapsed_s"]
    assert set(first["phase_seconds"]) == {"inputs", "compile", "check", "time"}
    assert all(v >= 0 for v in first["phase_seconds"].values())


def test_the_summary_says_when_the_workers_start_up_steps_ended_on_the_runs_clock(run):
    _folder, result = run
    steps = ["spawned_s", "entered_s", "torch_loaded_s", "settings_received_s", "torch_imported_s",
             "reference_checked_s", "ready_s", "warmed_s"]
    worker = result.summary["worker_startup"]
    assert sorted(worker, key=steps.index) == steps
    assert all(0 <= worker[a] <= worker[b] for a, b in zip(steps, steps[1:]))
    startup = result.summary["startup"]
    assert worker["spawned_s"] <= startup["workers_started_s"]  # one clock: the worker's stamps fit the driver's
    assert worker["ready_s"] <= startup["workers_ready_s"]
    first = min((r for r in result.records if r["status"] in ("better", "slower")), key=lambda r: r["elapsed_s"])
    assert worker["warmed_s"] <= first["elapsed_s"]


def test_a_record_says_when_its_config_was_asked_for_and_sent_to_the_worker(run):
    _folder, result = run
    timed = [r for r in result.records if r["status"] in ("better", "slower")]
    assert all(r["asked_s"] <= r["sent_s"] <= r["elapsed_s"] for r in timed)
    assert all(r["sent_s"] >= result.summary["startup"]["workers_ready_s"] for r in timed)  # no worker before
    judged = [r for r in result.records if r["stage"] in ("config", "compile")]  # never sent to a worker
    assert all(r["sent_s"] is None and r["asked_s"] <= r["elapsed_s"] for r in judged)


def test_the_perf_models_best_guesses_go_first(run):
    _folder, result = run
    seeded = sorted(r["trial"] for r in result.records if r.get("seeded") == "perf_model")
    assert TuneOptions().model_seeds == 16
    assert seeded == list(range(14))  # enqueued ahead of the sampler's proposals: the 14-trial budget takes 14 of 16
    assert "16 configs from the perf model queued first" in result.notes


def test_a_time_budget_stops_asking(tmp_path):
    result = tune(SMALL, arch="ampere", interpret=True, time_budget=0.001, storage=str(tmp_path / "t.db"),
                  stage="config", cache_dir=str(tmp_path / "cache"))
    assert result.records == [] and "winner" not in result.summary
    assert result.summary["funnel"]["not_sampled"] == 48


def test_records_are_structured_for_automated_optimizers(run):
    _folder, result = run
    timed = [r for r in result.records if r["status"] in ("better", "slower")]
    for record in result.records:
        assert record["status"] in STATUSES
        json.dumps(record)  # plain JSON
    first = timed[0]  # the first timed (compiles finish in any order, so not always the lowest trial number)
    assert first["status"] == "better" and first["vs_best"] is None
    assert first["elapsed_s"] == min(r["elapsed_s"] for r in timed)
    for record in timed:
        assert record["ms"] > 0 and record["spread"] is not None and record["timing"]["method"] == "wallclock"
        assert record["stage"] == "timed" and record["facts"]["origin"] == "compiled"  # judged on compiled facts
        assert record["tflops"] == pytest.approx(2 * 32 ** 3 / (record["ms"] * 1e-3) / 1e12)
        assert isinstance(record["bottleneck"], list)
        assert [c["output"] for c in record["checks"]] == ["c"] * 3  # two seeds and the edge shape
        assert all(c["launch_s"] > 0 for c in record["checks"])  # each case's launch, timed (a slow one: a JIT)
    later = [r for r in timed if r["vs_best"] is not None]
    assert later and all((r["status"] == "better") == (r["vs_best"] < 1) for r in later)


def test_winner_is_named_after_interleaved_rounds(run):
    _folder, result = run
    final = result.summary["final"]
    assert final["rounds"] == 2 and len(final["top"]) == 3 and final["interpret"] is True
    assert all(len(t["rounds_ms"]) == 2 for t in final["top"])
    assert final["baseline"] == "torch.matmul(a, b)" and final["baseline_ms"] > 0
    winner = result.summary["winner"]
    assert winner["config"] == final["top"][0]["config"]
    assert re.fullmatch(r'triton\.Config\(\{"GROUP_SIZE_M": 8, "BLOCK_M": \d+, "BLOCK_N": \d+, "BLOCK_K": \d+\}, '
                        r'num_warps=\d, num_stages=\d\)', winner["triton_config"])
    assert result.summary["timings_meaningful"] is False


def test_report_writes_html_with_the_plots(run, run_cli):
    folder, _result = run
    out = folder / "report.html"
    done = run_cli("report", str(folder / "study.db"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.count("src='data:image/png;base64,") == 3  # funnel, trials, roofline
    for heading in ("pruning funnel", "trials", "roofline", "winner", "best configs (search)"):
        assert f"<h2>{heading}" in text
    assert "--interpret:" in text and "triton.Config(" in text
    missing = run_cli("report", str(folder / "nope.db"))
    assert missing.returncode == 2 and "no such study file" in missing.stderr


def test_resuming_a_finished_study_adds_nothing(run):
    folder, first = run
    again = tune(SMALL, arch="ampere", interpret=True, trials=14, storage=str(folder / "study.db"), stage="config",
                 cache_dir=str(folder / "cache"), top_k=1, rounds=1)
    assert again.records == []
    assert again.summary["funnel"]["sampled"] == 14


def test_cli_json_lines_and_errors(tmp_path, run_cli):
    done = run_cli("tune", str(SMALL), "--arch", "ampere", "--interpret", "--json", "--trials", "3", "--stage",
                   "config", "--storage", str(tmp_path / "j.db"), "--top-k", "1", "--rounds", "1",
                   "--cache-dir", str(tmp_path / "cache"), "--sampler", "grid")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["type"] for line in lines] == ["trial"] * 3 + ["summary"]
    assert {"status", "config", "error", "ms", "vs_best", "vs_previous", "bottleneck", "rule_codes"} <= set(lines[0])
    summary = lines[-1]
    assert summary["funnel"]["sampled"] == 3 and summary["interpret"] and "winner" in summary
    bad = run_cli("tune", str(SMALL), "--interpret", "--storage", str(tmp_path / "j.db"))
    assert bad.returncode == 2 and "--interpret needs --arch" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli("tune", str(SMALL), "--arch", "ampere", "--interpret", "--sampler", "bogus")
    assert bad.returncode == 2 and "unknown sampler" in bad.stderr
    bad = run_cli("tune", str(SMALL), "--arch", "ampere", "--interpret", "--timer", "bogus")
    assert bad.returncode == 2 and "unknown timer 'bogus'" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli("tune", str(tmp_path / "none.yaml"), "--arch", "ampere")
    assert bad.returncode == 2 and "no such space file" in bad.stderr
    bad = run_cli("tune", str(SMALL), "--arch", "ampere", "--interpret", "--time-budget", "soon")
    assert bad.returncode == 2 and "cannot read the duration" in bad.stderr
    other = run_cli("tune", str(FIXTURES / "wrong_matmul.yaml"), "--arch", "ampere", "--interpret", "--storage",
                    str(tmp_path / "j.db"), "--study-name", summary["study"], "--stage", "config")
    assert other.returncode == 2 and "was made for another kernel" in other.stderr


def test_seeds_left_waiting_are_queued_not_in_flight(tmp_path):
    """A budget smaller than the perf model's seeds leaves seeds enqueued: counted as queued, none in flight."""
    result = tune(SMALL, arch="ampere", interpret=True, trials=3, storage=str(tmp_path / "study.db"),
                  stage="config", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, seed=0, model_seeds=6)
    f = result.summary["funnel"]
    assert f["sampled"] == 3 and f["in_flight"] == 0
    assert f["queued"] == 3  # six seeds enqueued, three asked


def test_a_target_time_stops_the_search_once_a_config_meets_it(tmp_path):
    """``stop_at_ms``: the loop asks for no more candidates once a timed config is at or under it (here every config
    is: the first timing ends the search), the final re-measurement still runs, and the notes say why it stopped; a
    target no config meets leaves the budget to decide."""
    common = dict(arch="ampere", interpret=True, stage="config", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1,
                  seed=0, model_seeds=0, lookahead=0)
    met = tune(SMALL, trials=6, storage=str(tmp_path / "met.db"), stop_at_ms=1e9, **common)
    timed = [r for r in met.records if r["status"] in ("better", "slower")]
    assert len(timed) == 1 and met.summary["winner"]
    assert any(n.startswith("stopped: a config timed at") and "--stop-at-ms" in n for n in met.notes)
    missed = tune(SMALL, trials=3, storage=str(tmp_path / "missed.db"), stop_at_ms=1e-9, **common)
    assert missed.summary["funnel"]["sampled"] == 3  # the budget's three configs, timed or judged
    assert not any(n.startswith("stopped: a config timed at") for n in missed.notes)


def test_the_command_refuses_a_target_time_for_several_spaces(run_cli):
    bad = run_cli("tune", str(SMALL), str(SMALL), "--arch", "ampere", "--interpret", "--stop-at-ms", "1")
    assert bad.returncode == 2 and "--stop-at-ms names one problem's study, winner or target" in bad.stderr
