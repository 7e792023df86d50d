"""`tune` starts its first compiles and the sampler's slow imports while the benchmark workers start."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("optuna")
pytest.importorskip("torch")

from kernelrules.compile.pool import CompilePool  # noqa: E402
from kernelrules.tune import tune  # noqa: E402
from kernelrules.tune.driver import Tuner  # noqa: E402
from kernelrules.tune.compile_stream import CompileStream  # noqa: E402
from kernelrules.errors import KernelrulesError  # noqa: E402
from kernelrules.tune.gate import Gate  # noqa: E402
from tune_checks import children_running  # noqa: E402
from kernelrules.tune.startup import (MAX_FIRST_GUESSES, MAX_GUESS_CONFIGS, first_compiles, guess_budget,  # noqa: E402
                                      room_for_register_probes, warm_sampler_imports)

SMALL = Path(__file__).parent.parent / "fixtures" / "tune" / "matmul_small.yaml"
REPO = Path(__file__).resolve().parents[2]


def test_the_first_seeds_compile_while_the_workers_start_and_are_not_compiled_again(tmp_path, monkeypatch):
    started = threading.Event()
    wanted, seeded, at_wait, dispatched = [], [], [], collections.Counter()
    want, seed, await_workers, dispatch = CompileStream.want, Tuner._seed, Tuner._await_workers, CompilePool._dispatch

    def recording_want(stream, config):
        wanted.append(config.key())
        return want(stream, config)

    def recording_seed(tuner):
        seeds = seed(tuner)
        seeded.extend(c.key() for c in seeds)
        return seeds

    def recording_await(tuner, workers):
        assert started.wait(60), "no compile started before the loop"
        at_wait.append(list(wanted))
        return await_workers(tuner, workers)

    def counting_dispatch(pool, worker, job, key, shared_dir=None):
        dispatched[job] += 1
        started.set()
        return dispatch(pool, worker, job, key, shared_dir)

    monkeypatch.setattr(CompileStream, "want", recording_want)
    monkeypatch.setattr(Tuner, "_seed", recording_seed)
    monkeypatch.setattr(Tuner, "_await_workers", recording_await)
    monkeypatch.setattr(CompilePool, "_dispatch", counting_dispatch)
    result = tune(SMALL, arch="ampere", interpret=True, trials=6, storage=str(tmp_path / "study.db"),
                  stage="compiled", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=2, seed=3)
    assert len(seeded) >= 3
    # the loop's first compiles (one worker + one per compile worker, jobs=2), started before any worker was awaited
    assert at_wait == [seeded[:3]]
    timed = [r for r in result.records if r["status"] in ("better", "slower")]
    assert len(timed) == 6
    assert dispatched and max(dispatched.values()) == 1  # each config compiled once: the loop's want found it


def test_first_compiles_keeps_the_order_and_the_count():
    assert first_compiles([5, 1, 4, 2, 3], 2, lambda c: c != 1) == [5, 4]
    assert first_compiles([], 3, lambda c: True) == []


def test_the_qmc_samplers_import_scipy_stats_in_the_background():
    assert warm_sampler_imports("tpe") is None and warm_sampler_imports("random") is None
    code = ("import sys; from kernelrules.tune.startup import warm_sampler_imports; "
            "thread = warm_sampler_imports('auto'); assert thread.daemon; thread.join(120); "
            "print('scipy.stats.qmc' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_sysconfig_is_filled_before_the_import_thread_starts():
    """CPython 3.11 publishes sysconfig's variables before filling them: scipy's import in the thread must find them
    filled, or a Triton import in the main thread meanwhile can read EXE as None (docs/tune.md, step 8)."""
    code = ("import sysconfig; from kernelrules.tune.startup import warm_sampler_imports; "
            "empty = sysconfig._CONFIG_VARS is None; thread = warm_sampler_imports('auto'); "
            "filled = sysconfig._CONFIG_VARS is not None and 'EXE' in sysconfig._CONFIG_VARS; thread.join(120); "
            "print(empty, filled)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "True"



def test_an_error_while_the_space_is_judged_is_the_runs_error(tmp_path, monkeypatch):
    def failing_prejudge(gate, configs):
        raise KernelrulesError("the kernel does not match the space", path="space.yaml")

    monkeypatch.setattr(Gate, "prejudge", failing_prejudge)
    with pytest.raises(KernelrulesError, match="does not match the space"):
        tune(SMALL, arch="ampere", interpret=True, trials=2, storage=str(tmp_path / "study.db"), stage="config",
             cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1)


def test_an_idle_worker_gets_a_judged_config_before_the_sampler_is_asked_for_the_whole_lookahead(tmp_path, monkeypatch):
    """With one worker and a lookahead of 12, the loop asks for a config, and once a verdict is in and the worker
    idle it sends that config before asking for more (it used to ask for all 13 first)."""
    streams, asks = [], []
    want, ask = CompileStream.want, Tuner._ask

    def capturing_want(stream, config):
        if stream not in streams:
            streams.append(stream)
        return want(stream, config)

    def ask_after_a_verdict(tuner):
        asks.append(1)
        if len(asks) == 2:  # the first candidate's verdict is in before the second is admitted
            deadline = time.monotonic() + 60
            while not streams[0].ready() and time.monotonic() < deadline:
                time.sleep(0.05)
        return ask(tuner)

    monkeypatch.setattr(CompileStream, "want", capturing_want)
    monkeypatch.setattr(Tuner, "_ask", ask_after_a_verdict)
    result = tune(SMALL, arch="ampere", interpret=True, trials=14, storage=str(tmp_path / "study.db"),
                  stage="compiled", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=2, seed=3,
                  lookahead=12, model_seeds=4)
    first_sent = min(r["sent_s"] for r in result.records if r.get("sent_s") is not None)
    third_asked = sorted(r["asked_s"] for r in result.records if r.get("asked_s") is not None)[2]
    assert first_sent < third_asked


def test_a_result_that_comes_in_while_the_loop_asks_frees_its_worker_at_once(tmp_path, monkeypatch):
    """A worker is busy until the loop reads its result. Reading only after the lookahead was full left the GPU idle
    while the loop asked (gemm/large on the H200: a result waited 1.5 s unread). With slow asks, once the first
    config is sent, the second is sent before the loop's last ask, not after it."""
    ask = Tuner._ask

    def slow_ask_once_one_is_sent(tuner):
        if any(w.busy for w in tuner.workers):
            time.sleep(0.25)
        return ask(tuner)

    monkeypatch.setattr(Tuner, "_ask", slow_ask_once_one_is_sent)
    result = tune(SMALL, arch="ampere", interpret=True, trials=40, storage=str(tmp_path / "study.db"),
                  stage="compiled", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=2, seed=3,
                  lookahead=30, model_seeds=4)
    sent = sorted(r["sent_s"] for r in result.records if r.get("sent_s") is not None)
    asked = sorted(r["asked_s"] for r in result.records if r.get("asked_s") is not None)
    assert len(sent) >= 2 and len(asked) >= 31
    assert sent[1] < asked[30], (sent[:3], asked[28:32])


