"""kernelrules.adapters.precompile: the autotuner's configs compiled in parallel into Triton's own cache."""

from __future__ import annotations

import sys
from pathlib import Path

import triton

import kernelrules
from kernelrules.adapters.precompile import precompile

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from matmul import matmul_kernel  # noqa: E402
from standins import matmul_named_args  # noqa: E402


def named_args(size=512):
    return matmul_named_args(size, size, size)


def small_configs():
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": 32, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=2)
            for m, n in ((32, 32), (64, 32), (32, 64))]


def compiled_kernels(cache_dir: Path) -> int:
    """Kernels in a Triton cache: one metadata JSON per compiled kernel."""
    return sum(1 for p in cache_dir.rglob("matmul_kernel.json"))


def test_precompile_fills_tritons_cache(tmp_path, monkeypatch):
    cache = tmp_path / "triton"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / "kr"))
    done = precompile(matmul_kernel, small_configs(), named_args(), "sm_89", jobs=2)
    assert done == 3
    assert compiled_kernels(cache) == 3


def test_autotune_precompiles_what_it_will_time(tmp_path, monkeypatch):
    cache = tmp_path / "triton"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / "kr"))
    monkeypatch.setenv("KERNELRULES_ARCH", "sm_89")
    tuner = kernelrules.autotune(small_configs(), ["M", "N", "K"], arch="sm_89")(matmul_kernel.fn)
    tuner.nargs = named_args()
    kept = tuner.prune_configs({})
    assert len(kept) == 3
    tuner.kernelrules_compile_ahead.join()  # compiled in the background, while Triton times
    assert compiled_kernels(cache) == 3
    assert all(tuner.kernelrules_compile_ahead.ready(c) for c in kept)


def test_precompile_can_be_turned_off(tmp_path, monkeypatch):
    cache = tmp_path / "triton"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / "kr"))
    monkeypatch.setenv("KERNELRULES_ARCH", "sm_89")
    tuner = kernelrules.autotune(small_configs(), ["M", "N", "K"], arch="sm_89", precompile=False)(matmul_kernel.fn)
    tuner.nargs = named_args()
    assert len(tuner.prune_configs({})) == 3
    assert compiled_kernels(cache) == 0
