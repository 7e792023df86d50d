"""Units of kernelrules tune without a run: the problem section, correctness, timing, records, study."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import statistics
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelrules.space import SpaceFileError, load_space
from kernelrules.tune import correctness, feedback, records, timing
from kernelrules.tune.problem import load_problem

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tune"


def _space_with(tmp_path: Path, problem: str) -> Path:
    shutil.copy(FIXTURES / "faulty.py", tmp_path / "faulty.py")
    path = tmp_path / "s.yaml"
    path.write_text("kernel: faulty.py:faulty_kernel\nsignature: {x_ptr: '*fp32', y_ptr: '*fp32', n: 64}\n"
                    "space: {BLOCK: [16, 32], FAULT: [0]}\n" + problem)
    return path


def test_problem_section_of_the_example_loads():
    spec = load_problem(load_space(FIXTURES / "matmul_small.yaml"))
    assert spec.sizes == {"M": 32, "N": 32, "K": 32}
    assert spec.inputs["a"].shape == ["M", "K"] and spec.outputs["c"].dtype == "fp16"
    assert spec.reference == {"c": "a @ b"} and spec.grid == ["cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"]
    assert spec.flop_count() == 2 * 32 ** 3
    assert spec.byte_count() == 3 * 32 * 32 * 2
    assert spec.edge_sizes == [{"M": 31, "N": 30, "K": 29}]
    assert spec.precision_dtype() == "fp16"


def test_the_h200_example_space_loads_for_tuning():
    repo = Path(__file__).resolve().parents[2]
    space = load_space(repo / "examples" / "matmul.tune.yaml")
    spec = load_problem(space)
    assert spec.sizes == {"M": 4096, "N": 4096, "K": 4096} and spec.baseline == "torch.matmul(a, b)"
    assert spec.edge_sizes == [{"M": 4095, "N": 4095, "K": 4095}]  # the default: every size minus one
    assert space.size() == 1875


@pytest.mark.parametrize("problem, message, line", [
    ("problem: {n: 64}\n", "needs inputs, outputs and reference", 4),
    ("problem:\n  n: 64\n  inputs: {x: [n]}\n  outputs: {y: [m]}\n  grid: cdiv(n, BLOCK)\n  reference: 2 * x\n",
     "m not defined", 7),
    ("problem:\n  n: 64\n  inputs: {x: [n]}\n  outputs: {y: [n]}\n  args: {x_ptr: x}\n  grid: cdiv(n, BLOCK)\n"
     "  reference: 2 * x\n", "y_ptr have no value", 8),
    ("problem:\n  n: 64\n  inputs: {x: [n]}\n  outputs: {y: [n]}\n  args: {x_ptr: x, y_ptr: y}\n"
     "  grid: cdiv(n, BLOCK)\n  reference: __import__('os').getcwd()\n", "not allowed", 10),
    ("problem:\n  n: 64\n  inputs: {x: [n]}\n  outputs: {y: [n]}\n  args: {x_ptr: x, y_ptr: y, bogus: 1}\n"
     "  grid: cdiv(n, BLOCK)\n  reference: 2 * x\n", "'bogus' is not a runtime argument", 8),
    ("problem:\n  n: 64\n  inputs: {x: {shape: [n], dtype: fp13}}\n", "unknown dtype", 6),
    ("problem:\n  n: 64\n  harness: nowhere.py:H\n", "not found", 6),
])
def test_problem_errors_name_the_file_line_and_key(tmp_path, problem, message, line):
    with pytest.raises(SpaceFileError) as info:
        load_problem(load_space(_space_with(tmp_path, problem)))
    assert message in str(info.value)
    assert f"s.yaml:{line}" in str(info.value)


def test_compare_tells_rounding_from_bugs_and_never_passes_nan():
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(32, 64, generator=gen).half()
    b = torch.randn(64, 16, generator=gen).half()
    ref = a.double() @ b.double()
    good = (a.float() @ b.float()).half()
    rtol, atol = correctness.tolerance_for("fp16")
    assert correctness.compare("c", good, ref, rtol=rtol, atol=atol)["ok"]
    wrong = good.clone()
    wrong[3, 4] += 1.0
    result = correctness.compare("c", wrong, ref, rtol=rtol, atol=atol)
    assert not result["ok"] and result["bad"] == 1 and result["first_bad"] == (3, 4)
    poisoned = good.clone()
    correctness.poison(poisoned)
    poisoned[:30] = good[:30]
    result = correctness.compare("c", poisoned, ref, rtol=rtol, atol=atol)
    assert not result["ok"] and result["nan"] and result["bad"] == 2 * 16
    # an error over the dtype tolerance but within twice the rounding of a low-precision reference passes
    noisy = good.double() + 0.05 * ref.abs().max()
    floor = ref + 0.04 * ref.abs().max()
    assert not correctness.compare("c", noisy, ref, rtol=rtol, atol=atol)["ok"]
    assert correctness.compare("c", noisy, ref, rtol=rtol, atol=atol, floor=floor)["ok"]
    ints = torch.arange(6).reshape(2, 3)
    assert correctness.compare("i", ints, ints.clone(), rtol=0, atol=0)["ok"]
    assert not correctness.compare("i", ints, ints + 1, rtol=0, atol=0)["ok"]
    assert not correctness.compare("c", good[:2], ref, rtol=rtol, atol=atol)["ok"]


def test_tolerances_follow_the_dtype_and_the_override():
    assert correctness.tolerance_for("bf16") == (0.04, 0.04)
    assert correctness.tolerance_for("fp16", {"rtol": 0.1}) == (0.1, 0.01)
    assert correctness.tolerance_for("i32") == (0.0, 0.0)


def test_timing_repeats_an_imprecise_median_and_keeps_the_most_precise():
    attempts = iter([[1.0, 1.5, 2.0, 1.0, 1.4], [1.0, 1.005, 1.01, 1.0, 1.005], [9.0] * 5])
    m = timing.measure(lambda: None, bench=lambda fn: next(attempts))
    assert m.attempts == 2 and not m.noisy and m.ms == pytest.approx(1.005) and m.error <= timing.MAX_ERROR
    assert m.medians == [pytest.approx(1.4), pytest.approx(1.005)]
    always_noisy = timing.measure(lambda: None, bench=lambda fn: [1.0, 2.0, 3.0, 4.0], attempts=3)
    assert always_noisy.attempts == 3 and always_noisy.noisy
    calls = []
    m = timing.measure(lambda: calls.append(1), interpret=True, runs=3)
    assert m.method == "wallclock" and m.runs == 3 and m.attempts == 1 and len(calls) == 4


def test_a_wide_spread_of_many_runs_is_measured_once():
    """A microsecond kernel's runs spread ~10 % (event resolution, jitter), but the median of hundreds
    of them is known to well under 1 %: one attempt, not three."""
    runs = [4.5e-3, 5.0e-3, 5.0e-3, 5.5e-3] * 100
    calls = []
    m = timing.measure(lambda: None, bench=lambda fn: calls.append(1) or runs)
    assert m.spread > 0.05 and m.error <= timing.MAX_ERROR and m.attempts == 1 and len(calls) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=1e-4, max_value=10.0), min_size=1, max_size=300))
def test_the_median_error_lies_within_half_the_range(times):
    ordered = sorted(times)
    median = statistics.median(ordered)
    error = timing.median_error(ordered)
    assert 0.0 <= error <= (ordered[-1] - ordered[0]) / 2 / median + 1e-12
    assert timing.median_error([ordered[0]] * len(ordered)) == 0.0


class FakeGPU:
    """A stand-in for ``torch`` that plays a GPU stream: each enqueued item advances a clock by its
    duration (flush 60 us, hold as asked, the kernel 5 us), events read that clock, and the log keeps the order."""

    def __init__(self, clock_khz=2_000_000):
        self.log, self.now = [], 0.0  # ms
        gpu = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                self.at = gpu.now
                gpu.log.append("start" if not gpu.log or gpu.log[-1] != "kernel" else "end")

            def elapsed_time(self, other):
                return other.at - self.at

        class Props:
            clock_rate = clock_khz

        class Buffer:
            def zero_(self):
                gpu.log.append("flush")
                gpu.now += 0.060

        class Cuda:
            def synchronize(self):
                pass

            def current_device(self):
                return 0

            def get_device_properties(self, index):
                return Props()

            def _sleep(self, cycles):
                gpu.log.append(("hold", cycles))
                gpu.now += cycles / (clock_khz * 1e3) * 1e3

        self.cuda, self.Event, self.int8 = Cuda(), Event, "int8"
        self.cuda.Event = Event
        self.buffer = Buffer

    def empty(self, size, dtype=None, device=None):
        return self.buffer()

    def kernel(self):
        self.log.append("kernel")
        self.now += 0.005


def test_held_timing_waits_on_the_gpu_between_the_flush_and_the_start_event(monkeypatch):
    # every timed run: flush, a GPU-side hold of HOLD_US at the GPU's clock, then start, the kernel, end;
    # the run's time is the kernel's alone, and the runs fill about rep_ms with their flush and hold
    import triton.runtime

    monkeypatch.setattr(triton.runtime, "driver", None)  # no driver: the flush buffer by hand
    gpu = FakeGPU()
    times = timing.held_runs(gpu.kernel, warmup_ms=1.0, rep_ms=10.0, torch=gpu)
    hold = ("hold", int(timing.HOLD_US * 1e-6 * 2e9))
    timed = gpu.log[gpu.log.index(hold) - 1:]
    assert timed == ["flush", hold, "start", "kernel", "end"] * len(times)
    assert times == [pytest.approx(0.005)] * len(times)
    assert len(times) == int(10.0 / (0.065 + timing.HOLD_US * 1e-3))  # one flush and run estimated at 65 us
    m = timing.measure(gpu.kernel, bench=lambda fn: timing.held_runs(fn, torch=gpu))
    assert m.method == "held" and m.ms == pytest.approx(0.005) and not m.noisy
    assert timing.measure(gpu.kernel, bench=lambda fn: [1.0] * 5, timer="do_bench").method == "do_bench"
    with pytest.raises(ValueError, match="unknown timer"):
        timing.measure(gpu.kernel, timer="wallclock")


def test_interleaved_rounds_rotate_the_order():
    seen = []
    result = timing.interleaved(["a", "b", "c"], lambda c: seen.append(c) or 1.0, rounds=3)
    assert seen == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert result == {0: [1.0] * 3, 1: [1.0] * 3, 2: [1.0] * 3}


def test_failure_classes_and_bottlenecks():
    class OutOfResources(Exception):
        pass

    class CompilationError(Exception):
        pass

    assert feedback.classify_exception(OutOfResources("shared memory"), "check") == "out_of_resources"
    assert feedback.classify_exception(CompilationError("x"), "compile") == "compile_error"
    assert feedback.classify_exception(RuntimeError("CUDA error: an illegal memory access was encountered"),
                                       "check") == "illegal_address"
    assert feedback.classify_exception(ValueError("bad"), "check") == "launch_error"
    assert feedback.is_gap({"status": "out_of_resources", "stage": "launch"})
    assert not feedback.is_gap({"status": "compile_error", "stage": "compile"})
    from kernelrules.arch import load_arch

    guesses = feedback.bottlenecks({"spill_bytes": 64, "occupancy": 0.125, "occupancy_limiter": "registers",
                                    "pipelined": False, "mma_path": "mma_sync", "dot_m": 64},
                                   {"num_stages": 3}, load_arch("h200"), 100, ["PIP001 not-pipelined"])
    assert guesses[:2] == ["mma.sync instead of wgmma on Hopper", "register spills (64 bytes)"]
    assert "occupancy 12% limited by registers" in guesses and "loads not pipelined" in guesses
    assert "too few programs (100) for 132 SMs" in guesses and guesses[-1] == "PIP001 not-pipelined"


def test_learned_constraints_from_out_of_resources():
    learned = feedback.LearnedConstraints()
    learned.observe({"status": "slower", "facts": {"shared_bytes": 50_000}})
    assert learned.reason({"shared_bytes": 90_000}) is None
    learned.observe({"status": "out_of_resources", "facts": {"shared_bytes": 80_000}})
    assert "out_of_resources" in learned.reason({"shared_bytes": 90_000})
    assert learned.reason({"shared_bytes": 60_000}) is None
    assert learned.describe() == ["shared memory >= 80000 bytes (predicted) fails with out_of_resources"]


def test_funnel_accounts_for_every_config_once():
    recs = [
        {"trial": 0, "key": "a", "status": "better", "ms": 2.0},
        {"trial": 1, "key": "b", "status": "rejected", "rule_codes": ["MEM001"]},
        {"trial": 2, "key": "a", "status": "duplicate"},
        {"trial": 3, "key": "c", "status": "wrong_result"},
        {"trial": 4, "status": "interrupted", "key": None},
        {"trial": 5, "key": "d", "status": "better", "ms": 1.0},
        {"trial": 6, "key": "e", "status": "learned"},
    ]
    f = records.funnel(recs, 10)
    assert (f["rejected"], f["learned"], f["failed"], f["timed"], f["not_sampled"]) == (1, 1, 1, 2, 5)
    assert f["space"] == f["rejected"] + f["learned"] + f["failed"] + f["timed"] + f["not_sampled"]
    assert f["duplicates"] == 1 and f["interrupted"] == 1 and f["failed_by_class"] == {"wrong_result": 1}
    assert [r["trial"] for r in records.best(recs)] == [5, 0]
    assert records.best_so_far(recs) == [(0, 2.0), (5, 1.0)]
    assert records.rejected_codes(recs) == {"MEM001": 1}


def test_the_summary_states_the_config_stage_then_what_was_sampled():
    """The end-of-run text first says what the config stage rejects of the whole space, then what became of the
    configs sampled, in counts that add up to them: not a "space 48: 0 rejected by rules" line beside a "the rules
    reject 16" one."""
    from kernelrules.tune.output import summary_lines

    recs = [
        {"trial": 0, "key": "a", "status": "better", "ms": 2.0},
        {"trial": 1, "key": "b", "status": "rejected", "rule_codes": ["MEM001"]},
        {"trial": 2, "key": "c", "status": "wrong_result"},
        {"trial": 3, "key": "d", "status": "better", "ms": 1.0},
    ]
    summary = {"study": "s", "storage": "sqlite:///s.tune.db", "arch": "sm_90", "funnel": records.funnel(recs, 48),
               "rejected_codes": records.rejected_codes(recs),
               "config_stage": {"space": 48, "rejected": 16, "codes": {"MEM001": 16}}}
    lines = summary_lines(summary, [])
    assert lines[1] == "the rules reject 16 of the space's 48 configs before any launch (config stage)"
    assert lines[2] == ("sampled 4 of the 48 configs: 2 timed, 1 rejected by rules (MEM001 1), 1 failed "
                        "(wrong_result 1)")
    assert "no config was timed: no winner" in lines


