"""Pinned launch (kernelrules/adapters/pinned_launch.py) and the static pick: policies, no benchmarks, determinism.

The policy tests call the tuner's policy with stand-in tensors (no launch); the launch
tests run the kernel under TRITON_INTERPRET=1 in a fresh process and count every call of
Triton's ``Autotuner._bench``; the demo script's interpreter run is the end-to-end test:
tune, export, and launch in another process with zero benchmarks.
"""

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
from kernelrules.errors import KernelrulesError

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
from standins import FakeTensor  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=4),
           triton.Config({"BLOCK": 512}, num_warps=4)]

KERNEL = '''
import os
import triton
import triton.language as tl
import kernelrules

CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=4),
           triton.Config({"BLOCK": 512}, num_warps=4)]


def bench(kernel_call, quantiles):
    kernel_call()
    return [1.0, 1.0, 1.0]


@kernelrules.autotune(configs=CONFIGS, key=["n"], arch="ada", do_bench=bench, pinned=os.environ.get("PIN") or None,
                      on_missing=os.environ.get("ON_MISSING", "tune"))
@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''

LAUNCH = '''
import json, sys
import torch, triton
import triton.runtime.autotuner as autotuner
calls = []
original = autotuner.Autotuner._bench
autotuner.Autotuner._bench = lambda self, *a, **k: calls.append(1) or original(self, *a, **k)
sys.path.insert(0, ".")
import kern
out = {}
for n in (4096, 1000):
    x = torch.arange(n, dtype=torch.float32)
    y = torch.empty_like(x)
    try:
        kern.double[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, n)
    except Exception as exc:
        out[n] = {"error": str(exc)}
        continue
    (choice,) = [v for k, v in kern.double.kernelrules_choices.items() if k[0] == n]
    out[n] = {"source": choice["source"], "BLOCK": choice["config"].kwargs["BLOCK"], "correct": bool(torch.equal(y, 2 * x))}
