"""`tune_many` / `kernelrules tune A B`: several problems in turn, the benchmark workers and the compile pool kept."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import sys
from pathlib import Path

import pytest

pytest.importorskip("optuna")
pytest.importorskip("torch")

from tune_checks import children_running  # noqa: E402
from kernelrules.compile.pool import CompilePool  # noqa: E402
from kernelrules.errors import KernelrulesError  # noqa: E402
from kernelrules.tune.driver import tune_many  # noqa: E402
from kernelrules.tune.records import config_key as records_key  # noqa: E402
from kernelrules.tune.worker import BenchWorker  # noqa: E402

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tune"
FAULTY, HARNESS = FIXTURES / "faulty.yaml", FIXTURES / "harness.yaml"


def _bench_workers_of_this_process() -> list[int]:
    return children_running("kernelrules.tune.bench_process")


def _faulty_at_48(tmp_path: Path) -> Path:
    """faulty.yaml at another size: its default study name differs from the harness problem's (same kernel, n 64)."""
    text = FAULTY.read_text().replace("kernel: faulty.py", f"kernel: {FIXTURES / 'faulty.py'}")
    path = tmp_path / "faulty48.tune.yaml"
    path.write_text(text.replace("n: 64", "n: 48").replace("{n: 50}", "{n: 40}"))
    return path


def _common(tmp_path: Path) -> dict:
    return dict(arch="ampere", interpret=True, trials=2, storage=str(tmp_path / "study.db"),
                cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=2)


def test_the_second_problem_finds_the_worker_and_the_pool_started(tmp_path, monkeypatch):
    """One benchmark worker process and one compile pool for both problems; the faulty kernel's crash restarts the
    worker, and the next problem is loaded into the fresh process."""
    spawned, pools = [], []
    spawn, make_pool = BenchWorker.spawn, CompilePool.__init__
    monkeypatch.setattr(BenchWorker, "spawn", lambda self: spawned.append(self) or spawn(self))
    monkeypatch.setattr(CompilePool, "__init__", lambda self, *a, **k: pools.append(self) or make_pool(self, *a, **k))
    first, second = tune_many([_faulty_at_48(tmp_path), HARNESS], **_common(tmp_path))
    assert len({id(w) for w in spawned}) == 1 and len(pools) == 1
    assert first.summary["winner"] and second.summary["winner"]
    assert first.summary["funnel"]["failed"] >= 1  # the crash: the worker was restarted within the first problem
    one, two = first.summary["worker_startup"], second.summary["worker_startup"]
    assert "torch_loaded_s" in one and "torch_loaded_s" not in two  # torch was not imported again
    assert two["ready_s"] < one["ready_s"]
    assert _bench_workers_of_this_process() == []


def test_a_space_that_cannot_load_stops_the_series_and_leaves_no_process(tmp_path):
    bad = tmp_path / "bad.tune.yaml"
    bad.write_text("kernel: missing.py:nothing\nspace: {BLOCK: [16]}\n")
    with pytest.raises(KernelrulesError, match="bad.tune.yaml"):
        tune_many([HARNESS, bad, FAULTY], **_common(tmp_path))
    assert _bench_workers_of_this_process() == []


def test_the_command_tunes_several_spaces_and_refuses_one_study_name_for_them(tmp_path):
    faulty = _faulty_at_48(tmp_path)
    command = [sys.executable, "-m", "kernelrules", "tune", str(HARNESS), str(faulty), "--interpret", "--arch",
               "ampere", "--trials", "2", "--top-k", "1", "--rounds", "1", "-j", "2", "--json",
               "--storage", str(tmp_path / "s.db"), "--cache-dir", str(tmp_path / "c")]
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    summaries = [json.loads(line) for line in out.stdout.splitlines() if '"summary"' in line[:30]]
    assert [s["space"] for s in summaries] == [str(HARNESS), str(faulty)]
    refused = subprocess.run(command + ["--study-name", "one"], capture_output=True, text=True, timeout=120,
                             cwd=tmp_path)
    assert refused.returncode == 2 and "--study-name names one problem's study, winner or target" in refused.stderr
    assert refused.stdout == ""


