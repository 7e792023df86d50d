"""Compiling jobs in process (compile_job) and in the worker pool (timeouts, crashes)."""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from kernelrules.compile.compilejob import CompileJob, CompileResult, compile_job
from kernelrules.compile.feed import JobFeed
from kernelrules.compile.pool import CompilePool

triton = pytest.importorskip("triton")

TRITON = tuple(int(p) for p in triton.__version__.split(".")[:2])
#: Triton 3.4's CUDA backend aborts the process (no Python error) for num_ctas > 1 before sm_90.
CHECKS_NUM_CTAS = TRITON >= (3, 5)
needs_constexpr_function = pytest.mark.skipif(
    not hasattr(triton, "constexpr_function"), reason="triton.constexpr_function is new in Triton 3.5"
)

REPO = Path(__file__).resolve().parents[2]
MATMUL = str(REPO / "examples" / "matmul.py")
DOT_LINE = Path(MATMUL).read_text().splitlines().index("        acc = tl.dot(a, b, acc)") + 1

SPEC = {
    "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
    "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1,
}

TRICKS = '''\
import triton
import triton.language as tl


@triton.constexpr_function
def misbehave(mode, path):
    import os, signal, subprocess, time
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        child = subprocess.Popen(["sleep", "300"])
        with open(path, "w") as f:
            f.write(str(child.pid))
        time.sleep(300)
    return 1


@triton.jit
def bad_helper(x):
    return tl.arange(0, 3) + x


@triton.jit
def tricks(x_ptr, MODE: tl.constexpr, PATH: tl.constexpr):
    if MODE == "helper":
        tl.store(x_ptr + tl.arange(0, 4), bad_helper(1))
    else:
        tl.store(x_ptr, misbehave(MODE, PATH))
'''



@pytest.fixture(autouse=True)
def _private_triton_cache(tmp_path, monkeypatch):
    """In-process compiles write Triton's cache under the test's temporary directory; the tricks kernel's
    constexpr_function (user code: docs/security.md) is allowed to run, in this process and its workers."""
    from kernelrules.discover.consent import ALLOW_CODE_ENV

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv(ALLOW_CODE_ENV, "1")


def matmul_job(bm=32, bn=32, bk=32, warps=4, stages=2, arch=80, timeout=None, spec=None, **options):
    """A job for the example matmul."""
    return CompileJob(
        MATMUL, "matmul_kernel", dict(spec or SPEC), {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8},
        {"num_warps": warps, "num_stages": stages, **options}, ("cuda", arch, 32), timeout=timeout,
    )


@pytest.fixture(scope="module")
def tricks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tricks") / "tricks.py"
    path.write_text(TRICKS)
    return str(path)


