"""Triton's host modules built by a compile worker for the launching process (kernelrules.compile.host_prebuild)."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import pytest

from kernelrules.compile import host_prebuild
from kernelrules.compile.compilejob import CompileJob, compile_job
from kernelrules.compile.pool import CompilePool

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "examples" / "matmul.py"
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096, "stride_am": 4096,
             "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1}


def _job(block: int) -> CompileJob:
    return CompileJob(str(MATMUL), "matmul_kernel", dict(SIGNATURE), {"BLOCK_M": block, "BLOCK_N": block,
                      "BLOCK_K": 32}, {"num_warps": 4, "num_stages": 2}, ("cuda", 90, 32), fixed={"GROUP_SIZE_M": 8})


@pytest.fixture
def fresh_process(monkeypatch):
    """A process that has built no launcher yet."""
    monkeypatch.setattr(host_prebuild, "_seen", set())


@pytest.fixture
def fake_nvidia_driver(monkeypatch):
    """Triton's NVIDIA driver module with its two builders replaced by recorders (no C compiler, no libcuda)."""
    built: list[str] = []
    module = types.ModuleType("triton.backends.nvidia.driver")
    module.CudaUtils = lambda: built.append("cuda_utils")
    module.CudaLauncher = lambda src, metadata: built.append(f"launcher:{sorted(src.signature)}")
    monkeypatch.setitem(sys.modules, "triton.backends.nvidia.driver", module)
    return built


def _compiled(block: int):
    kernels = []
    result = compile_job(_job(block), use_triton_cache=True, on_compiled=kernels.append)
    assert result.ok, result.details
    [kernel] = kernels
    return kernel


def test_every_config_of_a_kernel_shares_one_launcher_claim(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    small, large = _compiled(32), _compiled(64)
    assert small.metadata.target.backend == "cuda" and isinstance(small.src.signature, dict)
    # the launcher's source depends on the argument types, not the constexpr values a config sets
    assert host_prebuild.claim_name(small.src, small.metadata) == host_prebuild.claim_name(large.src, large.metadata)
    other = types.SimpleNamespace(signature={**small.src.signature, "M": "i64"})
    assert host_prebuild.claim_name(other, small.metadata) != host_prebuild.claim_name(small.src, small.metadata)
    assert host_prebuild.claim_name(types.SimpleNamespace(), small.metadata) is None  # another Triton: no claim


def test_the_first_worker_builds_and_the_others_find_the_claim(tmp_path, fresh_process, fake_nvidia_driver):
    src = types.SimpleNamespace(signature={"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"})
    metadata = types.SimpleNamespace(target=GPUTarget("cuda", 90, 32))
    assert host_prebuild.prebuild(src, metadata, str(tmp_path))
    assert fake_nvidia_driver == ["cuda_utils", "launcher:['BLOCK', 'n', 'x_ptr']"]
    assert [p.name for p in tmp_path.iterdir()] == [host_prebuild.CLAIM_DIR]  # the cache's root keeps one folder
    assert not host_prebuild.prebuild(src, metadata, str(tmp_path))  # this process: once
    host_prebuild._seen.clear()  # another worker process, the same cache: the claim stops it
    assert not host_prebuild.prebuild(src, metadata, str(tmp_path)) and len(fake_nvidia_driver) == 2
    host_prebuild._seen.clear()  # another study's cache: built there too
    assert host_prebuild.prebuild(src, metadata, str(tmp_path / "other")) and len(fake_nvidia_driver) == 4


def test_nothing_for_another_target_and_no_error_where_it_cannot_build(tmp_path, fresh_process, monkeypatch):
    src = types.SimpleNamespace(signature={"x_ptr": "*fp32"})
    assert not host_prebuild.prebuild(src, types.SimpleNamespace(target=GPUTarget("hip", "gfx942", 64)), str(tmp_path))
    assert not list(tmp_path.iterdir())
    module = types.ModuleType("triton.backends.nvidia.driver")

    def no_libcuda():
        raise RuntimeError("libcuda.so cannot found!")

    module.CudaUtils, module.CudaLauncher = no_libcuda, no_libcuda
    monkeypatch.setitem(sys.modules, "triton.backends.nvidia.driver", module)
    assert not host_prebuild.prebuild(src, types.SimpleNamespace(target=GPUTarget("cuda", 90, 32)), str(tmp_path))


def test_a_pool_worker_with_a_shared_cache_claims_the_launcher_after_answering(tmp_path):
    """The compile worker hands the kernel it compiled into a shared Triton cache to the prebuild (on this CPU the
    build itself stops at the missing CUDA driver library; the claim shows the worker made it)."""
    shared = tmp_path / "shared"
    with CompilePool(max_workers=1, timeout=240, triton_cache_dir=str(shared)) as pool:
        [(_, result)] = list(pool.run([_job(32)]))
        assert result.ok, result.details
        deadline = time.monotonic() + 60  # the answer came first; the worker claims right after it
        while not list((shared / host_prebuild.CLAIM_DIR).glob("*")) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(list((shared / host_prebuild.CLAIM_DIR).glob("*"))) == 1
