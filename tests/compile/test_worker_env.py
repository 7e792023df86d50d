"""Compile workers get an allowlisted environment: what a cross-compile reads, no credentials."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernelrules.compile.worker_env import kept, worker_environment


def test_credentials_and_unknown_variables_stay_behind():
    environ = {"PATH": "bin-dirs", "HOME": "home-dir", "LC_ALL": "C", "TRITON_CACHE_DIR": "cache-dir", "PYTHONPATH": "py-dirs",
               "CUDA_HOME": "cuda-dir", "KERNELRULES_ARCH": "hopper", "AWS_SECRET_ACCESS_KEY": "s", "GITHUB_TOKEN": "t",
               "PGPASSWORD": "pw", "DATABASE_URL": "postgresql://u:pw@h/db", "TRITON_API_TOKEN": "t2",
               "KERNELRULES_DB_PASSWORD": "pw2", "MY_APP_SETTING": "x"}
    env = worker_environment(environ, TMPDIR="scratch-dir")
    assert env == {"PATH": "bin-dirs", "HOME": "home-dir", "LC_ALL": "C", "TRITON_CACHE_DIR": "cache-dir", "PYTHONPATH": "py-dirs",
                   "CUDA_HOME": "cuda-dir", "KERNELRULES_ARCH": "hopper", "TMPDIR": "scratch-dir"}
    assert not kept("aws_session_token") and kept("path")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads a process's environment from /proc")
def test_a_compile_worker_does_not_see_a_planted_secret(monkeypatch):
    from kernelrules.compile.pool import CompilePool

    monkeypatch.setenv("KR_TEST_SECRET_TOKEN", "planted-7f3a")
    monkeypatch.setenv("SOME_UNRELATED_VARIABLE", "planted-9c1b")
    with CompilePool(max_workers=1) as pool:
        worker = pool._spawn()
        proc = Path(f"/proc/{worker.proc.pid}")
        deadline = time.monotonic() + 30  # until the fork has exec'd: before that /proc shows the parent's environment
        while b"kernelrules.compile.pool" not in (proc / "cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        raw = (proc / "environ").read_bytes()
    seen = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    assert b"planted" not in raw and b"KR_TEST_SECRET_TOKEN" not in seen and b"SOME_UNRELATED_VARIABLE" not in seen
    assert seen[b"KERNELRULES_WORKER_SCRATCH"] and b"PATH" in seen
