"""The compile worker process: ``python -m kernelrules.compile.pool`` (see :mod:`kernelrules.compile.pool`).

A worker reads length-prefixed pickles of ``(job_id, CompileJob, triton_cache_dir, views)`` from
its stdin and answers ``(job_id, CompileResult)`` on its original stdout, after one
``(READY, pid)`` once Triton is imported. It moves its own stdout and stderr aside at start
so that nothing Triton, LLVM or ptxas prints can corrupt that channel; what a failing
compile printed is returned in :attr:`CompileResult.log`. Each job compiles with the
private Triton cache emptied after it, or the shared one it was sent with. When the
pool's process is gone the worker removes its scratch directory and kills its process
group (ptxas included).

``views`` (:func:`job_views`) are what the worker reads of a large kernel file instead of the
whole file (:mod:`kernelrules.discover.kernelview`): the pool's process has parsed the file
already, and each worker would take seconds to parse it again.

The parent side (starting, feeding and timing workers) is :class:`kernelrules.compile.pool.CompilePool`;
the framing below is shared by both.
"""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import signal
import struct
import sys
import tempfile
from typing import Any

from ..discover.pysource import use_views
from .compilejob import CompileJob, CompileResult
from .triton_key import REPORT_ENV, own_key
from .triton_key import install as install_triton_key
from .workers import watch_parent

#: The length prefix of every message.
HEADER = struct.Struct(">I")
#: The tag of a worker's first message, ``(READY, pid)``: Triton is imported, send jobs.
READY = "ready"
#: The tag of ``(TRITON_KEY, (triton path, key))``, sent after READY by a worker started with ``REPORT_ENV`` set.
TRITON_KEY = "triton_key"


# --------------------------------------------------------------------------- framing


