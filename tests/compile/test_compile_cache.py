"""The on-disk result cache: keys, hits, corrupt entries, concurrent writers."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelrules.compile.cache import ResultCache, cache_key, default_cache_dir
from kernelrules.compile.compilejob import CompileJob, CompileResult
from kernelrules.compile.pool import CompilePool

REPO = Path(__file__).resolve().parents[2]
MATMUL = str(REPO / "examples" / "matmul.py")
SPEC = {
    "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
    "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1,
}
CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_SIZE_M": 8}


def job(**changes) -> CompileJob:
    """A small matmul job, with fields replaced by ``changes``."""
    fields = {"path": MATMUL, "kernel": "matmul_kernel", "signature": SPEC, "constexprs": CONFIG,
              "options": {"num_warps": 4, "num_stages": 2}, "target": ("cuda", 80, 32)}
    fields.update(changes)
    return CompileJob(**fields)


def sample_result(tag: str = "x", size: int = 200_000) -> CompileResult:
    """A successful result with text and binary artifacts (no compile needed)."""
    text = (tag * size)[:size]
    return CompileResult(
        ok=True, asm={"ttir": text, "ptx": text[::-1], "cubin": bytes(range(256)) * 64},
        metadata={"shared": 16384, "num_warps": 4, "target": {"backend": "cuda", "arch": 80, "warp_size": 32}},
        compile_seconds=1.25,
    )


def test_round_trip_and_lazy_artifacts(tmp_path):
    cache = ResultCache(tmp_path)
    original = sample_result()
    assert cache.get("ab" * 32) is None
    assert cache.put("ab" * 32, original)
    hit = cache.get("ab" * 32)
    assert hit is not None and hit.from_cache and not original.from_cache
    assert dict(hit.asm.items()) == original.asm
    assert (hit.ok, hit.metadata, hit.compile_seconds) == (True, original.metadata, 1.25)
    assert cache.path("ab" * 32).parent.parent == tmp_path / "v1"
    assert not [p for p in cache.path("ab" * 32).parent.iterdir() if p.suffix == ".tmp"]


def test_hit_costs_under_five_milliseconds(tmp_path):
    cache = ResultCache(tmp_path)
    cache.put("cd" * 32, sample_result(size=1_000_000))
    times = []
    for _ in range(30):
        start = time.perf_counter()
        assert cache.get("cd" * 32) is not None
        times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.005


def test_failures_are_cached_but_not_timeouts_or_crashes(tmp_path):
    cache = ResultCache(tmp_path)
    assert cache.put("01" * 32, CompileResult.failure("compile_error", "K >= 16", error_line=73))
    assert cache.get("01" * 32).error_line == 73
    assert not cache.put("02" * 32, CompileResult.failure("timeout", "slow"))
    assert not cache.put("03" * 32, CompileResult.failure("internal", "crash"))
    assert cache.get("02" * 32) is None and cache.get("03" * 32) is None


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "header"])
def test_corrupt_entries_are_misses(tmp_path, damage):
    cache = ResultCache(tmp_path)
    cache.put("ef" * 32, sample_result())
    path = cache.path("ef" * 32)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[-100] ^= 0xFF
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    elif damage == "empty":
        data = bytearray()
    else:
        data[10:30] = b"not json at all!!!!!"
    path.write_bytes(bytes(data))
    assert cache.get("ef" * 32) is None
    assert cache.put("ef" * 32, sample_result())  # overwritten
    assert cache.get("ef" * 32) is not None


def test_key_covers_every_input():
    base = cache_key(job(), "h1", {"attrs": {"a_ptr": [["tt.divisibility", 16]]}})
    assert base == cache_key(job(signature=dict(reversed(list(SPEC.items())))), "h1",
                             {"attrs": {"a_ptr": [["tt.divisibility", 16]]}})
    others = [
        cache_key(job(), "h2", {"attrs": {"a_ptr": [["tt.divisibility", 16]]}}),
        cache_key(job(), "h1", {"attrs": {}}),
        cache_key(job(signature={**SPEC, "M": 4095}), "h1", {"attrs": {"a_ptr": [["tt.divisibility", 16]]}}),
        cache_key(job(constexprs={**CONFIG, "BLOCK_K": 64}), "h1", {"attrs": {"a_ptr": [["tt.divisibility", 16]]}}),
        cache_key(job(options={"num_warps": 8, "num_stages": 2}), "h1", {"attrs": {"a_ptr": [["tt.divisibility", 16]]}}),
        cache_key(job(target=("cuda", 90, 32)), "h1", {"attrs": {"a_ptr": [["tt.divisibility", 16]]}}),
        cache_key(job(path="/elsewhere/matmul.py"), "h1", {"attrs": {"a_ptr": [["tt.divisibility", 16]]}}),
    ]
    assert len({base, *others}) == len(others) + 1


def test_an_entry_with_facts_is_keyed_by_the_code_that_extracts_them(monkeypatch):
    import kernelrules.compile.cache as cache

    assert len(cache.facts_version()) == 16
    with_facts, bare = cache_key(job(analyze=True), "h1"), cache_key(job(), "h1")
    monkeypatch.setattr(cache, "_FACTS_VERSION", "an-older-extract")  # an upgraded or edited analyzers package
    assert cache_key(job(analyze=True), "h1") != with_facts  # never the facts an older extraction stored
    assert cache_key(job(), "h1") == bare  # a bare compile's entry holds no facts: still shared


def test_default_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / "kc"))
    assert default_cache_dir() == tmp_path / "kc"
    assert ResultCache().directory == tmp_path / "kc"
    monkeypatch.delenv("KERNELRULES_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert default_cache_dir() == tmp_path / "xdg" / "kernelrules"


WRITER = """
import sys
from kernelrules.compile.cache import ResultCache
from kernelrules.compile.compilejob import CompileResult
cache = ResultCache(sys.argv[1])
for i in range(int(sys.argv[3])):
    tag = sys.argv[2]
    cache.put("77" * 32, CompileResult(ok=True, asm={"ptx": tag * 300_000, "cubin": tag.encode() * 1000},
                                       metadata={"writer": tag}))