def test_triton_config_line_is_ready_to_paste():
    line = records.triton_config_line({"BLOCK_M": 64, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 3})
    assert line == 'triton.Config({"BLOCK_M": 64, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=3)'
    triton = pytest.importorskip("triton")
    namespace = {"triton": triton}
    config = eval(line, namespace)  # noqa: S307 - the test's own string, checking it is valid Python
    assert config.kwargs == {"BLOCK_M": 64, "GROUP_SIZE_M": 8} and config.num_warps == 4


def test_param_codec_is_ordinal_and_round_trips():
    from kernelrules.tune.study import ParamCodec

    space = load_space(FIXTURES / "matmul_small.yaml")
    codec = ParamCodec(space)
    assert set(codec.distributions) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"}
    assert codec.distributions["num_warps"].high == 2  # positions of 1, 4, 6
    config = codec.decode({"BLOCK_M": 1, "BLOCK_N": 0, "BLOCK_K": 1, "num_warps": 2, "num_stages": 0})
    assert config == {"GROUP_SIZE_M": 8, "BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32, "num_warps": 6, "num_stages": 1}
    assert codec.encode(config) == {"BLOCK_M": 1, "BLOCK_N": 0, "BLOCK_K": 1, "num_warps": 2, "num_stages": 0}


def test_claims_are_atomic_and_released(tmp_path):
    from kernelrules.tune.study import Claims, open_storage

    storage = open_storage(f"sqlite:///{tmp_path / 'c.db'}")
    first, second = Claims(storage, "s"), Claims(storage, "s")
    assert first.claim("k", 3) == 3
    assert second.claim("k", 7) == 3  # already owned by trial 3
    assert Claims(storage, "other").claim("k", 9) == 9  # per study
    first.release(3)
    assert second.claim("k", 7) == 7 and first.count() == 1


def test_recover_fails_stale_trials_and_queues_them_again(tmp_path):
    import optuna

    from kernelrules.tune.recovery import is_stale, recover
    from kernelrules.tune.study import Claims, open_storage

    storage = open_storage(f"sqlite:///{tmp_path / 'r.db'}")
    study = optuna.create_study(storage=storage, study_name="r")
    claims = Claims(storage, "r")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    trial = study.ask({"x": optuna.distributions.IntDistribution(0, 3)})
    trial.set_user_attr("kr_worker", f"{socket.gethostname()}:{dead.stdout.strip()}")
    claims.claim("x-key", trial.number)
    alive = study.ask({"x": optuna.distributions.IntDistribution(0, 3)})
    alive.set_user_attr("kr_worker", f"{socket.gethostname()}:{os.getppid()}")
    remote = study.ask({"x": optuna.distributions.IntDistribution(0, 3)})
    remote.set_user_attr("kr_worker", "elsewhere:1")
    remote.set_user_attr("kr_heartbeat", time.time() - 1000)
    frozen = {t.number: t for t in study.get_trials()}
    assert is_stale(frozen[0]) and not is_stale(frozen[1]) and is_stale(frozen[2], grace=60)
    assert not is_stale(frozen[2], grace=2000)
    assert recover(study, claims) == [0, 2]
    states = [t.state.name for t in study.get_trials()]
    assert states == ["FAIL", "RUNNING", "FAIL", "WAITING", "WAITING"]
    queued = study.get_trials()[3]
    assert queued.system_attrs["fixed_params"] == {"x": trial.params["x"]} and queued.user_attrs["kr_retry_of"] == 0
    assert claims.count() == 0


def test_recover_queues_again_a_queued_config_taken_by_a_process_killed_before_it_set_its_parameters(tmp_path):
    """A killed run's last ask can take a queued seed from the queue (RUNNING, its config only in the enqueued
    ``fixed_params``) and die before the sampler sets the parameters or the owner is written: once stale, the
    same config is queued again rather than lost (found by benchmarks/h200_tune_two_gpus.py --phases kill)."""
    import optuna

    from kernelrules.tune.recovery import recover
    from kernelrules.tune.study import open_storage

    storage = open_storage(f"sqlite:///{tmp_path / 'q.db'}")
    study = optuna.create_study(storage=storage, study_name="q")
    study.enqueue_trial({"x": 2}, user_attrs={"kr_seeded": "perf_model"})
    taken = study.ask()  # popped from the queue: RUNNING, no parameters yet, no owner
    assert taken.params == {} and study.get_trials()[0].state.name == "RUNNING"
    assert recover(study, None) == []  # its owner may still be writing itself: within the grace period
    assert recover(study, None, grace=-1.0) == [0]  # past the grace period
    again = [t for t in study.get_trials() if t.state.name == "WAITING"]
    assert len(again) == 1 and again[0].system_attrs["fixed_params"] == {"x": 2}
    assert again[0].user_attrs["kr_retry_of"] == 0


TORCH_CUDA_ERROR = ("CUDA error: an illegal memory access was encountered\n"
                    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                    "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
                    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


def test_gpu_errors_as_torch_and_triton_raise_them():
    """torch >= 2.8 raises CUDA errors as torch.AcceleratorError (a RuntimeError subclass); Triton's launcher
    raises RuntimeError("Triton Error [CUDA]: ..."). Neither is a compile error, in any phase."""
    class AcceleratorError(RuntimeError):
        pass

    for phase in ("compile", "check", "time"):
        assert feedback.classify_exception(AcceleratorError(TORCH_CUDA_ERROR), phase) == "illegal_address"
        assert feedback.classify_exception(
            RuntimeError("Triton Error [CUDA]: an illegal memory access was encountered"), phase) == "illegal_address"
    from triton.runtime.errors import OutOfResources, PTXASError

    assert feedback.classify_exception(OutOfResources(300000, 232448, "shared memory"), "check") == "out_of_resources"
    assert feedback.classify_exception(PTXASError("ptxas fatal"), "compile") == "compile_error"
    text = feedback.summary(f"AcceleratorError: {TORCH_CUDA_ERROR}")
    assert "illegal memory access" in text and "CUDA_LAUNCH_BLOCKING" not in text
    assert feedback.context_lost("illegal_address", text)
    assert feedback.context_lost("launch_error", "RuntimeError: Triton Error [CUDA]: unspecified launch failure")
    assert not feedback.context_lost("wrong_result", "c: 3 of 9 elements outside tolerance")


def test_a_worker_whose_context_is_lost_is_restarted_before_the_next_request():
    from kernelrules.tune.worker import BenchWorker, WorkerSettings

    class Conn:
        def __init__(self, messages):
            self.messages = list(messages)

        def recv(self):
            return self.messages.pop(0)

    worker = BenchWorker(0, WorkerSettings(spec=None), compile_timeout=1, bench_timeout=1)  # type: ignore[arg-type]
    restarts = []
    worker.restart = lambda: restarts.append(True)  # type: ignore[method-assign]
    worker.request, worker.tag = ("evaluate", {}), "first"
    worker.conn = Conn([("result", {"status": "illegal_address", "error": "AcceleratorError: CUDA error: an "
                                                                           "illegal memory access was encountered"})])
    assert worker.handle() == ("first", {"status": "illegal_address", "error": "AcceleratorError: CUDA error: an "
                                                                                "illegal memory access was encountered"})
    assert restarts == [True] and not worker.busy
    worker.request, worker.tag = ("evaluate", {}), "second"
    worker.conn = Conn([("result", {"status": "ok", "timing": {}})])
    assert worker.handle() == ("second", {"status": "ok", "timing": {}}) and restarts == [True]


def test_gpu_selection_and_device_names():
    from kernelrules.tune.target import sku_for_device
    from kernelrules.tune.worker import visible_device

    assert visible_device("0", None) == "0" and visible_device("1", "") == "1"
    assert visible_device("1", "2,3") == "3" and visible_device("GPU-1234", "2,3") == "GPU-1234"
    with pytest.raises(ValueError, match="only 2 GPU"):
        visible_device("2", "2,3")
    hopper = ["h100-sxm", "h100-pcie", "h200"]
    assert sku_for_device("NVIDIA H200", hopper) == "h200"
    assert sku_for_device("NVIDIA H100 PCIe", hopper) == "h100-pcie"
    assert sku_for_device("NVIDIA H100 80GB HBM3", hopper) is None  # SXM or PCIe: the family's profile
    assert sku_for_device("NVIDIA L40S", ["rtx4090", "l4", "l40s"]) == "l40s"


def test_seeds_read_the_config_stage_facts_instead_of_predicting_again():
    """With the facts the config stage judged each config on, the perf model's seeds are the ones the resource model
    gives, and the model predicts only the configs that have no such facts."""
    from kernelrules.arch import load_arch
    from kernelrules.config import KernelConfig
    from kernelrules.tune.options import perf_model_seeds

    class CountingModel:
        def __init__(self):
            self.calls = 0

        def predict(self, config):
            self.calls += 1
            return predicted(config)

    def predicted(config):
        tile = config.constexprs["ROWS"] * config.constexprs["BLOCK_N"]
        return {"shared_bytes": 0, "registers_predicted": 24 + tile // (32 * config.num_warps),
                "register_demand_per_thread": tile // (32 * config.num_warps)}

    arch = load_arch("h200")
    problem = {"M": 4096, "N": 8192, "dtype": "fp16", "grid": "cdiv(M, ROWS)", "bytes": "2 * 2 * M * N"}
    configs = [KernelConfig.from_dict({"ROWS": r, "BLOCK_N": b, "num_warps": w, "num_stages": 1})
               for r in (1, 2, 4) for b in (512, 2048, 8192) for w in (1, 4, 16)]
    asked = CountingModel()
    reference = perf_model_seeds(configs, arch, problem, 8, model=asked)
    assert asked.calls == len(configs)
    judged = CountingModel()
    assert perf_model_seeds(configs, arch, problem, 8, model=judged, facts=predicted) == reference
    assert judged.calls == 0
    some = CountingModel()  # the configs with one warp have no judged facts: the model predicts those
    partly = perf_model_seeds(configs, arch, problem, 8, model=some,
                              facts=lambda c: predicted(c) if c.num_warps > 1 else {})
    assert partly == reference and some.calls == sum(c.num_warps == 1 for c in configs)