def test_at_most_eight_seeds_compile_while_the_workers_start(tmp_path, monkeypatch):
    """16 perf-model seeds are queued, but the loop's first compiles, sent while the benchmark workers start, stay
    at MAX_FIRST_GUESSES whatever the lookahead: more would compete with the workers' start for the cores."""
    from kernelrules.tune import driver

    counts = []
    original = driver.first_compiles
    monkeypatch.setattr(driver, "first_compiles", lambda seeds, count, passes: counts.append((len(seeds), count))
                        or original(seeds, count, passes))
    result = tune(SMALL, arch="ampere", interpret=True, trials=2, storage=str(tmp_path / "study.db"),
                  stage="compiled", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=2, seed=3,
                  lookahead=12)
    assert counts == [(16, MAX_FIRST_GUESSES)]
    assert "16 configs from the perf model queued first" in result.notes


def test_a_worker_can_start_when_it_is_idle_and_a_candidate_or_a_verdict_is_ready():
    from types import SimpleNamespace

    from kernelrules.tune.driver import _worker_can_start

    idle, busy = SimpleNamespace(busy=False), SimpleNamespace(busy=True)
    verdict, none = SimpleNamespace(ready=lambda: True), SimpleNamespace(ready=lambda: False)
    assert _worker_can_start([busy, idle], ["candidate"], none)
    assert _worker_can_start([idle], [], verdict)
    assert not _worker_can_start([idle], [], none) and not _worker_can_start([idle], [], None)
    assert not _worker_can_start([busy], ["candidate"], verdict)


