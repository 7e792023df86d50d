"""The parent's Triton source hash reaches the compile workers, and changes no cache key."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import triton
from triton.runtime import cache as triton_cache

from kernelrules.compile import host_prebuild, triton_key
from kernelrules.compile.compilejob import CompileJob
from kernelrules.compile.pool import CompilePool

REPO = Path(__file__).resolve().parents[2]
SPEC = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 512, "N": 512, "K": 512, "stride_am": 512,
        "stride_ak": 1, "stride_bk": 512, "stride_bn": 1, "stride_cm": 512, "stride_cn": 1}
JOB = CompileJob(str(REPO / "examples" / "matmul.py"), "matmul_kernel", SPEC,
                 {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_SIZE_M": 8}, {"num_warps": 4, "num_stages": 2},
                 ("cuda", 90, 32))


def cache_entries(directory: Path) -> set[str]:
    """The hash-named directories a compile wrote into a Triton cache (not the host prebuild's claims)."""
    return {p.name for p in directory.iterdir() if p.is_dir() and p.name != host_prebuild.CLAIM_DIR}


def compile_into(directory: Path, shared, monkeypatch) -> set[str]:
    with monkeypatch.context() as patch:
        patch.setattr(triton_key.ParentTritonKey, "start", lambda self: None)  # no real computation
        patch.setattr(triton_key.ParentTritonKey, "value", property(lambda self: shared))  # what the parent sends
        with CompilePool(max_workers=1, cache=None) as pool:
            [(_, result)] = list(pool.run([JOB], cache=None, triton_cache_dir=str(directory)))
    assert result.ok, result.message
    return cache_entries(directory)


def test_the_parents_key_gives_the_same_cache_entries_and_a_foreign_key_is_used_only_for_its_own_triton(tmp_path,
                                                                                                       monkeypatch):
    real = (os.path.abspath(triton.__file__), triton_cache.triton_key())
    own = compile_into(tmp_path / "own", None, monkeypatch)  # the worker computes its own key
    sent = compile_into(tmp_path / "sent", real, monkeypatch)  # the parent's key
    assert own == sent  # the same cache entries: the JIT finds what the worker compiled
    planted = compile_into(tmp_path / "planted", (real[0], "not-the-key"), monkeypatch)
    assert planted != own  # the worker did use what it was sent (so the real key above was used too)
    elsewhere = compile_into(tmp_path / "elsewhere", ("/no/such/triton/__init__.py", "not-the-key"), monkeypatch)
    assert elsewhere == own  # a key for another Triton installation is ignored


def test_the_parent_computes_the_key_in_the_background_only_with_triton_imported(monkeypatch):
    assert "triton" in sys.modules
    parent = triton_key.ParentTritonKey()
    parent.start()
    deadline = time.monotonic() + 60
    while parent.value is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert parent.value == (os.path.abspath(triton.__file__), triton_cache.triton_key())
    monkeypatch.delitem(sys.modules, "triton")
    idle = triton_key.ParentTritonKey()
    idle.start()
    assert idle.value is None  # nothing computed without Triton
    monkeypatch.setitem(sys.modules, "triton", triton)
    reported = triton_key.ParentTritonKey()
    assert reported.adopt(("/site/triton/__init__.py", "abc"))
    reported.start()  # a worker restarted after the key came: nothing to compute again, no thread
    assert not reported.started and reported.value == ("/site/triton/__init__.py", "abc")


def test_a_pool_without_the_key_asks_its_first_worker_for_it_and_passes_it_on(tmp_path, monkeypatch):
    """A pool whose process does not compute the key (``tune``'s driver has not imported Triton when its compile
    workers start) asks its first worker to report it once ready: the callback gets it once, the pool sends it with
    later jobs, and the compile's cache entries are those the worker's own key gives."""
    real = (os.path.abspath(triton.__file__), triton_cache.triton_key())
    monkeypatch.setattr(triton_key.ParentTritonKey, "start", lambda self: None)  # as without Triton imported
    reported = []
    spawned = []
    with CompilePool(max_workers=2, cache=None) as pool:
        original = pool._spawn

        def spawn():
            spawned.append(pool._key_reporter)  # whether this worker is asked to report
            return original()

        monkeypatch.setattr(pool, "_spawn", spawn)
        pool.report_triton_key(reported.append)
        pool.start(2)
        [(_, result)] = list(pool.run([JOB], cache=None, triton_cache_dir=str(tmp_path / "shared")))
        deadline = time.monotonic() + 60
        while not reported and time.monotonic() < deadline:  # the report may come after the first job's answer
            list(pool.run([], cache=None))
            time.sleep(0.05)
        assert result.ok, result.message
        assert reported == [real] and pool.triton_key() == real
        assert spawned == [True, False]  # one worker hashes, not every one
    own = compile_into(tmp_path / "own", None, monkeypatch)
    assert cache_entries(tmp_path / "shared") == own
