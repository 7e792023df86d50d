"""kernelrules.autotune: triton.autotune with kernelrules' pruning, checked on the CPU without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import triton
import triton.language as tl

import kernelrules
from kernelrules.adapters import triton_perf

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS.parent / "examples"))
from matmul import matmul_kernel  # noqa: E402
from standins import FakeTensor  # noqa: E402

# 256 and 512 pass; 1000 is not a power of two (CFG001, repairs to 512); 6 warps is not either (CFG002, to 4)
CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 1000}, num_warps=4),
           triton.Config({"BLOCK": 128}, num_warps=6), triton.Config({"BLOCK": 512}, num_warps=4)]


def bench_once(kernel_call, quantiles):
    """Triton's do_bench stand-in: run the config once (no GPU timer on the CPU); every config takes 1 ms."""
    kernel_call()
    return [1.0, 1.0, 1.0]


@kernelrules.autotune(configs=CONFIGS, key=["n"], arch="ada", do_bench=bench_once)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """y = 2 x; EVEN (set by the heuristic per config) drops the mask."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)
    else:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.heuristics({"EVEN": lambda args: args["n"] % 1024 == 0})
@kernelrules.autotune(configs=CONFIGS, key=["n"], arch="ada")
@triton.jit
def double_outer(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """The same kernel with the heuristic outside the autotuner: EVEN reaches the pruner as a launch kwarg."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """One compile cache for the module; it is also handed to the interpreter subprocess."""
    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERNELRULES_CACHE_DIR", str(path))
        yield path


def named_args(n=4096):
    return {"x_ptr": FakeTensor("torch.float32"), "y_ptr": FakeTensor("torch.float32"), "n": n}


def shape(configs):
    return [(c.kwargs, c.num_warps) for c in configs]


def prune_as_triton_does(autotuner, args, **kwargs):
    """``Autotuner.prune_configs`` as ``Autotuner.run`` calls it, without launching anything."""
    autotuner.nargs = args
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a pruning problem of ours would be a warning
            return autotuner.prune_configs(kwargs)
    finally:
        autotuner.nargs = None


def test_decorator_keeps_passing_configs_and_repairs_the_rest():
    pruned = prune_as_triton_does(double, named_args())
    # the heuristic's EVEN is judged per config but never leaks into a config (Triton would get it twice)
    assert shape(pruned) == [({"BLOCK": 256}, 4), ({"BLOCK": 128}, 4), ({"BLOCK": 512}, 4)]
    assert pruned[0] is CONFIGS[0] and pruned[2] is CONFIGS[3] and pruned[1] not in CONFIGS


def test_heuristics_outside_the_autotuner():
    pruned = prune_as_triton_does(double_outer.fn, named_args(), EVEN=True)
    assert shape(pruned) == [({"BLOCK": 256}, 4), ({"BLOCK": 128}, 4), ({"BLOCK": 512}, 4)]


@pytest.mark.parametrize("repair", [False, True])
def test_example_matmul_on_ada(repair):
    tuned = kernelrules.autotune(configs=matmul_kernel.configs, key=["M", "N", "K"], arch="ada",
                                 repair=repair)(matmul_kernel.fn)
    a = FakeTensor("torch.float16")
    args = dict(zip(tuned.arg_names, (a, a, a, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1)))
    pruned = prune_as_triton_does(tuned, args)
    expected = kernelrules.prune(matmul_kernel, matmul_kernel.configs, "ada", args=args)
    assert {r.codes[0] for r in expected.rejected} == {"MEM001"} and len(expected.rejected) == 6
    assert pruned == (expected.candidates() if repair else expected.kept)
    assert len(pruned) == (15 if repair else 10)


def test_user_early_config_prune_runs_first():
    calls = []

    def no_256(configs, named_args, **kwargs):
        calls.append(len(configs))
        return [c for c in configs if c.kwargs["BLOCK"] != 256]

    tuned = kernelrules.autotune(configs=CONFIGS, key=["n"], arch="ada",
                                 prune_configs_by={"early_config_prune": no_256})(double.fn)
    assert shape(prune_as_triton_does(tuned, named_args())) == [({"BLOCK": 128}, 4), ({"BLOCK": 512}, 4)]
    assert calls == [4]


def test_perf_model_and_top_k_go_to_triton():
    estimates = []

    def smaller_blocks_first(**kwargs):
        estimates.append(kwargs)
        return kwargs["BLOCK"]

    tuned = kernelrules.autotune(configs=CONFIGS, key=["n"], arch="ada", perf_model=smaller_blocks_first,
                                 top_k=2)(double.fn)
    assert tuned.perf_model is smaller_blocks_first and tuned.configs_top_k == 2
    assert shape(prune_as_triton_does(tuned, named_args())) == [({"BLOCK": 128}, 4), ({"BLOCK": 256}, 4)]
    assert len(estimates) == 3 and {"x_ptr", "n", "BLOCK", "num_warps"} <= set(estimates[0])


def test_perf_model_true_uses_kernelrules_model(monkeypatch):
    made = []

    def fake_model(kernel, arch=None, context=None):
        made.append((kernel, arch, context))
        return lambda **kw: 1.0

    monkeypatch.setattr(triton_perf, "triton_perf_model", fake_model)
    tuned = kernelrules.autotune(configs=CONFIGS, key=["n"], arch="ada", perf_model=True, top_k=1)(double.fn)
    assert made == [(tuned, "ada", tuned.kernelrules_context)]  # the tuner's context: one pool for all phases
    assert tuned.perf_model() == 1.0 and tuned.configs_top_k == 1


def test_perf_model_given_twice_is_an_error():
    with pytest.raises(TypeError, match="twice"):
        kernelrules.autotune(configs=CONFIGS, key=["n"], perf_model=min, prune_configs_by={"perf_model": max})


@pytest.mark.parametrize("configs,arch,fragment", [
    ([triton.Config({"BLOCK_Q": 64}, num_warps=4), triton.Config({"BLOCK": 64}, num_warps=4)], "ada", "BLOCK_Q"),
    (CONFIGS, "nosuch", "unknown architecture"),
])
def test_bad_input_warns_and_keeps_every_config(configs, arch, fragment):
    tuned = kernelrules.autotune(configs=configs, key=["n"], arch=arch)(double.fn)
    tuned.nargs = named_args()
    with pytest.warns(UserWarning, match=fragment):
        assert tuned.prune_configs({}) == configs


def interpreted_launch() -> str:
    """Run ``double`` through its autotuner (call under TRITON_INTERPRET=1): what was benchmarked, and the result."""
    import torch

    x = torch.arange(4096, dtype=torch.float32)
    y = torch.empty_like(x)
    double[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, y, 4096)
    benchmarked = [[c.kwargs["BLOCK"], c.num_warps] for c in double.configs_timings]
    return json.dumps({"benchmarked": benchmarked, "correct": bool(torch.equal(y, 2 * x))})


def test_launch_under_the_interpreter(cache_dir):
    pytest.importorskip("torch")
    pytest.importorskip("numpy")  # Triton's interpreter needs it
    env = dict(os.environ, TRITON_INTERPRET="1", KERNELRULES_CACHE_DIR=str(cache_dir))
    code = (f"import sys; sys.path[:0] = [{str(Path(__file__).resolve().parent)!r}, {str(TESTS)!r}]; "
            "import test_autotune; print(test_autotune.interpreted_launch())")
    done = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"benchmarked": [[256, 4], [128, 4], [512, 4]], "correct": True}


def test_lint_reads_kernelrules_autotune_like_triton_autotune():
    from kernelrules.discover.kernels import discover

    (kernel,) = discover([__file__]).by_name("double")
    assert [(s.config.constexprs["BLOCK"], s.config.num_warps) for s in kernel.autotune.configs] == [
        (256, 4), (1000, 4), (128, 6), (512, 4)]
    assert kernel.autotune.key == ["n"] and set(kernel.heuristics) == {"EVEN"}