def test_the_perf_models_seeds_go_to_the_workers_in_its_order_then_the_rest_as_they_became_ready():
    from types import SimpleNamespace

    from kernelrules.tune.driver import _next_to_send

    def candidate(number, seeded=None):
        return SimpleNamespace(trial=SimpleNamespace(number=number), seeded=seeded)

    # ready in the order their compiles finished: a sampled config, seeds 3 and 1, a queued retry
    pending = collections.deque([candidate(7), candidate(3, "perf_model"), candidate(1, "perf_model"), candidate(9)])
    sent = [_next_to_send(pending).trial.number for _ in range(4)]
    assert sent == [1, 3, 7, 9] and not pending


def _compile_workers_of_this_process() -> list[int]:
    """Live compile-pool workers whose parent is this process (Linux /proc)."""
    return children_running("kernelrules.compile.pool")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_an_error_while_the_study_opens_leaves_no_compile_worker(tmp_path):
    """The study turns out to be another kernel's: the run's error closes the gate's compile pool and no
    compile worker outlives the call, also seconds later (a design that judged the space in a thread beside
    the study's opening left that thread restarting two workers 4 s after the error; docs/tune.md)."""
    common = dict(interpret=True, trials=1, storage=str(tmp_path / "study.db"), study_name="s", stage="config",
                  top_k=1, rounds=1)
    tune(SMALL, arch="ampere", cache_dir=str(tmp_path / "a"), **common)
    other = Path(__file__).parents[2] / "benchmarks" / "suite" / "softmax" / "small.tune.yaml"
    before = set(_compile_workers_of_this_process())  # pools of earlier tests in this process, if any
    with pytest.raises(KernelrulesError, match="made for another kernel"):
        tune(other, arch="hopper", cache_dir=str(tmp_path / "b"), **common)
    for _ in range(12):  # a judging thread left running would start new workers seconds later
        assert set(_compile_workers_of_this_process()) <= before
        time.sleep(0.5)


def test_a_worker_warms_every_check_case_and_the_timing_sets_before_its_first_request(monkeypatch):
    """bench_process._Session.warm: after "ready", the inputs and references of every seed and edge shape a check
    uses, and the timing copies, exist before any config is asked for (the first trial no longer builds them), and
    each output was compared once with its reference (torch's comparison kernels loaded)."""
    from kernelrules.space import load_space
    from kernelrules.tune.bench_process import _Session
    from kernelrules.tune.problem import load_problem
    from kernelrules.tune.worker import WorkerSettings

    spec = load_problem(load_space(SMALL))
    from kernelrules.tune import correctness

    session = _Session(WorkerSettings(spec=spec, interpret=True), conn=None)
    expected = {(tuple(sorted(sizes.items())), seed) for sizes, seed in session.cases_to_check()}
    assert len(expected) == len(spec.seeds) + len(spec.edge_sizes) > 1
    assert session.cases == {} and session.timing_sets is None
    compared = []
    original = correctness.compare

    def spy(name, out, ref64, **kwargs):
        result = original(name, out, ref64, **kwargs)
        compared.append((name, out.dtype == session.cases[next(iter(session.cases))][0][name].dtype, result["ok"]))
        return result

    monkeypatch.setattr(correctness, "compare", spy)
    session.warm()
    assert compared == [(name, True, True) for name in session.runner.outputs]  # once per output, a passing one
    assert set(session.cases) == expected
    assert session.timing_sets and session.timing_sets[0] is session.cases[(tuple(sorted(spec.sizes.items())),
                                                                           spec.seeds[0])][0]