print(json.dumps({"bench_calls": len(calls), "launches": out}))
'''


def table(tmp_path, arch="ada", block=128):
    path = tmp_path / "double.pinned.json"
    path.write_text(json.dumps({"format": "kernelrules-pinned", "version": 1, "kernel": {"name": "double", "key": ["n"]},
                                "entries": [{"arch": arch, "key": {"n": 4096},
                                             "dtypes": {"x_ptr": "float32", "y_ptr": "float32"},
                                             "config": {"BLOCK": block, "num_warps": 4}}]}))
    return path


def launch(tmp_path, **env):
    pytest.importorskip("torch")
    pytest.importorskip("numpy")
    (tmp_path / "kern.py").write_text(KERNEL)
    full = dict(os.environ, TRITON_INTERPRET="1", KERNELRULES_CACHE_DIR=str(tmp_path / "cache"), **env)
    full["PYTHONPATH"] = os.pathsep.join([str(REPO), full.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", LAUNCH], cwd=tmp_path, capture_output=True, text=True, env=full,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_pinned_key_launches_with_zero_benchmarks_and_unlisted_keys_follow_the_policy(tmp_path):
    pin = str(table(tmp_path))
    static = launch(tmp_path, PIN=pin, ON_MISSING="static")
    assert static == {"bench_calls": 0, "launches": {
        "4096": {"source": "pinned", "BLOCK": 128, "correct": True},
        "1000": {"source": "static", "BLOCK": 256, "correct": True}}}
    tuned = launch(tmp_path, PIN=pin)  # on_missing="tune": only the unlisted key is benchmarked (3 configs)
    assert tuned["bench_calls"] == 3 and tuned["launches"]["4096"]["source"] == "pinned"
    assert tuned["launches"]["1000"]["source"] == "tuned"
    error = launch(tmp_path, PIN=pin, ON_MISSING="error", KERNELRULES_NO_BENCHMARK="1")
    assert error["bench_calls"] == 0 and error["launches"]["4096"]["source"] == "pinned"
    assert error["launches"]["1000"]["error"] == (
        f"{pin}: no pinned config for double on sm_89 with n=1000, x_ptr=float32, y_ptr=float32 (1 entry for "
        f"sm_89) (tune it and export it (kernelrules tune --export), or use on_missing='static' or 'tune')")


def test_no_benchmark_env_without_a_table_takes_the_static_pick(tmp_path):
    result = launch(tmp_path, KERNELRULES_NO_BENCHMARK="1")
    assert result["bench_calls"] == 0
    assert {v["source"] for v in result["launches"].values()} == {"static"}


@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def tuner(**options):
    """A new kernelrules.autotune tuner around the module's ``double`` (kernelrules reads its source)."""
    return kernelrules.autotune(configs=CONFIGS, key=["n"], arch="ada", **options)(double)


ARGS = (FakeTensor("torch.float32"), FakeTensor("torch.float32"), 4096)


def test_policy_in_process(tmp_path, monkeypatch):
    pinned = tuner(pinned=str(table(tmp_path, block=512)))
    assert pinned.kernelrules_policy.choose(pinned, ARGS, {})[1] == "pinned"
    assert pinned.kernelrules_policy.choose(pinned, ARGS, {})[0] is CONFIGS[2]  # the tuner's own object
    other_arch = tuner(pinned=str(table(tmp_path, arch="hopper")))
    assert other_arch.kernelrules_policy.choose(other_arch, ARGS, {}) is None  # unlisted on ada: Triton tunes
    monkeypatch.setattr("kernelrules.adapters.pinned_launch.capturing", lambda: True)
    with pytest.warns(UserWarning, match="inside CUDA-graph capture"):
        assert other_arch.kernelrules_policy.choose(other_arch, ARGS, {})[1] == "static"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per tuner
        assert other_arch.kernelrules_policy.choose(other_arch, ARGS, {})[1] == "static"


def test_decoration_errors(tmp_path):
    with pytest.raises(ValueError, match="on_missing must be one of tune, static, error"):
        tuner(on_missing="bench")
    with pytest.raises(ValueError, match="needs a pinned table"):
        tuner(on_missing="error")
    with pytest.raises(KernelrulesError, match="no such pinned table"):
        tuner(pinned=str(tmp_path / "missing.json"))
    path = table(tmp_path)
    path.write_text(path.read_text().replace('"double"', '"other"'))
    with pytest.raises(KernelrulesError, match="the table pins kernel 'other', not 'double'"):
        tuner(pinned=str(path))


STATIC = '''
import json, sys
sys.path.insert(0, {examples!r}); sys.path.insert(0, {tests!r})
import kernelrules
from matmul import matmul_kernel
from standins import matmul_named_args
config = kernelrules.static_pick(matmul_kernel, matmul_kernel.configs, matmul_named_args(), arch="hopper")
print(json.dumps([config.kwargs, config.num_warps, config.num_stages]))
'''


def test_static_pick_is_deterministic_across_processes(tmp_path):
    code = STATIC.format(examples=str(REPO / "examples"), tests=str(TESTS))
    env = dict(os.environ, KERNELRULES_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    picks = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        picks.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert picks[0] == picks[1]
    kwargs, warps, _stages = picks[0]
    assert kwargs["BLOCK_M"] * kwargs["BLOCK_N"] >= 128 * 128 and warps in (4, 8)  # a big tile for 4096^3 on hopper


def test_demo_script_tunes_exports_and_launches_pinned_with_zero_benchmarks(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("optuna")
    env = dict(os.environ, KERNELRULES_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "h200_pinned_demo.py"), "--interpret", "--arch",
                           "hopper", "--out", str(tmp_path / "demo")], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    result = json.loads((tmp_path / "demo" / "pinned_demo.json").read_text())
    assert result["benchmark_calls"] == 0 and result["source"] == "pinned" and result["agrees_with_table"]
    assert result["correct"] and result["launches"] == 3 and result["arch"] == "sm_90"
    table_data = json.loads((tmp_path / "demo" / "matmul.pinned.json").read_text())
    (entry,) = table_data["entries"]
    assert entry["key"] == {"M": 32, "N": 32, "K": 32} and entry["provenance"]["interpret"] is True
    assert entry["config"]["GROUP_SIZE_M"] == 8  # the space's fixed value that the autotune configs set
