"""Triton's host modules (its CUDA helper and launchers, built with the C compiler) kept between tune studies."""

from __future__ import annotations

from pathlib import Path

from kernelrules.tune import host_modules
from kernelrules.tune.host_modules import share_host_modules
from kernelrules.tune.worker import WorkerSettings

SUFFIX = ".cpython-312-x86_64-linux-gnu.so"


def triton_cache(root: Path) -> Path:
    """A Triton cache as a run leaves it: host modules beside kernel binaries and a file still being written."""
    files = {
        "aaa/cuda_utils" + SUFFIX: b"helper",
        "bbb/__triton_launcher" + SUFFIX: b"launcher",
        "ccc/kernel.cubin": b"binary",
        "ccc/kernel.json": b"{}",
        "ccc/__grp__kernel.json": b"{}",
        "ddd/__triton_launcher" + SUFFIX + ".tmp.pid_1_2": b"partial",
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_only_host_modules_are_copied_and_nothing_is_overwritten(tmp_path):
    source = triton_cache(tmp_path / "study")
    store = tmp_path / "store"
    assert sorted(host_modules.host_module_files(source)) == [("aaa", "cuda_utils" + SUFFIX),
                                                              ("bbb", "__triton_launcher" + SUFFIX)]
    assert host_modules.copy_host_modules(source, store) == 2
    assert sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file()) == [
        "aaa/cuda_utils" + SUFFIX, "bbb/__triton_launcher" + SUFFIX]
    (store / "aaa" / ("cuda_utils" + SUFFIX)).write_bytes(b"kept")
    assert host_modules.copy_host_modules(source, store) == 0  # present already: left as it is
    assert (store / "aaa" / ("cuda_utils" + SUFFIX)).read_bytes() == b"kept"
    assert host_modules.copy_host_modules(tmp_path / "missing", store) == 0


def test_a_worker_seeds_its_study_from_the_store_and_keeps_what_it_built(tmp_path):
    store = triton_cache(tmp_path / "store")
    study = tmp_path / "study" / "triton-cache"
    settings = WorkerSettings(spec=None, interpret=False, triton_cache_dir=str(study), host_module_store=str(store))
    assert share_host_modules(settings, into_study=True) == 2
    assert (study / "bbb" / ("__triton_launcher" + SUFFIX)).read_bytes() == b"launcher"
    (study / "eee").mkdir()
    (study / "eee" / ("__triton_launcher" + SUFFIX)).write_bytes(b"an edge shape's launcher")
    assert share_host_modules(settings, into_study=False) == 1
    assert (store / "eee" / ("__triton_launcher" + SUFFIX)).exists()
    interpreted = WorkerSettings(spec=None, interpret=True, triton_cache_dir=str(study), host_module_store=str(store))
    assert share_host_modules(interpreted, into_study=True) == 0  # the interpreter builds no host modules


def test_the_store_lives_under_the_kernelrules_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / "kr"))
    assert host_modules.store_for(None) == tmp_path / "kr" / host_modules.STORE_NAME
    assert host_modules.store_for(tmp_path / "mine") == tmp_path / "mine" / host_modules.STORE_NAME


def test_a_gpu_run_gives_its_workers_the_store_and_an_interpreted_one_does_not(tmp_path, monkeypatch):
    from tune_checks import settings_given_to_workers

    space = Path(__file__).parents[1] / "fixtures" / "tune" / "matmul_small.yaml"
    gpu, interpreted, _tuner = settings_given_to_workers(space, tmp_path, monkeypatch, "ampere")
    assert gpu.host_module_store == str(tmp_path / "cache" / host_modules.STORE_NAME)
    assert gpu.triton_cache_dir and interpreted.host_module_store is None
