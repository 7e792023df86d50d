"""A cached compile answers a job only where the Triton cache the job fills holds its binary."""

from __future__ import annotations

import base64

from kernelrules.compile.cache import ResultCache, binary_in
from kernelrules.compile.compilejob import CompileResult
from kernelrules.compile.pool import CompilePool

from test_triton_key import JOB, cache_entries


def test_a_result_is_in_a_triton_cache_when_the_folder_named_by_its_hash_is(tmp_path):
    digest = "ab" * 32
    folder = base64.b32encode(bytes.fromhex(digest)).decode().rstrip("=")
    result = CompileResult(ok=True, metadata={"hash": digest})
    assert not binary_in(result, str(tmp_path))
    (tmp_path / folder).mkdir()
    assert binary_in(result, str(tmp_path))
    assert binary_in(CompileResult.failure("compile_error", "no binary"), str(tmp_path / "none"))  # nothing to launch
    assert binary_in(CompileResult(ok=True, metadata={}), str(tmp_path / "none"))  # no hash to check by
    assert binary_in(CompileResult(ok=True, metadata={"hash": "not hex"}), str(tmp_path / "none"))


def test_a_cached_compile_for_another_triton_cache_compiles_again_into_this_one(tmp_path):
    """The facts of a compile into one study's Triton cache do not answer a job for another's: the benchmark worker
    launching from the second would compile the config itself while the GPU waits."""
    cache = ResultCache(str(tmp_path / "kr"))
    first, second = tmp_path / "first", tmp_path / "second"
    with CompilePool(max_workers=1, cache=cache) as pool:
        [(_, compiled)] = list(pool.run([JOB], triton_cache_dir=str(first)))
        [(_, again)] = list(pool.run([JOB], triton_cache_dir=str(second)))
        [(_, cached)] = list(pool.run([JOB], triton_cache_dir=str(second)))
    assert compiled.ok and not compiled.from_cache
    assert again.ok and not again.from_cache  # compiled again, into the second cache
    assert cache_entries(second) == cache_entries(first) and binary_in(again, str(second))
    assert cached.from_cache  # its binary is there now: the cache answers