def frame(obj: object) -> bytes:
    """A length-prefixed pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def _read_exact(fd: int, size: int) -> bytes | None:
    """Exactly ``size`` bytes from a blocking fd, or None at end of file."""
    chunks = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to a blocking fd."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# --------------------------------------------------------------------------- views


#: The last views made, by (real path, kernel, modification time, size) of the kernel's file.
_VIEWS: dict[tuple[str, str, int, int], tuple] = {}


def job_views(job: CompileJob) -> tuple:
    """The :class:`kernelrules.discover.kernelview.FileView` s to send with ``job`` (none for a small file,
    or when anything goes wrong making one: the worker then reads the whole file, as it would anyway)."""
    from ..discover.kernelview import kernel_view
    from ..errors import KernelrulesError

    try:
        path = os.path.realpath(job.path)
        stat = os.stat(path)
        key = (path, job.kernel, stat.st_mtime_ns, stat.st_size)
        if key not in _VIEWS:
            view = kernel_view(path, job.kernel)
            if len(_VIEWS) >= 64:
                _VIEWS.clear()
            _VIEWS[key] = (view,) if view is not None else ()
        return _VIEWS[key]
    except (KernelrulesError, OSError, ValueError, RecursionError, MemoryError):
        return ()


# --------------------------------------------------------------------------- worker side


def _clear_directory(path: str) -> None:
    """Remove everything inside ``path`` (the worker's private Triton cache and temp files)."""
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def _run_captured(job: CompileJob, capture_fd: int, use_triton_cache: bool,
                  on_compiled: Any = None, on_source: Any = None) -> CompileResult:
    """Compile one job with fd 2 (C++/LLVM diagnostics) going to ``capture_fd``."""
    from .compilejob import compile_job

    os.ftruncate(capture_fd, 0)
    os.lseek(capture_fd, 0, os.SEEK_SET)
    result = compile_job(job, use_triton_cache=use_triton_cache, on_compiled=on_compiled, on_source=on_source)
    if not result.ok:
        os.lseek(capture_fd, 0, os.SEEK_SET)
        native = os.read(capture_fd, 1 << 20).decode("utf-8", "replace")
        if native.strip():
            result.log = (result.log + "\n" + native).strip()[-20000:]
    return result


def _launcher_builder(cache_dir: str, threads: list) -> Any:
    """The ``on_source`` of a compile into a shared cache: the launcher's build starts beside the compile
    (:func:`kernelrules.compile.host_prebuild.start_launcher_build`); its thread goes into ``threads``."""
    from .host_prebuild import start_launcher_build

    def start(source: Any, backend: str) -> None:
        try:
            thread = start_launcher_build(source, backend, cache_dir)
        except Exception:  # noqa: BLE001 - best effort: the launch builds what is missing
            thread = None
        if thread is not None:
            threads.append(thread)

    return start


def _prebuild_host_modules(kernel: Any, cache_dir: str) -> None:
    """Triton's CUDA helper and this kernel's launcher, built into the shared cache for the launching process
    (:mod:`kernelrules.compile.host_prebuild`); never an error of the worker's."""
    from .host_prebuild import prebuild

    try:
        prebuild(getattr(kernel, "src", None), getattr(kernel, "metadata", None), cache_dir)
    except Exception:  # noqa: BLE001 - best effort: the launch builds what is missing
        pass


def _warm_up() -> None:
    """Pay one-time costs before saying ready: libtriton, and the specializer's set-up (without
    torch's import: :func:`kernelrules.compile.specialize.init_specializer_without_torch`)."""
    import triton.compiler  # noqa: F401 - loads libtriton

    from .specialize import init_specializer_without_torch

    init_specializer_without_torch()


#: How much lower than its parent's a worker's CPU priority is (``nice``; ptxas inherits it).
WORKER_NICENESS = 10


def _lower_priority() -> None:
    """Step back for the process that starts the pool: a compile can wait, a timing cannot.

    ``kernelrules tune`` and ``kernelrules.autotune`` time kernels while their workers compile
    ahead on every core; a microsecond kernel's timing includes any moment its launching process
    waits for a CPU (on the H200 suite a 10.4 us split-K GEMM once timed 30 us during a tune whose
    16 workers compiled on the machine's 16 cores). A lint's main process, which feeds the
    workers, gets the CPU first too. Neither effect was measurable so far: five live runs A/B on the H200
    (benchmarks/results/suite/ab-nice-0bf84e6) and a cold fla-core lint on 2 cores (858 s against 848 s)."""
    try:
        os.nice(WORKER_NICENESS)
    except (AttributeError, OSError):  # no nice on this platform, or not allowed: run as is
        pass


def main() -> None:
    """Serve compile requests from stdin until it closes; answer on the original stdout."""
    import warnings

    warnings.simplefilter("ignore")
    scratch = os.environ["KERNELRULES_WORKER_SCRATCH"]  # also TMPDIR, and the private Triton cache
    # First, as the parent may die while Triton imports. A killed ``kernelrules lint`` must not leave its
    # workers compiling: a worker reads its next job (and sees the closed pipe) only after the current compile.
    watch_parent(functools.partial(_abandon, scratch), period=0.5)
    _lower_priority()
    requests = sys.stdin.buffer.fileno()
    answers = os.dup(1)
    capture = tempfile.TemporaryFile()
    os.dup2(capture.fileno(), 1)  # stray prints from Triton, LLVM or ptxas go here
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the worker
    _warm_up()  # an import error goes to stderr, which the parent keeps for its report
    os.dup2(capture.fileno(), 2)
    sys.stderr = sys.stdout

    try:
        write_all(answers, frame((READY, os.getpid())))
        if os.environ.get(REPORT_ENV) == "1":  # the pool has no key yet: computed now, before the first job
            shared = own_key()
            if shared is not None:
                write_all(answers, frame((TRITON_KEY, shared)))
    except OSError:  # the pool is gone already
        shutil.rmtree(scratch, ignore_errors=True)
        return
    while True:
        header = _read_exact(requests, HEADER.size)
        payload = None if header is None else _read_exact(requests, HEADER.unpack(header)[0])
        if payload is None:  # the pool closed our stdin, or its process is gone
            shutil.rmtree(scratch, ignore_errors=True)
            return
        job_id, job, shared_cache, views, *rest = pickle.loads(payload)
        use_views(views)  # read the kernel's large file as the part the kernel needs
        if rest:
            install_triton_key(rest[0])  # the parent's Triton source hash (kernelrules.compile.triton_key)
        # Triton reads TRITON_CACHE_DIR at every compile: a shared cache is used as is,
        # the private one is bypassed (always_compile) and emptied after the job.
        os.environ["TRITON_CACHE_DIR"] = shared_cache or scratch
        compiled: list = []  # with a shared cache (a launching process reads it): the kernel, for its host modules
        building: list = []  # the launcher's build started beside the compile, if this job started it
        try:
            result = _run_captured(job, capture.fileno(), use_triton_cache=bool(shared_cache),
                                   on_compiled=compiled.append if shared_cache else None,
                                   on_source=_launcher_builder(shared_cache, building) if shared_cache else None)
        except BaseException as exc:  # noqa: BLE001 - report, then keep serving
            result = CompileResult.failure("internal", f"worker: {type(exc).__name__}: {exc}")
        try:
            write_all(answers, frame((job_id, result)))
        except OSError:  # the pool is gone: nobody reads the answer
            shutil.rmtree(scratch, ignore_errors=True)
            return
        for thread in building:  # after the answer; before the scratch (its temporary files) or the cache changes
            thread.join()
        if compiled:  # after the answer: the verdict does not wait for a C compile
            _prebuild_host_modules(compiled[0], shared_cache)
        _clear_directory(scratch)


def _abandon(scratch: str) -> None:
    """The pool's process is gone: remove the scratch directory and SIGKILL this worker's group, ptxas included."""
    shutil.rmtree(scratch, ignore_errors=True)
    os.killpg(os.getpgrp(), signal.SIGKILL)