def test_a_worker_given_another_problem_loads_its_kernels_afresh():
    """On ``load`` the worker forgets the kernel modules it loaded: the next problem's @triton.jit functions hold no
    binary an earlier problem compiled (each run's compiles are its own)."""
    from kernelrules.tune import launch

    path = str(FIXTURES / "faulty.py")
    first = launch.load_module(path)
    assert launch.load_module(path) is first
    launch.forget_loaded()
    again = launch.load_module(path)
    assert again is not first and again.faulty_kernel is not first.faulty_kernel


def _matmul_at_64(tmp_path: Path) -> Path:
    """matmul_small.yaml at M = N = K = 64: another problem of the same kernel (another default study name)."""
    text = (FIXTURES / "matmul_small.yaml").read_text().replace("../../../examples/matmul.py",
                                                                 str(FIXTURES.parents[2] / "examples" / "matmul.py"))
    text = re.sub(r"(\n\s+(M|N|K|stride_am|stride_bk|stride_cm): )32\b", r"\g<1>64", text)
    path = tmp_path / "matmul64.tune.yaml"
    path.write_text(text)
    return path


def test_a_later_problem_times_its_first_guess_before_its_space_is_judged(tmp_path):
    """With the workers warm, the perf model's first guess goes to the GPU once its own compile is judged, not after
    the whole space (the probe compiles): trial 0, seeded, sent before ``space_judged``; the other seeds follow it and
    none repeats it. The first problem (a fresh worker) seeds as before."""
    first, second = tune_many([FIXTURES / "matmul_small.yaml", _matmul_at_64(tmp_path)],
                              **dict(_common(tmp_path), trials=4, jobs=4, stage="compiled"))
    assert "first_guess_sent_s" not in first.summary["startup"]
    assert "16 configs from the perf model queued first" in first.notes
    startup = second.summary["startup"]
    assert startup["first_guess_sent_s"] < startup["space_judged_s"] <= startup["seeded_s"]
    sent = sorted((r for r in second.records if r.get("sent_s") is not None), key=lambda r: r["sent_s"])
    assert sent[0]["trial"] == 0 and sent[0]["seeded"] == "perf_model" and sent[0]["status"] in ("better", "slower")
    assert sent[0]["sent_s"] == pytest.approx(startup["first_guess_sent_s"], abs=0.01)
    order = [r["trial"] for r in sent]  # the guesses first; the seeds after them as their compiles end
    assert order[:2] == [0, 1] and sorted(order) == [0, 1, 2, 3] and all(r["seeded"] for r in sent)
    assert not [r for r in second.records if r["status"] == "duplicate"]
    assert len({r["key"] for r in second.records}) == len(second.records) == 4
    assert any("first guess was timed before the space was judged" in n for n in second.notes)


def test_a_first_guess_the_gate_rejects_gives_way_to_the_next_guess(tmp_path, monkeypatch):
    """The early path judges the guesses compiled ahead in the model's order until one passes: a first guess rejected
    once compiled (flash_attn/large's on the H200: over the shared memory) is told as rejected, and the second guess
    goes to the warm worker before the space is judged; no guess is asked twice."""
    from kernelrules.tune.gate import Gate, Judgement

    judge_now, rejected = Gate.judge_now, []

    def reject_the_first(gate, config):
        if not rejected:
            rejected.append(config)
            return Judgement(passed=False, stage="compiled", codes=["SMEM001"], messages=["over the shared memory"])
        return judge_now(gate, config)

    monkeypatch.setattr(Gate, "judge_now", reject_the_first)
    _first, second = tune_many([FIXTURES / "matmul_small.yaml", _matmul_at_64(tmp_path)],
                               **dict(_common(tmp_path), trials=4, jobs=4, stage="compiled"))
    assert len(rejected) == 1  # the first problem (a fresh worker) took no early path
    by_trial = {r["trial"]: r for r in second.records}
    assert by_trial[0]["status"] == "rejected" and by_trial[0]["seeded"] == "perf_model"
    assert by_trial[0]["key"] == records_key(rejected[0])
    startup = second.summary["startup"]
    assert startup["first_guess_sent_s"] < startup["space_judged_s"]
    sent = sorted((r for r in second.records if r.get("sent_s") is not None), key=lambda r: r["sent_s"])
    assert sent[0]["trial"] == 1 and sent[0]["seeded"] == "perf_model"
    assert sent[0]["sent_s"] == pytest.approx(startup["first_guess_sent_s"], abs=0.01)
    assert len({r["key"] for r in second.records}) == len(second.records) == 4