"""


def test_concurrent_writers_and_readers(tmp_path):
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), tag, "150"]) for tag in ("a", "b")
    ]
    cache = ResultCache(tmp_path)
    seen = set()
    while any(w.poll() is None for w in writers):
        hit = cache.get("77" * 32)
        if hit is not None:  # every entry a reader sees is whole and self-consistent
            tag = hit.metadata["writer"]
            assert hit.asm["ptx"] == tag * 300_000 and hit.asm["cubin"] == tag.encode() * 1000
            seen.add(tag)
    assert [w.wait() for w in writers] == [0, 0]
    assert seen  # the reader raced the writers
    final = cache.get("77" * 32)
    assert final is not None and final.metadata["writer"] in ("a", "b")
    assert not [p for p in cache.path("77" * 32).parent.iterdir() if p.name.endswith(".tmp")]


def test_pool_uses_the_cache_and_recomputes_corrupt_entries(tmp_path):
    pytest.importorskip("triton")
    cache = ResultCache(tmp_path)
    jobs = [job(), job(constexprs={**CONFIG, "BLOCK_K": 8})]
    with CompilePool(max_workers=2, cache=cache) as pool:
        first = [r for _, r in sorted(pool.run(jobs), key=lambda jr: jobs.index(jr[0]))]
        assert [r.error_kind for r in first] == [None, "compile_error"]
        assert not any(r.from_cache for r in first)

        start = time.perf_counter()
        second = [r for _, r in sorted(pool.run(jobs), key=lambda jr: jobs.index(jr[0]))]
        assert time.perf_counter() - start < 1.0
        assert all(r.from_cache for r in second)
        assert second[0].asm["ptx"] == first[0].asm["ptx"] and second[0].asm["cubin"] == first[0].asm["cubin"]
        assert second[1].error_line == first[1].error_line

        entries = sorted(tmp_path.glob("v1/*/*.krc"))
        assert len(entries) == 2
        for entry in entries:
            entry.write_bytes(entry.read_bytes()[:100])
        third = [r for _, r in sorted(pool.run(jobs), key=lambda jr: jobs.index(jr[0]))]
        assert not any(r.from_cache for r in third) and third[0].ok
    assert all(ResultCache(tmp_path).get(p.stem) is not None for p in entries)  # rewritten whole
