"""Triton's host modules built by a compile worker for the launching process (kernelrules.compile.host_prebuild)."""

from __future__ import annotations

import sys
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
    assert fake_nvidia_driver == ["launcher:['BLOCK', 'n', 'x_ptr']", "cuda_utils"]
    assert [p.name for p in tmp_path.iterdir()] == [host_prebuild.CLAIM_DIR]  # the cache's root keeps one folder
    assert not host_prebuild.prebuild(src, metadata, str(tmp_path))  # this process: once
    host_prebuild._seen.clear()  # another worker process, the same cache: the claim stops it
    assert not host_prebuild.prebuild(src, metadata, str(tmp_path)) and len(fake_nvidia_driver) == 2
    # another study's cache, the same worker process (tune's session keeps its compile workers): built there too
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


def test_the_launcher_starts_building_as_the_compile_starts(tmp_path, fresh_process, fake_nvidia_driver):
    """Before a compile, the signature alone gives the launcher (no tensor descriptors): built in a thread, and
    claimed under the name the kernel's own metadata gives after the compile, so it is built once."""
    src = types.SimpleNamespace(signature={"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"})
    thread = host_prebuild.start_launcher_build(src, "cuda", str(tmp_path))
    assert thread is not None
    thread.join(30)
    assert fake_nvidia_driver == ["launcher:['BLOCK', 'n', 'x_ptr']", "cuda_utils"]
    assert host_prebuild.start_launcher_build(src, "cuda", str(tmp_path)) is None  # claimed: once a cache
    compiled = types.SimpleNamespace(target=GPUTarget("cuda", 90, 32), tensordesc_meta=[])  # Triton 3.6's "none"
    assert not host_prebuild.prebuild(src, compiled, str(tmp_path)) and len(fake_nvidia_driver) == 2
    assert host_prebuild.start_launcher_build(src, "hip", str(tmp_path / "amd")) is None


def test_a_kernel_with_tensor_descriptors_builds_its_launcher_after_the_compile(tmp_path, fresh_process,
                                                                                fake_nvidia_driver):
    """A tensor descriptor's launcher code depends on how the compile lowered it (``tensordesc_meta``)."""
    src = types.SimpleNamespace(signature={"desc": "tensordesc<fp16[64, 64]>", "n": "i32"})
    assert host_prebuild.start_launcher_build(src, "cuda", str(tmp_path)) is None and not fake_nvidia_driver
    compiled = types.SimpleNamespace(target=GPUTarget("cuda", 90, 32), tensordesc_meta=[{"swizzle": 128}])
    assert host_prebuild.prebuild(src, compiled, str(tmp_path)) and len(fake_nvidia_driver) == 2


def _python_headers() -> bool:
    import sysconfig

    return (Path(sysconfig.get_paths()["include"]) / "Python.h").exists()


@pytest.fixture
def stub_libcuda(tmp_path, monkeypatch):
    """A CUDA driver library with no functions, for Triton's link of its host modules on a machine without one (the
    modules build, and cannot load)."""
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not _python_headers():
        pytest.skip("no C compiler or no Python headers: Triton cannot build host modules here")
    folder = tmp_path / "libcuda-stub"
    folder.mkdir()
    (folder / "stub.c").write_text("int kernelrules_stub(void) { return 0; }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(folder / "libcuda.so"), str(folder / "stub.c")], check=True)
    (folder / "libcuda.so.1").symlink_to("libcuda.so")
    monkeypatch.setenv("TRITON_LIBCUDA_PATH", str(folder))
    return folder


def test_the_launcher_built_before_the_compile_is_the_one_the_launch_loads(tmp_path, monkeypatch, fresh_process,
                                                                           stub_libcuda):
    """Triton's own launcher, made from the compiled kernel as a launching process makes it, finds the file the
    build beside the compile wrote, and builds nothing."""
    import triton.runtime.build as build
    from triton.backends.nvidia.driver import CudaLauncher

    cache = tmp_path / "cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    threads, kernels = [], []
    result = compile_job(_job(32), use_triton_cache=True, on_compiled=kernels.append,
                         on_source=lambda src, backend: threads.append(
                             host_prebuild.start_launcher_build(src, backend, str(cache))))
    assert result.ok, result.details
    [thread] = threads
    thread.join(120)
    [built] = list(cache.glob("*/__triton_launcher*"))
    loaded = []

    def build_again(*args, **kwargs):
        raise AssertionError("the launch built its launcher again")

    monkeypatch.setattr(build, "_build", build_again)
    monkeypatch.setattr(build, "_load_module_from_path",
                        lambda name, path: loaded.append(Path(path)) or types.SimpleNamespace(launch=None))
    CudaLauncher(kernels[0].src, kernels[0].metadata)
    assert loaded == [built]


def test_a_pool_worker_with_a_shared_cache_claims_the_launcher_before_answering(tmp_path, stub_libcuda):
    """The compile worker claims the launcher as its first compile into a shared Triton cache starts, so the claim is
    there when the answer comes, and the launcher once the worker is done."""
    shared = tmp_path / "shared"
    with CompilePool(max_workers=1, timeout=240, triton_cache_dir=str(shared)) as pool:
        [(_, result)] = list(pool.run([_job(32)]))
        assert result.ok, result.details
        assert len(list((shared / host_prebuild.CLAIM_DIR).glob("*"))) == 1
        [(_, again)] = list(pool.run([_job(64)]))  # the worker joined the build before this job
        assert again.ok, again.details
        assert len(list(shared.glob("*/__triton_launcher*"))) == 1


def test_the_launcher_a_benchmark_worker_builds_from_one_config_is_the_one_every_config_loads(tmp_path, monkeypatch,
                                                                                          stub_libcuda):
    """A benchmark worker builds its launcher from the space's first config as the problem starts
    (jit_warmup.start_launcher_builds, with no claim: it waits for its own build); the launch of another config
    finds it and builds nothing."""
    import triton.runtime.build as build
    from triton.backends.nvidia.driver import CudaLauncher

    from kernelrules.discover.kernelsource import load_kernel
    from kernelrules.tune.jit_warmup import start_launcher_builds

    cache = tmp_path / "cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    fn = load_kernel(str(MATMUL), "matmul_kernel").fn
    [thread] = start_launcher_builds(fn, [_job(32), CompileJob(str(MATMUL), "matmul_kernel", {}, target=("hip",
                                                                                                   "gfx942", 64))])
    thread.join(120)
    [built] = list(cache.glob("*/__triton_launcher*"))
    assert not (cache / host_prebuild.CLAIM_DIR).exists()  # the worker's own build claims nothing
    kernel = _compiled(64)
    loaded = []
    monkeypatch.setattr(build, "_build", lambda *a, **k: pytest.fail("the launch built its launcher again"))
    monkeypatch.setattr(build, "_load_module_from_path",
                        lambda name, path: loaded.append(Path(path)) or types.SimpleNamespace(launch=None))
    CudaLauncher(kernel.src, kernel.metadata)
    assert loaded == [built]