def test_the_guesses_after_the_first_are_judged_while_its_result_is_read(tmp_path, monkeypatch):
    """Once the first guess is sent, the next guesses are judged in the judging's thread: a slow compiled stage for
    them (8 s each here; flash_attn/large's on an H100, with the harness's edge shapes, 3 s) no longer holds the first
    guess's result unread (there: timed at 2.0 s, read at 8.0 s); they are still sent before the space is judged."""
    import time as clock

    from kernelrules.tune.gate import Gate

    judge_compiled, threads = Gate.judge_compiled, []

    def slow_in_the_judging_thread(gate, config, result):
        threads.append(threading.current_thread().name)
        if threads[-1] == "kernelrules-judge":  # the guesses after the first (a later problem's early path)
            clock.sleep(8)
        return judge_compiled(gate, config, result)

    monkeypatch.setattr(Gate, "judge_compiled", slow_in_the_judging_thread)
    monkeypatch.setattr(Gate, "probes_over", lambda gate: False)  # the guesses' compiles end first: judged here
    _first, second = tune_many([FIXTURES / "matmul_small.yaml", _matmul_at_64(tmp_path)],
                               **dict(_common(tmp_path), trials=4, jobs=4, stage="compiled"))
    by_trial = {r["trial"]: r for r in second.records}
    startup = second.summary["startup"]
    assert by_trial[0]["sent_s"] == pytest.approx(startup["first_guess_sent_s"], abs=0.01)
    assert by_trial[0]["elapsed_s"] < by_trial[0]["sent_s"] + 6, by_trial[0]  # read while trial 1 was judged
    assert "kernelrules-judge" in threads  # the later guesses' compiled stage, in the judging's thread
    assert by_trial[1]["seeded"] == "perf_model" and by_trial[1]["sent_s"] < startup["space_judged_s"]
    assert len({r["key"] for r in second.records}) == len(second.records) == 4


def test_a_guess_still_compiling_when_the_probes_are_over_does_not_hold_the_judging(tmp_path, monkeypatch):
    """The judging's thread judges the early guesses whose compiles are over before the probes'; the rest it leaves
    to the config stage once the space is judged, and to the loop's compile stream: two flash_attn guesses over the
    shared memory, each a 3 s compile judged one after the other, held the space's judging (and the perf model's
    seeds) until 8.2 s on the H200 (pairs-c972bf3-warm). Here the later guesses' compiles are never over in time:
    the judging waits for none of them, and they are compiled and timed after it, each once."""
    from kernelrules.tune.gate import Gate

    judge_now, left = Gate.judge_now, []

    def not_in_the_judging_thread(gate, config):
        assert threading.current_thread().name != "kernelrules-judge", "a blocking compile held the judging"
        return judge_now(gate, config)

    monkeypatch.setattr(Gate, "judge_now", not_in_the_judging_thread)
    monkeypatch.setattr(Gate, "judge_if_compiled", lambda gate, config: left.append(config) or None)
    _first, second = tune_many([FIXTURES / "matmul_small.yaml", _matmul_at_64(tmp_path)],
                               **dict(_common(tmp_path), trials=4, jobs=4, stage="compiled"))
    assert left  # the early path ran, and found the later guesses' compiles not over
    startup = second.summary["startup"]
    by_trial = {r["trial"]: r for r in second.records}
    assert by_trial[0]["sent_s"] == pytest.approx(startup["first_guess_sent_s"], abs=0.01)
    later = [by_trial[t] for t in (1, 2) if t in by_trial]
    assert later and all(r["seeded"] == "perf_model" for r in later)
    for record in later:  # compiled by the stream after the judging, then timed
        assert record["status"] in ("better", "slower") and record["sent_s"] > startup["space_judged_s"], record
    assert len({r["key"] for r in second.records}) == len(second.records) == 4