def test_a_gpu_worker_warms_tritons_source_hash_even_when_its_inputs_cannot_be_built(monkeypatch):
    """The first JIT launch in a worker process hashes Triton's sources and libtriton (``triton_key``) before it finds
    the binary in the cache; warm() computes it after "ready". Its steps are independent: here (no GPU) the inputs
    cannot be made on "cuda", and the hash is computed all the same."""
    from triton.runtime import cache

    from kernelrules.space import load_space
    from kernelrules.tune.bench_process import _Session
    from kernelrules.tune.problem import load_problem
    from kernelrules.tune.worker import WorkerSettings

    calls = []
    monkeypatch.setattr(cache, "triton_key", lambda: calls.append("key") or "k")
    session = _Session(WorkerSettings(spec=load_problem(load_space(SMALL)), interpret=False), conn=None)
    session.runner.make = lambda sizes, seed: (_ for _ in ()).throw(RuntimeError("no CUDA here"))
    session.warm()
    assert calls == ["key"] and session.cases == {}
    interpreted = _Session(WorkerSettings(spec=load_problem(load_space(SMALL)), interpret=True), conn=None)
    interpreted.warm()  # the interpreter compiles nothing: no hash
    assert calls == ["key"]


def test_a_gpu_worker_warms_tritons_first_specialization_on_a_problem_tensor(monkeypatch):
    """warm() specializes one of the problem's tensors as the first launch would (jit_warmup.warm_specializer), after
    the hash; under the interpreter it does neither."""
    import dataclasses

    from triton.runtime import cache, jit

    from kernelrules.space import load_space
    from kernelrules.tune.bench_process import _Session
    from kernelrules.tune.problem import load_problem
    from kernelrules.tune.worker import WorkerSettings

    calls = []
    monkeypatch.setattr(cache, "triton_key", lambda: calls.append("key") or "k")
    monkeypatch.setattr(jit, "mangle_type", lambda arg, specialize=False: calls.append(("mangle", arg)) or "*fp32")
    session = _Session(WorkerSettings(spec=load_problem(load_space(SMALL)), interpret=True), conn=None)
    session.warm()
    assert calls == []  # interpreted: no JIT
    session.settings = dataclasses.replace(session.settings, interpret=False)  # the CPU tensors stand in for CUDA ones
    session.warm()
    assert calls[0] == "key" and len(calls) == 2
    tensors = session.cases[(tuple(sorted(session.spec.sizes.items())), session.spec.seeds[0])][0]
    assert any(calls[1][1] is t for t in tensors.values())