def tricks_job(path, mode, pid_file="", timeout=None):
    return CompileJob(path, "tricks", {"x_ptr": "*fp32"}, {"MODE": mode, "PATH": pid_file}, {}, ("cuda", 80, 32),
                      timeout=timeout)


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (Linux /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


@pytest.fixture
def pool():
    """A two-worker pool that records every worker it starts (for the process-group checks)."""
    with CompilePool(max_workers=2, timeout=120) as p:
        p.started = []
        spawn = p._spawn

        def recording_spawn():
            worker = spawn()
            p.started.append(worker.proc.pid)
            return worker

        p._spawn = recording_spawn
        yield p


# --------------------------------------------------------------------------- compile_job


def test_compile_job_ok_has_artifacts_and_metadata():
    result = compile_job(matmul_job(64, 64, 32, stages=3))
    assert result.ok and result.error_kind is None, result.details
    assert {"ttir", "ttgir", "llir", "ptx"} <= set(result.asm)
    assert all(isinstance(result.asm[k], str) for k in ("ttir", "ttgir", "llir", "ptx"))
    assert isinstance(result.asm["cubin"], bytes) and result.asm["cubin"][:4] == b"\x7fELF"
    from triton import knobs

    if hasattr(knobs.nvidia, "dump_ptxas_log"):  # Triton >= 3.5
        assert "Used" in result.asm["ptxas_log"]  # ptxas -v: registers and spills
    meta = result.metadata
    assert meta["shared"] == 16384  # (num_stages - 1) buffers on sm_80: 2 * (64*32 + 32*64) * 2
    assert (meta["num_warps"], meta["num_stages"], meta["num_ctas"]) == (4, 3, 1)
    assert meta["target"] == {"backend": "cuda", "arch": 80, "warp_size": 32}
    assert meta["name"] == "matmul_kernel"
    assert result.specialization["attrs"]["a_ptr"] == [["tt.divisibility", 16]]
    assert result.compile_seconds > 0 and not result.from_cache


def test_compile_error_has_message_and_source_line():
    result = compile_job(matmul_job(bk=8))
    assert result.error_kind == "compile_error"
    assert "K >= 16" in result.message and "\n" not in result.message
    assert "acc = tl.dot(a, b, acc)" in result.details
    assert (result.error_path, result.error_line) == (MATMUL, DOT_LINE)


@needs_constexpr_function
def test_compile_error_in_a_helper_points_into_the_helper(tricks_file):
    result = compile_job(tricks_job(tricks_file, "helper"))
    assert result.error_kind == "compile_error"
    assert "power of 2" in result.message
    helper_line = TRICKS.splitlines().index("    return tl.arange(0, 3) + x") + 1
    assert (result.error_path, result.error_line) == (tricks_file, helper_line)


@pytest.mark.parametrize(
    ("job", "kind", "text"),
    [
        (matmul_job(spec={**SPEC, "bogus": 3}), "spec_error", "unknown argument 'bogus'"),
        (matmul_job(spec={k: v for k, v in SPEC.items() if k != "K"}), "spec_error", "missing value for argument 'K'"),
        (CompileJob(MATMUL, "nope", SPEC), "spec_error", "no @triton.jit function named 'nope'"),
        (matmul_job(warps=6), "compile_error", "num_warps must be a power of 2"),
        (matmul_job(waves_per_eu=2), "compile_error", "waves_per_eu was specified but unrecognised"),
        pytest.param(matmul_job(num_ctas=2, arch=89), "compile_error", "num_ctas > 1 requires",
                     marks=pytest.mark.skipif(not CHECKS_NUM_CTAS, reason="aborts the process in Triton 3.4")),
        (matmul_job(256, 256, 64, warps=16, stages=3, arch=90), "ptxas_error", "Insufficient registers"),
    ],
)
def test_classified_failures(job, kind, text):
    result = compile_job(job)
    assert (result.ok, result.error_kind) == (False, kind)
    assert text in result.message


def test_syntax_error_is_a_located_compile_error(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import triton\n\n@triton.jit\ndef k(x_ptr:\n    pass\n")
    result = compile_job(CompileJob(str(path), "k", {"x_ptr": "*fp32"}))
    assert result.error_kind == "compile_error" and "syntax error" in result.message
    assert (result.error_path, result.error_line) == (str(path), 4)


def test_prepare_failure_classifies_an_unusable_kernel_or_spec():
    from kernelrules.compile.compilejob import prepare_failure
    from kernelrules.errors import KernelSyntaxError, SignatureSpecError

    syntax = prepare_failure(KernelSyntaxError("syntax error: ')' expected", path="k.py", line=4))
    assert (syntax.error_kind, syntax.error_path, syntax.error_line) == ("compile_error", "k.py", 4)
    spec = prepare_failure(SignatureSpecError("x_ptr: unknown type '*fp99'"))
    assert spec.error_kind == "spec_error" and "unknown type" in spec.message and not spec.ok


def test_jobs_are_hashable_values():
    assert matmul_job() == matmul_job() and hash(matmul_job()) == hash(matmul_job())
    assert len({matmul_job(), matmul_job(), matmul_job(bk=64)}) == 2


def test_results_pickle():
    import pickle

    result = CompileResult.failure("compile_error", "boom\nmore", error_line=3)
    assert pickle.loads(pickle.dumps(result)) == result
    assert result.message == "boom" and result.details == "boom\nmore"


# --------------------------------------------------------------------------- pool


def test_pool_runs_jobs_and_reports_progress(pool):
    jobs = [matmul_job(), matmul_job(bk=8), matmul_job(spec={**SPEC, "x": 1}), matmul_job(64, 32, 32, arch=90)]
    seen = []
    results = list(pool.run(jobs, progress=lambda done, total, job, result: seen.append((done, total))))
    assert sorted(id(job) for job, _ in results) == sorted(id(job) for job in jobs)
    kinds = {id(job): result.error_kind for job, result in results}
    assert [kinds[id(job)] for job in jobs] == [None, "compile_error", "spec_error", None]
    assert seen == [(i, 4) for i in range(1, 5)]
    shared = {job.target[1]: r.metadata["shared"] for job, r in results if r.ok}
    assert shared[90] > 0 and shared[80] > 0


def test_pool_timeout_kills_the_whole_group_and_recovers(pool):
    slow = matmul_job(256, 256, 64, warps=4, stages=3, arch=90, timeout=0.5)
    started = time.monotonic()
    [(job, result)] = list(pool.run([slow]))
    assert result.error_kind == "timeout" and "longer than 0.5 s" in result.message
    assert time.monotonic() - started < 60
    assert pool.started and all(group_members(pid) == [] for pid in pool.started)
    # the pool keeps working with a fresh worker
    [(_, again)] = list(pool.run([matmul_job()]))
    assert again.ok, again.details


def test_a_pool_that_remembers_timeouts_does_not_spend_the_limit_twice(tmp_path):
    """A lint's pool answers a job that already timed out in this run with that timeout (the guess search's
    probe of a first config, then the judging of it); the disk cache still never stores a timeout, and
    another limit is another job."""
    from kernelrules.compile.cache import ResultCache

    cache = ResultCache(tmp_path / "cache")
    slow = matmul_job(256, 256, 64, warps=4, stages=3, arch=90, timeout=0.5)
    with CompilePool(max_workers=1, timeout=30, cache=cache, remember_timeouts=True) as pool:
        [(_, first)] = list(pool.run([slow]))
        assert first.error_kind == "timeout"
        spawned = []
        real_spawn = pool._spawn
        pool._spawn = lambda: spawned.append(1) or real_spawn()  # the timeout retired the worker
        started = time.monotonic()
        [(_, again)] = list(pool.run([slow]))
        assert again is first and spawned == [] and time.monotonic() - started < 0.5
        [(_, longer)] = list(pool.run([matmul_job(256, 256, 64, warps=4, stages=3, arch=90, timeout=0.6)]))
        assert longer is not first and spawned == [1]
    stored = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert stored == [] or (longer.ok and len(stored) == 1)  # no timeout on disk
    with CompilePool(max_workers=1, timeout=30, cache=cache) as plain:  # not remembered across pools
        [(_, fresh)] = list(plain.run([slow]))
        assert fresh.error_kind == "timeout" and fresh is not first


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@needs_constexpr_function
def test_pool_timeout_kills_children_of_the_compile(pool, tricks_file, tmp_path):
    pid_file = tmp_path / "child.pid"
    [(_, result)] = list(pool.run([tricks_job(tricks_file, "hang", str(pid_file), timeout=3)]))
    assert result.error_kind == "timeout"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


@needs_constexpr_function
def test_pool_worker_crash_is_internal_and_pool_recovers(pool, tricks_file):
    jobs = [tricks_job(tricks_file, "crash"), matmul_job()]
    results = {id(job): result for job, result in pool.run(jobs)}
    crashed = results[id(jobs[0])]
    assert crashed.error_kind == "internal" and "killed by signal 9" in crashed.message
    assert results[id(jobs[1])].ok


def test_pool_close_leaves_no_processes(tricks_file):
    with CompilePool(max_workers=1) as pool:
        list(pool.run([matmul_job()]))
        pids = [w.proc.pid for w in pool._workers]
    assert pids and all(group_members(pid) == [] for pid in pids)


def test_workers_use_a_private_cold_triton_cache(pool):
    [(_, first)] = list(pool.run([matmul_job(64, 64, 32)]))
    [(_, second)] = list(pool.run([matmul_job(64, 64, 32)]))
    assert first.ok and second.ok and not second.from_cache
    assert os.environ.get("TRITON_CACHE_DIR") is None or "kernelrules-worker" not in os.environ["TRITON_CACHE_DIR"]
    assert textwrap.dedent(second.asm["ptx"]) == first.asm["ptx"]


def test_workers_that_cannot_start_give_internal_results(tmp_path, monkeypatch):
    broken = tmp_path / "broken" / "triton"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this triton is broken on purpose')\n")
    monkeypatch.setenv("PYTHONPATH", str(broken.parent))
    with CompilePool(max_workers=1, timeout=30) as pool:
        results = [r for _, r in pool.run([matmul_job(), matmul_job(bk=64)])]
    assert [r.error_kind for r in results] == ["internal", "internal"]
    assert "fail to start" in results[0].message and "broken on purpose" in results[0].details


# --------------------------------------------------------------------------- a pool fed while it runs


def collect(pool: CompilePool, feed: JobFeed) -> tuple[threading.Thread, list]:
    """Run the pool over ``feed`` in a thread; the answers land in the list as ``(seconds, job, result)``."""
    answers: list = []
    start = time.monotonic()

    def serve() -> None:
        for job, result in pool.run(feed):
            answers.append((time.monotonic() - start, job, result))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread, answers


def wait_for(condition, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@needs_constexpr_function
def test_jobs_put_while_a_slow_compile_runs_are_answered_before_it_ends_and_abandoning_kills_it(tricks_file,
                                                                                              tmp_path):
    """The tune loop's case: one config sits in ptxas (here a compile that hangs) while others are asked for;
    each of those starts on the free worker as it comes and is answered when it is compiled, not after the
    slow one. Abandoning the feed ends the run at once and kills the hanging compile's whole group."""
    pid_file = tmp_path / "child.pid"
    slow = tricks_job(tricks_file, "hang", str(pid_file), timeout=300)
    fast = [matmul_job(32, 32, 32), matmul_job(64, 32, 32)]
    with CompilePool(max_workers=2, timeout=300) as pool:
        feed = JobFeed()
        thread, answers = collect(pool, feed)
        feed.put(slow)
        wait_for(lambda: pid_file.exists() and pid_file.read_text())
        hanging = next(w for w in pool._workers if w.job is not None).proc.pid
        for job in fast:  # one at a time, each after the previous answer
            feed.put(job)
            wait_for(lambda: any(a[1] is job for a in answers))
        assert [a[1] for a in answers] == fast and all(a[2].ok for a in answers)
        feed.close(abandon=True)
        thread.join(30)
        assert not thread.is_alive() and len(answers) == 2
        wait_for(lambda: group_members(hanging) == [] and not alive(int(pid_file.read_text())), 10)


def test_a_closed_feed_ends_the_run_once_every_job_taken_is_answered():
    with CompilePool(max_workers=2, timeout=120) as pool:
        feed = JobFeed()
        jobs = [matmul_job(32, 32, 32), matmul_job(bk=8)]
        for job in jobs:
            feed.put(job)
        feed.close()
        answers = list(pool.run(feed))
    assert sorted(id(job) for job, _ in answers) == sorted(id(job) for job in jobs)
    assert {id(job): r.error_kind for job, r in answers} == {id(jobs[0]): None, id(jobs[1]): "compile_error"}