def test_a_later_problem_files_its_compiles_in_its_own_cache(tmp_path, monkeypatch):
    """The session's compile pool files a later problem's compiles, those made ahead included, in that problem's
    result cache. It kept the first problem's: a later run of the same space with its own caches (the H200 warm
    series: a one-trial warm-up run first) had its first guess judged from the warm-up's entry, whose binary sits
    in the warm-up's Triton cache, and the benchmark worker compiled it again (0.4-0.65 s on the H200)."""
    from kernelrules.compile.cache import ResultCache
    from kernelrules.tune.driver import TuneOptions, Tuner
    from kernelrules.tune.gate import Gate
    from kernelrules.tune.session import TuneSession

    judged, problem = [], [0]
    judge_compiled = Gate.judge_compiled

    def noting(gate, config, result):
        judged.append((problem[0], gate, config))
        return judge_compiled(gate, config, result)

    monkeypatch.setattr(Gate, "judge_compiled", noting)
    session = TuneSession()
    try:
        runs = []
        for number in (1, 2):  # the same space twice, each run with its own study and caches
            problem[0] = number
            options = dict(_common(tmp_path), trials=4, jobs=4, stage="compiled",
                           storage=str(tmp_path / f"study{number}.db"), cache_dir=str(tmp_path / f"cache{number}"))
            runs.append(Tuner(FIXTURES / "matmul_small.yaml", TuneOptions(**options), session=session).run())
        assert runs[1].summary["startup"].get("first_guess_sent_s") is not None  # the early path ran
        own = ResultCache(str(tmp_path / "cache2"))
        second = [(gate, config) for number, gate, config in judged if number == 2]
        assert second
        for gate, config in second:  # every verdict of the second run came from a compile filed in its own cache
            found, _key = gate.pruner.pool._answer_early(gate.job(config), own)
            assert found is not None, f"{config}: judged from a compile filed elsewhere"
    finally:
        session.close()


def test_a_resumed_study_times_no_first_guess_early(tmp_path):
    """The first guesses compile before the study opens, so before the run knows whether the study is new: a later
    problem whose study has trials already (the same space again, the same storage) sends none of them early, and
    its records repeat no config."""
    from kernelrules.tune.driver import TuneOptions, Tuner
    from kernelrules.tune.session import TuneSession

    session = TuneSession()
    try:
        options = dict(_common(tmp_path), trials=2, jobs=4, stage="compiled")
        first = Tuner(FIXTURES / "matmul_small.yaml", TuneOptions(**options), session=session).run()
        again = Tuner(FIXTURES / "matmul_small.yaml", TuneOptions(**dict(options, trials=4)), session=session).run()
    finally:
        session.close()
    assert "first_guess_sent_s" not in again.summary["startup"]
    keys = [r["key"] for r in first.records + again.records]  # the study's 4 trials: 2 of each run
    assert len(first.records) == len(again.records) == 2 and len(set(keys)) == 4