def test_the_specializer_warm_up_loads_what_tritons_first_launch_imports():
    """In Triton 3.6 the first specialization of a tensor argument imports the gluon modules (0.09-0.13 s of the
    first trial's check on the H200): warm_specializer does that import, in a fresh process, and says so; a list
    with no tensor specializes nothing."""
    from kernelrules.tune.jit_warmup import warm_specializer

    assert warm_specializer([1, "a", None]) is False
    code = ("import sys, torch; from kernelrules.tune.jit_warmup import warm_specializer; "
            "before = 'triton.experimental.gluon' in sys.modules; done = warm_specializer([3, torch.zeros(4)]); "
            "print(before, done, 'triton.experimental.gluon' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["False", "True", "True"], out.stderr[-2000:]


def test_a_benchmark_worker_starts_without_the_rule_language_the_schema_or_yaml():
    """The worker's chain to its first timing starts with its own imports, before torch's: its module and the
    settings it unpickles (a ProblemSpec) load no lark, jsonschema, YAML or space loader (0.22 s -> 0.09 s of imports
    on a 2-core CPU); the problem's argument expressions need only safeexpr."""
    import pickle

    from kernelrules.space import load_space
    from kernelrules.tune.problem import load_problem
    from kernelrules.tune.worker import WorkerSettings

    blob = pickle.dumps(WorkerSettings(spec=load_problem(load_space(SMALL)), interpret=True))
    code = ("import pickle, sys; import kernelrules.tune.bench_process; settings = pickle.loads(sys.stdin.buffer.read()); "
            "from kernelrules.expr import safeexpr; "
            "print(settings.spec.kernel_name, *[m for m in ('lark', 'jsonschema', 'yaml', 'kernelrules.space', "
            "'kernelrules.expr.parser', 'optuna', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, timeout=120)
    assert out.stdout.decode().split() == [load_problem(load_space(SMALL)).kernel_name], out.stderr.decode()[-2000:]


def test_the_rule_language_names_still_import_from_the_package():
    """kernelrules.expr loads its parser and compiler on first use; every public name is still there."""
    import kernelrules.expr as expr

    for name in expr.__all__:
        assert getattr(expr, name) is not None
    assert expr.compile_expr(expr.parse("a + 1"))({"a": 2}) == 3
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        expr.nope  # noqa: B018


def test_first_guesses_leave_the_probes_their_workers_and_need_two_spare():
    assert guess_budget(6, 16, 8) == (8, 14)
    assert guess_budget(6, 16, 16) == (MAX_FIRST_GUESSES, 14)  # tune's 16 seeds: 8 guessed while the worker starts
    assert guess_budget(6, 5, 8) == (3, 3)
    assert guess_budget(3, 3, 8) == (0, 0)  # one spare worker: the probes would wait for it
    assert guess_budget(3, 16, 0) == (0, 0)  # no seeds asked for
    assert guess_budget(0, 16, 8) == (0, 0)
    assert guess_budget(MAX_GUESS_CONFIGS + 1, 16, 8) == (0, 0)  # ranking it would delay the judging
    assert guess_budget(6, 16, 16, probes=4) == (MAX_FIRST_GUESSES, 12)  # register probes sent ahead take two more
    assert guess_budget(6, 5, 8, probes=0) == (3, 3)  # none sent: the judging's two are still counted


def test_register_probes_go_ahead_only_where_they_leave_the_first_guesses_two_workers():
    assert room_for_register_probes(16, 2, 2)
    assert room_for_register_probes(6, 2, 2)
    assert not room_for_register_probes(5, 2, 2)  # one worker left for the guesses: the judging compiles them instead
    assert not room_for_register_probes(16, 2, 0)  # a kernel with dots has none


def test_with_compile_workers_to_spare_the_first_seed_compiles_while_the_space_is_judged(tmp_path, monkeypatch):
    """jobs=4: two workers for the probes, two for the perf model's first guesses from the configs' values; the
    first seed judged afterwards was among them, so its compile had started before the judging ended, and no
    compile job ran twice (the stream's compile of it took the result)."""
    dispatched, at_judged, seeded = collections.Counter(), [], []
    dispatch, prejudge, seed = CompilePool._dispatch, Gate.prejudge, Tuner._seed

    def counting_dispatch(pool, worker, job, key, shared_dir=None):
        dispatched[job] += 1
        return dispatch(pool, worker, job, key, shared_dir)

    def recording_prejudge(gate, configs):
        judged = prejudge(gate, configs)
        at_judged.append((gate, set(dispatched)))
        return judged

    def recording_seed(tuner):
        seeds = seed(tuner)
        seeded.extend(seeds)
        return seeds

    monkeypatch.setattr(CompilePool, "_dispatch", counting_dispatch)
    monkeypatch.setattr(Gate, "prejudge", recording_prejudge)
    monkeypatch.setattr(Tuner, "_seed", recording_seed)
    result = tune(SMALL, arch="ampere", interpret=True, trials=3, storage=str(tmp_path / "study.db"),
                  stage="compiled", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=4, seed=3)
    assert seeded and len(at_judged) == 1
    gate, before_judged = at_judged[0]
    assert gate.job(seeded[0]) in before_judged
    assert max(dispatched.values()) == 1
    assert sum(r["status"] in ("better", "slower") for r in result.records) == 3


def test_the_raw_space_starts_without_judging_it(tmp_path, monkeypatch):
    """stage="none" (a baseline's raw space): no probe compile, no compile worker started, nothing rejected; the
    trials run as asked (a TPE or random baseline does not pay for kernelrules' judging)."""
    dispatched, spawned = [], []
    dispatch, spawn = CompilePool._dispatch, CompilePool._spawn

    def counting_dispatch(pool, worker, job, key, shared_dir=None):
        dispatched.append(job)
        return dispatch(pool, worker, job, key, shared_dir)

    def counting_spawn(pool):
        spawned.append(pool)
        return spawn(pool)

    monkeypatch.setattr(CompilePool, "_dispatch", counting_dispatch)
    monkeypatch.setattr(CompilePool, "_spawn", counting_spawn)
    result = tune(SMALL, arch="ampere", interpret=True, trials=3, storage=str(tmp_path / "study.db"), stage="none",
                  sampler="random", model_seeds=0, cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=2)
    assert dispatched == [] and spawned == []
    assert result.summary["config_stage"]["rejected"] == 0
    assert sum(r["status"] in ("better", "slower") for r in result.records) == 3


def test_the_benchmark_workers_start_before_the_gate_is_built_and_are_stopped_when_it_fails(tmp_path, monkeypatch):
    """A benchmark worker's start (torch, CUDA, the references) is the longest chain to the first timing on a GPU
    machine, so ``run`` starts the workers before it builds the gate; a gate that cannot be built still ends with
    every worker stopped and the run's error."""
    order = []
    killed = []

    class FakeWorker:
        info = None

        def kill(self):
            killed.append(self)

    def start_workers(tuner):
        order.append("workers")
        return [FakeWorker()]

    def failing_gate(*args, **kwargs):
        order.append("gate")
        raise KernelrulesError("the gate cannot be built", path="space.yaml")

    monkeypatch.setattr(Tuner, "_start_workers", start_workers)
    monkeypatch.setattr("kernelrules.tune.driver.Gate", failing_gate)
    with pytest.raises(KernelrulesError, match="cannot be built"):
        tune(SMALL, arch="ampere", interpret=True, trials=1, storage=str(tmp_path / "study.db"), stage="config",
             cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1)
    assert order == ["workers", "gate"] and len(killed) == 1


def test_loading_a_space_for_tuning_does_not_import_optuna():
    """The tuner keys the space's configs before it starts the benchmark workers: that key must not import Optuna
    (a quarter of a second on 2 cores, before the workers' start); the study imports it later."""
    code = ("import sys; from kernelrules.tune.driver import Tuner; from kernelrules.tune.options import TuneOptions; "
            f"t = Tuner({str(SMALL)!r}, TuneOptions(arch='ampere', interpret=True)); "
            "print(len(t.space_keys), 'optuna' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) > 1 and out[1] == "False"


class _Pipe:
    """A connection with messages waiting (``poll``/``recv``) that records what is sent on it."""

    def __init__(self, waiting=()):
        self.waiting, self.sent = list(waiting), []

    def poll(self, timeout=None):
        return bool(self.waiting)

    def recv(self):
        return self.waiting.pop(0)

    def send(self, message):
        self.sent.append(message)

    def close(self):
        pass


def test_a_ready_worker_installs_the_drivers_triton_key_and_keeps_a_request_sent_meanwhile(monkeypatch):
    """bench_process.take_early_messages: the driver's Triton source hash waiting in the socket is installed before
    the warm-up (which then does not compute its own); any request that came with it is kept, in order."""
    from kernelrules.tune import bench_process

    installed = []
    monkeypatch.setattr(bench_process, "install_triton_key", installed.append)
    shared = ("/site/triton/__init__.py", "abc")
    conn = _Pipe([("triton_key", shared), ("evaluate", {"BLOCK": 64}), ("stop",)])
    assert bench_process.take_early_messages(conn) == [("evaluate", {"BLOCK": 64}), ("stop",)]
    assert installed == [shared] and conn.waiting == []
    assert bench_process.take_early_messages(_Pipe()) == []


def test_the_shared_triton_key_is_installed_only_for_the_same_triton():
    """compile.triton_key.install: the worker's JIT takes the driver's hash for its own Triton installation only."""
    import triton
    from triton.runtime import cache

    from kernelrules.compile.triton_key import install

    original = cache.triton_key
    try:
        assert not install(("/elsewhere/triton/__init__.py", "abc"))
        assert cache.triton_key is original
        assert install((os.path.abspath(triton.__file__), "abc"))
        assert cache.triton_key() == "abc"
    finally:
        cache.triton_key = original


def test_a_benchmark_worker_gets_the_drivers_triton_key_once_and_again_after_a_restart(monkeypatch):
    """BenchWorker.share_triton_key sends the hash once (unknown yet: nothing); a restarted process gets it with
    its settings."""
    from kernelrules.space import load_space
    from kernelrules.tune.problem import load_problem
    from kernelrules.tune.worker import BenchWorker, WorkerSettings

    worker = BenchWorker(0, WorkerSettings(spec=load_problem(load_space(SMALL))), compile_timeout=5, bench_timeout=5)
    worker.conn = _Pipe()
    worker.share_triton_key(None)
    assert worker.conn.sent == []
    shared = ("/site/triton/__init__.py", "abc")
    worker.share_triton_key(shared)
    worker.share_triton_key(shared)
    assert worker.conn.sent == [("triton_key", shared)]

    from multiprocessing.connection import Connection

    from kernelrules.tune import worker as worker_module

    peers = []

    class NoProcess:  # the worker's end of the socket is kept here instead of in a process
        ready = False

        @classmethod
        def start(cls, module, args, *, pass_fds, **kwargs):
            peers.append(Connection(os.dup(pass_fds[0])))
            return cls()

        def kill(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(worker_module, "SupervisedProcess", NoProcess)
    worker.process = NoProcess()
    worker.restart()  # the real start(): settings, then the hash
    received = []
    while peers[0].poll(0.5):
        received.append(peers[0].recv())
    assert received == [worker.settings, ("triton_key", shared)]


def test_the_driver_hands_the_reported_triton_key_to_its_benchmark_workers(tmp_path, monkeypatch):
    """On a GPU (not under --interpret) the gate's first compile worker reports Triton's source hash to the driver,
    which passes it to every benchmark worker as the pool reads it; under --interpret nothing is asked for."""
    callbacks = []
    received = []

    class FakeWorker:
        info = None

        def share_triton_key(self, shared):
            received.append(shared)

        def kill(self):
            pass

    def record(gate, on_triton_key=None):
        callbacks.append(on_triton_key)
        raise KernelrulesError("stop here", path="space.yaml")

    monkeypatch.setattr(Tuner, "_start_workers", lambda tuner: [FakeWorker(), FakeWorker()])
    monkeypatch.setattr(Gate, "start_compile_workers", record)
    for interpret in (False, True):
        with pytest.raises(KernelrulesError, match="stop here"):
            tune(SMALL, arch="hopper", interpret=interpret, trials=1, storage=str(tmp_path / f"{interpret}.db"),
                 cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1)
    on_gpu, interpreted = callbacks
    assert interpreted is None and callable(on_gpu)
    other = threading.Thread(target=on_gpu, args=(("/site/triton/__init__.py", "abc"),))
    other.start()
    other.join()
    assert received == []  # read by another thread (the compile stream's): the loop's connections are not its own
    on_gpu(("/site/triton/__init__.py", "abc"))
    assert received == [("/site/triton/__init__.py", "abc")] * 2


def test_the_probe_compiles_are_sent_before_the_study_opens_and_compiled_once(tmp_path, monkeypatch):
    """The resource model's first probes go to the compile workers before the study opens (they compile while it
    opens); the judging then takes their results instead of compiling them again."""
    from kernelrules.judge.pipeline import PROBE_TIMEOUT

    dispatched = []
    original = CompilePool._dispatch

    def spy(pool, worker, job, key, shared_dir=None):
        dispatched.append((job.timeout, key, pool._ahead.owns(job), worker.process.ready))
        return original(pool, worker, job, key, shared_dir)

    monkeypatch.setattr(CompilePool, "_dispatch", spy)
    result = tune(SMALL, arch="hopper", interpret=True, trials=1, storage=str(tmp_path / "study.db"),
                  stage="compiled", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=2)
    startup = result.summary["startup"]
    assert startup["workers_started_s"] <= startup["probes_sent_s"] <= startup["storage_opened_s"]
    probes = [d for d in dispatched if d[0] == PROBE_TIMEOUT]
    ahead = [d for d in probes if d[2]]
    assert len(ahead) >= 2 and probes[:len(ahead)] == ahead  # the first probes, sent ahead (later ones: Hopper's
    assert not ahead[0][3]  # other MMA path, asked by the judging); the first went to a worker still starting
    assert len({key for _t, key, _a, _r in probes}) == len(probes)  # none compiled twice


def test_probes_that_cannot_be_sent_early_are_left_to_the_judging(tmp_path, monkeypatch):
    """Sending the probes before the study opens is an optimisation: a failure there (here, the plain rules raise
    once) leaves the probes to the judging, and the run goes on as before."""
    calls = []
    original = Gate.plain_survivors

    def fails_first(gate, configs):
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("not now")
        return original(gate, configs)

    monkeypatch.setattr(Gate, "plain_survivors", fails_first)
    result = tune(SMALL, arch="hopper", interpret=True, trials=1, storage=str(tmp_path / "study.db"),
                  stage="compiled", cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=2)
    assert calls and any(r["status"] in ("better", "slower") for r in result.records)


def test_the_first_guesses_compile_while_the_study_opens(tmp_path, monkeypatch):
    """The perf model's first guesses go to the spare compile workers before the study opens (0.09-0.15 s of the
    H200 warm series' start), not after it."""
    events = []
    compile_ahead, open_study = Gate.compile_ahead, Tuner._open

    def recording_ahead(gate, configs, limit):
        events.append(("guesses", len(configs)))
        return compile_ahead(gate, configs, limit)

    def recording_open(tuner):
        events.append(("open", None))
        return open_study(tuner)

    monkeypatch.setattr(Gate, "compile_ahead", recording_ahead)
    monkeypatch.setattr(Tuner, "_open", recording_open)
    tune(SMALL, arch="ampere", interpret=True, trials=2, storage=str(tmp_path / "study.db"), stage="compiled",
         cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, jobs=4, seed=3)
    assert [kind for kind, _ in events] == ["guesses", "open"] and events[0][1] >= 1


@pytest.mark.parametrize("space, jobs, sent", [("softmax/small", 6, 4), ("softmax/small", 5, 2), ("gemm/small", 16, 2)])
def test_a_kernel_without_dots_sends_its_register_probes_ahead_where_the_workers_allow(space, jobs, sent, monkeypatch):
    """Before the study opens, a kernel without dots sends its two register probes with its two first probes when
    that leaves two compile workers for the first guesses; a dot kernel has none (nothing compiles here)."""
    from kernelrules.arch import load_arch
    from kernelrules.space import load_space
    from kernelrules.tune.gate import Gate

    loaded = load_space(REPO / "benchmarks" / "suite" / f"{space}.tune.yaml")
    gate = Gate(loaded, load_arch("h200"), jobs=jobs)
    asked: list = []
    monkeypatch.setattr(gate.pruner.pool, "compile_now", lambda jobs_: asked.extend(jobs_) or len(asked))
    try:
        assert gate.start_probes(list(loaded.configs())) == sent
    finally:
        gate.pruner.close()
    configs = list(loaded.configs())
    first = gate.pruner.probes_for(gate.plain_survivors(configs))
    assert [job.constexprs for job in asked[:2]] == [dict(c.constexprs) for c in first]