def test_while_a_later_problem_is_judged_its_guesses_are_timed_and_read(tmp_path, monkeypatch):
    """The space is judged in a thread while the run's thread reads the worker's results and sends it the next guess
    judged already: with a slow judging (4 s more), the first guess's result is filed and the second guess sent
    before the space is judged (read only at the loop's first wait, rope/large's first result sat 6.4 s unread)."""
    import time as clock

    from kernelrules.tune.gate import Gate

    prejudge, threads = Gate.prejudge, []

    def slow_prejudge(gate, configs):
        threads.append(threading.current_thread().name)
        clock.sleep(4)
        return prejudge(gate, configs)

    monkeypatch.setattr(Gate, "prejudge", slow_prejudge)
    first, second = tune_many([FIXTURES / "matmul_small.yaml", _matmul_at_64(tmp_path)],
                              **dict(_common(tmp_path), trials=4, jobs=4, stage="compiled"))
    assert threads == ["MainThread", "kernelrules-judge"]  # the first problem (a fresh worker) judges in its thread
    judged = second.summary["startup"]["space_judged_s"]
    by_trial = {r["trial"]: r for r in second.records}
    assert by_trial[0]["elapsed_s"] < judged - 1, (by_trial[0]["elapsed_s"], judged)
    assert by_trial[1]["seeded"] == "perf_model" and by_trial[1]["sent_s"] < judged
    assert len({r["key"] for r in second.records}) == len(second.records) == 4


def test_an_error_while_a_later_problem_is_judged_in_a_thread_reaches_the_caller(tmp_path, monkeypatch):
    from kernelrules.tune.gate import Gate

    prejudge, calls = Gate.prejudge, []

    def failing_the_second_time(gate, configs):
        calls.append(1)
        if len(calls) == 2:
            raise KernelrulesError("the space does not match the kernel")
        return prejudge(gate, configs)

    monkeypatch.setattr(Gate, "prejudge", failing_the_second_time)
    with pytest.raises(KernelrulesError, match="does not match the kernel"):
        tune_many([FIXTURES / "matmul_small.yaml", _matmul_at_64(tmp_path)],
                  **dict(_common(tmp_path), trials=4, jobs=4, stage="compiled"))
    assert _bench_workers_of_this_process() == []


def test_a_later_harness_problem_times_its_first_guess_before_its_space_is_judged(tmp_path):
    """A harness problem takes the early path too: its edge shapes, read by the kept worker from the harness, are
    taken before the guesses compile (none under --interpret, where nothing shares a Triton cache)."""
    text = HARNESS.read_text().replace("faulty.py:", f"{FIXTURES / 'faulty.py'}:")
    text = text.replace("scale_harness.py:", f"{FIXTURES / 'scale_harness.py'}:")
    text = text.replace("BLOCK: [16, 32]", "BLOCK: [16, 32, 64]") + "  grid: cdiv(n, BLOCK)\n"  # for the perf model
    harness = tmp_path / "harness.tune.yaml"
    harness.write_text(text)
    first, second = tune_many([FIXTURES / "matmul_small.yaml", harness],
                              **dict(_common(tmp_path), trials=3, jobs=4, stage="compiled"))
    startup = second.summary["startup"]
    assert startup["first_guess_sent_s"] < startup["space_judged_s"]
    sent = min((r for r in second.records if r.get("sent_s") is not None), key=lambda r: r["sent_s"])
    assert sent["trial"] == 0 and sent["seeded"] == "perf_model" and sent["status"] in ("better", "slower")


def test_the_edge_shapes_a_worker_read_from_the_harness_are_taken_once():
    from types import SimpleNamespace

    from kernelrules.tune.driver import Tuner

    taken = []
    gate = SimpleNamespace(add_edge_signatures=lambda s: not taken and not taken.append(s))
    tuner = SimpleNamespace(gate=gate, notes=[])
    worker = SimpleNamespace(info={"edge_signatures": [{"n": "i32"}]})
    assert Tuner._take_harness_edges(tuner, [worker])  # early, before the guesses compile
    assert not Tuner._take_harness_edges(tuner, [worker])  # again after the judging: taken already, no second note
    assert taken == [[{"n": "i32"}]] and len(tuner.notes) == 1
    assert not Tuner._take_harness_edges(tuner, [SimpleNamespace(info={})]) and not Tuner._take_harness_edges(tuner, [])
